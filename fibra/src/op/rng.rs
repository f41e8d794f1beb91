//! The per-thread generator behind fair choice.
//!
//! `choose` starts its scan of the branches at a random index so no branch is
//! favoured (Go and Racket do the same). The generator is a per-thread
//! xorshift64* — a few instructions, no shared state — and a program can seed
//! it with [`seed_choice_rng`] to replay the choices of a run, as Racket lets
//! a program set the generator behind `sync`. Under loom the start index is
//! always 0, so models are deterministic.

#[cfg(not(loom))]
use std::cell::Cell;

#[cfg(not(loom))]
thread_local! {
    static STATE: Cell<u64> = Cell::new(initial_seed());
}

#[cfg(not(loom))]
fn initial_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    // RandomState is seeded per process from the OS, and differs per thread
    // after the first; mix in the thread id so threads never share a stream.
    let seed = RandomState::new().hash_one(std::thread::current().id());
    seed | 1
}

/// Seeds the current thread's choice generator, so that the fair choices made
/// by [`choose`](crate::choose) on this thread repeat from run to run.
///
/// Each thread has its own generator; seed each thread whose choices you want
/// to replay (for fibra's runtime, seed from inside the task before it
/// chooses).
///
/// # Examples
///
/// ```
/// use fibra::{Op, always, choose, seed_choice_rng};
///
/// let pick = || choose((always(1), always(2), always(3))).perform();
/// seed_choice_rng(42);
/// let first: Vec<i32> = (0..8).map(|_| pick()).collect();
/// seed_choice_rng(42);
/// let second: Vec<i32> = (0..8).map(|_| pick()).collect();
/// assert_eq!(first, second);
/// ```
pub fn seed_choice_rng(seed: u64) {
    #[cfg(not(loom))]
    STATE.with(|s| s.set(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1));
    #[cfg(loom)]
    let _ = seed;
}

/// A number in `0..n` (`n > 0`).
#[inline]
pub(crate) fn below(n: usize) -> usize {
    #[cfg(not(loom))]
    {
        let x = STATE.with(|s| {
            let mut x = s.get();
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            s.set(x);
            x.wrapping_mul(0x2545_F491_4F6C_DD1D)
        });
        ((u128::from(x) * n as u128) >> 64) as usize
    }
    #[cfg(loom)]
    {
        let _ = n;
        0
    }
}
