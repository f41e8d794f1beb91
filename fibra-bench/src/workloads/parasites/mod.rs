//! The `parasites` group: the parasitic-threads paper's workloads (ACML on
//! MultiMLton). Short computations that rarely block, where starting them
//! as parasites (`fibra::spawn_eager`: first poll inline, a task only if
//! they block) should cost about a function call, against starting them as
//! tasks (`fibra::spawn`) and against the peers' goroutines and tokio tasks.
//!
//! * [`spawn_cost`]: short non-blocking computations spawned and joined;
//! * [`async_send`]: a synchronous send against an asynchronous one (a
//!   send carried by a task, by a parasite, `Sender::send_async`);
//! * [`choose_all`]: a consumer waiting for one message from each of N
//!   producers, round after round;
//! * [`inflation`]: long loops that yield, spread over the workers;
//! * [`par_fib`], [`par_tak`], [`mergesort`]: recursion with a task per
//!   call (per split), results sent back on channels or joined.
//!
//! Rows: `fibra`, `fibra-1`, `fibra-ct` start tasks with `fibra::spawn`;
//! `fibra-parasite` starts the same work with `fibra::spawn_eager` on the
//! `fibra` row's runtime; tokio (`tokio-ct`, `tokio-mt`), Go, and Erlang
//! where it is natural (par-fib, par-tak).

mod async_send;
mod choose_all;
mod inflation;
mod mergesort;
mod par_fib;
mod par_tak;
mod spawn_cost;
#[cfg(feature = "fibra-rt")]
mod start;

use crate::case::Case;
use crate::workloads::Config;

/// The group's name.
const GROUP: &str = "parasites";

/// The rows, in table order.
pub fn cases(config: &Config) -> Vec<Case> {
    [
        async_send::cases(config),
        spawn_cost::cases(config),
        choose_all::cases(config),
        inflation::cases(config),
        par_fib::cases(config),
        par_tak::cases(config),
        mergesort::cases(config),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// splitmix64's finaliser: a cheap, well-mixed function of `x` (the Go
/// program has the same).
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Multiplier and increment of the linear congruential generator the
/// tight loops step (Knuth's MMIX constants; the Go program has the same).
const LCG_A: u64 = 6_364_136_223_846_793_005;
const LCG_C: u64 = 1_442_695_040_888_963_407;

/// `n` steps of the generator from `x`: a tight loop, each step depending
/// on the last (a multiply and an add).
pub fn lcg_steps(mut x: u64, n: u64) -> u64 {
    // Opaque constants: with the literal constants LLVM unrolls the loop and
    // folds every 8 steps into one (`a^8 x + c'`), which is not the loop Go
    // runs.
    let (a, c) = (std::hint::black_box(LCG_A), std::hint::black_box(LCG_C));
    for _ in 0..n {
        x = x.wrapping_mul(a).wrapping_add(c);
    }
    x
}

/// What [`lcg_steps`] returns, in `O(log n)` (the generator's jump-ahead):
/// how a row's expected result is computed without running its loops.
pub fn lcg_jump(x: u64, mut n: u64) -> u64 {
    // (a, c): the map of 2^k steps, x -> a x + c; (acc_a, acc_c): the map
    // of the steps taken so far.
    let (mut a, mut c) = (LCG_A, LCG_C);
    let (mut acc_a, mut acc_c) = (1u64, 0u64);
    while n > 0 {
        if n & 1 == 1 {
            acc_a = acc_a.wrapping_mul(a);
            acc_c = acc_c.wrapping_mul(a).wrapping_add(c);
        }
        c = a.wrapping_add(1).wrapping_mul(c);
        a = a.wrapping_mul(a);
        n >>= 1;
    }
    acc_a.wrapping_mul(x).wrapping_add(acc_c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::System;

    #[test]
    fn the_jump_ahead_agrees_with_the_loop() {
        for (x, n) in [(0, 0), (1, 1), (7, 2), (42, 1000), (u64::MAX, 12_345)] {
            assert_eq!(lcg_jump(x, n), lcg_steps(x, n), "x={x} n={n}");
        }
    }

    #[test]
    fn every_workload_has_tasks_parasites_and_the_peers() {
        let cases = cases(&Config::default());
        for workload in [
            "async-send",
            "spawn-cost",
            "choose-all",
            "inflation",
            "par-fib",
            "par-tak",
            "mergesort",
        ] {
            let systems: Vec<System> = cases
                .iter()
                .filter(|c| c.spec.workload == workload)
                .map(|c| c.system)
                .collect();
            for system in [
                System::Fibra,
                System::Fibra1,
                System::FibraCt,
                System::FibraParasite,
                System::TokioCt,
                System::TokioMt,
                System::Go,
            ] {
                assert!(systems.contains(&system), "{workload}: no {system} row");
            }
            assert!(cases.iter().all(|c| c.spec.group == GROUP));
        }
    }
}
