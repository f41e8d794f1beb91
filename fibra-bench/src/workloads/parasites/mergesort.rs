//! `parasites/mergesort` (the paper's Mergesort: "merge-sort algorithm to
//! sort one million numbers"): every call sorting more than one number
//! splits them in two halves, sorts each half in a task of its own, joins
//! both and merges them. The input is `n` numbers, a permutation of
//! `0..n` (`v[i] = i * 999,983 mod n`), made in each run. Result:
//! `sum((i + 1) * sorted[i])`, which only the sorted permutation gives.
//! Ops: calls (`2n - 1`).
//!
//! fibra starts the halves with `fibra::spawn` or `fibra::spawn_eager`
//! (`fibra-parasite`) and joins their handles; tokio spawns tasks and joins
//! their handles; Go starts a goroutine per half that sends its sorted half
//! on a channel (Go has no join handles).

use std::future::Future;
use std::pin::Pin;

use super::GROUP;
#[cfg(feature = "fibra-rt")]
use super::start::{AsParasite, AsTask, Start};
use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_row, fibra_rows};
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// The input's multiplier: a prime, coprime with every `n` used (products
/// of 2s and 5s), so `i * STRIDE mod n` is a permutation.
const STRIDE: u64 = 999_983;

/// A call's future, boxed: the calls are recursive.
type Call = Pin<Box<dyn Future<Output = Vec<u32>> + Send>>;

/// The input of a run.
pub fn input(n: u64) -> Vec<u32> {
    (0..n).map(|i| (i * STRIDE % n) as u32).collect()
}

/// The run's result: `sum((i + 1) * sorted[i])`.
pub fn checksum(sorted: &[u32]) -> u64 {
    sorted
        .iter()
        .enumerate()
        .map(|(i, &v)| (i as u64 + 1) * u64::from(v))
        .sum()
}

/// Merges two sorted runs.
pub fn merge(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i] <= b[j] {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The checksum of `0..n` sorted: `sum((i + 1) * i)`.
pub fn expected(n: u64) -> u64 {
    (n - 1) * n * (2 * n - 1) / 6 + n * (n - 1) / 2
}

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let n = config.size(1_000_000, 10_000);
    let spec = Spec {
        group: GROUP,
        workload: "mergesort",
        params: Params::new().with("size", n),
        ops: 2 * n - 1,
        expected: expected(n),
    };
    let mut fibra = fibra_rows!(&spec, config, move || fibra_mergesort(AsTask, n));
    fibra.push(fibra_row!(
        &spec,
        config,
        System::FibraParasite,
        move || { fibra_mergesort(AsParasite, n) }
    ));
    task_rows(
        &spec,
        fibra,
        move || tokio_mergesort(n),
        PeerNotes::default(),
    )
}

/// fibra: sorts `v`, each half in a computation started as `start` says.
#[cfg(feature = "fibra-rt")]
fn fibra_sort(start: impl Start, mut v: Vec<u32>) -> Call {
    Box::pin(async move {
        if v.len() <= 1 {
            return v;
        }
        let right = v.split_off(v.len() / 2);
        let left = start.start(fibra_sort(start, v));
        let right = start.start(fibra_sort(start, right));
        let left = left.await.expect("fibra: a sort failed");
        merge(&left, &right.await.expect("fibra: a sort failed"))
    })
}

/// fibra: the root call, a task.
#[cfg(feature = "fibra-rt")]
async fn fibra_mergesort(start: impl Start, n: u64) -> u64 {
    let sorted = fibra::spawn(fibra_sort(start, input(n)))
        .await
        .expect("fibra: the sort failed");
    checksum(&sorted)
}

/// tokio: sorts `v`, each half in a task.
fn tokio_sort(mut v: Vec<u32>) -> Call {
    Box::pin(async move {
        if v.len() <= 1 {
            return v;
        }
        let right = v.split_off(v.len() / 2);
        let left = tokio::spawn(tokio_sort(v));
        let right = tokio::spawn(tokio_sort(right));
        let left = left.await.expect("tokio: a sort failed");
        merge(&left, &right.await.expect("tokio: a sort failed"))
    })
}

/// tokio: the root call, a task.
async fn tokio_mergesort(n: u64) -> u64 {
    let sorted = tokio::spawn(tokio_sort(input(n)))
        .await
        .expect("tokio: the sort failed");
    checksum(&sorted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::parasites::start::for_each_start;

    #[test]
    fn the_input_is_a_permutation_and_only_its_sort_checks_out() {
        let n = 1000;
        let mut v = input(n);
        assert_ne!(checksum(&v), expected(n));
        v.sort_unstable();
        assert_eq!(v, (0..n as u32).collect::<Vec<_>>());
        assert_eq!(checksum(&v), expected(n));
        assert_eq!(expected(n), 333_333_000);
    }

    #[test]
    fn tokio_sorts() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_mergesort(1000)), 333_333_000);
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_sorts() {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        for_each_start!(start => {
            assert_eq!(rt.block_on(fibra_mergesort(start, 1000)), 333_333_000);
        });
    }
}
