//! `fibers/sieve` (Fibers; MultiMLton's Sieve-primes): the "false sieve of
//! Eratosthenes". A generator task sends 2, 3, 4, ... down a chain of
//! filter tasks over rendezvous channels; the main task receives from the
//! end of the chain, and each number that reaches it is the next prime, for
//! which it adds a filter task (dropping multiples of that prime) to the
//! end of the chain. First 2000 primes (Fibers) and 3000 (MultiMLton).
//!
//! The generator stops after the last wanted prime (17389 for 2000 primes,
//! 27449 for 3000) and closes its channel; the close ripples down the chain,
//! so every system does exactly the same sends and shuts down the same way
//! (Go channels cannot tell a sender that the receiver is gone). Result: the
//! last prime; a run that finds another number of primes panics. Ops:
//! channel sends ([`sends`]).

use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_rows, tokio_join_sum};
use crate::workloads::Config;
use crate::workloads::spsc::TOKIO_NOTE;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// Primes to find (full run; `--quick`).
const PRIMES: [(u64, u64); 2] = [(2000, 100), (3000, 200)];

/// The first `n` primes, by a plain sieve of Eratosthenes.
pub fn first_primes(n: u64) -> Vec<u64> {
    let mut limit = 16;
    loop {
        let primes: Vec<u64> = smallest_factors(limit)
            .iter()
            .enumerate()
            .filter(|&(m, &f)| m >= 2 && f == m as u64)
            .map(|(m, _)| m as u64)
            .take(n as usize)
            .collect();
        if primes.len() == n as usize {
            return primes;
        }
        limit *= 2;
    }
}

/// `f[m]`: the smallest prime factor of `m`, for `m` in `0..=limit`
/// (0 for 0 and 1).
fn smallest_factors(limit: u64) -> Vec<u64> {
    let mut f = vec![0; limit as usize + 1];
    for m in 2..=limit as usize {
        if f[m] == 0 {
            for k in (m..=limit as usize).step_by(m) {
                if f[k] == 0 {
                    f[k] = m as u64;
                }
            }
        }
    }
    f
}

/// Channel sends of a run finding `primes` (the first primes, in order):
/// every number `m` from 2 to the last prime is sent by the generator and
/// forwarded by the filter of every prime below its smallest factor `p`
/// (the filter of `p` drops it, or, for `m = p`, the main task receives
/// it): `1 + (index of p)` sends.
pub fn sends(primes: &[u64]) -> u64 {
    let last = *primes.last().expect("at least one prime");
    let factors = smallest_factors(last);
    (2..=last as usize)
        .map(|m| 1 + primes.partition_point(|&p| p < factors[m]) as u64)
        .sum()
}

/// The rows: every system for both prime counts.
pub fn cases(config: &Config) -> Vec<Case> {
    PRIMES
        .into_iter()
        .flat_map(|(full, quick)| {
            let count = config.size(full, quick);
            let primes = first_primes(count);
            let last = *primes.last().expect("at least one prime");
            let spec = Spec {
                group: "fibers",
                workload: "sieve",
                params: Params::new().with("primes", count),
                ops: sends(&primes),
                expected: last,
            };
            task_rows(
                &spec,
                fibra_rows!(&spec, config, move || fibra_sieve(count, last)),
                move || tokio_sieve(count, last),
                PeerNotes {
                    tokio_capacity_one: Some(TOKIO_NOTE),
                    erlang: None,
                },
            )
        })
        .collect()
}

/// tokio tasks over `mpsc::channel(1)`; numbers `2..=last`.
async fn tokio_sieve(primes: u64, last: u64) -> u64 {
    use tokio::sync::mpsc;
    let main = tokio::spawn(async move {
        let (generator, mut end) = mpsc::channel::<u64>(1);
        let mut handles = vec![tokio::spawn(async move {
            for n in 2..=last {
                assert!(generator.send(n).await.is_ok(), "tokio: sieve gone");
            }
            0
        })];
        let (mut found, mut prime) = (0, 0);
        while let Some(p) = end.recv().await {
            (found, prime) = (found + 1, p);
            let (tx, next) = mpsc::channel(1);
            let mut rx = std::mem::replace(&mut end, next);
            handles.push(tokio::spawn(async move {
                while let Some(n) = rx.recv().await {
                    if n % p != 0 {
                        assert!(tx.send(n).await.is_ok(), "tokio: next filter gone");
                    }
                }
                0
            }));
        }
        assert_eq!(found, primes, "tokio: wrong number of primes");
        tokio_join_sum(handles).await + prime
    });
    main.await.expect("tokio main task failed")
}

/// fibra tasks over rendezvous channels; numbers `2..=last`.
#[cfg(feature = "fibra-rt")]
async fn fibra_sieve(primes: u64, last: u64) -> u64 {
    let main = fibra::spawn(async move {
        let (generator, mut end) = fibra::channel::<u64>();
        let mut handles = vec![fibra::spawn(async move {
            for n in 2..=last {
                assert!(generator.send(n).await.is_ok(), "fibra: sieve gone");
            }
            0
        })];
        let (mut found, mut prime) = (0, 0);
        while let Ok(p) = end.recv().await {
            (found, prime) = (found + 1, p);
            let (tx, next) = fibra::channel();
            let rx = std::mem::replace(&mut end, next);
            handles.push(fibra::spawn(async move {
                while let Ok(n) = rx.recv().await {
                    if n % p != 0 {
                        assert!(tx.send(n).await.is_ok(), "fibra: next filter gone");
                    }
                }
                0
            }));
        }
        assert_eq!(found, primes, "fibra: wrong number of primes");
        crate::exec::fibra_join_sum(handles).await + prime
    });
    main.await.expect("fibra main task failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_last_primes() {
        assert_eq!(first_primes(5), [2, 3, 5, 7, 11]);
        assert_eq!(*first_primes(2000).last().unwrap(), 17389);
        assert_eq!(*first_primes(3000).last().unwrap(), 27449);
    }

    #[test]
    fn sends_by_hand() {
        // 2: gen. 3: gen + filter 2. 4: gen. 5: gen + 2 + 3.
        assert_eq!(sends(&[2, 3, 5]), 1 + 2 + 1 + 3);
    }

    #[test]
    fn tokio_sieve_finds_the_primes() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_sieve(100, 541)), 541);
    }

    #[test]
    #[should_panic(expected = "wrong number of primes")]
    fn a_sieve_that_finds_too_few_primes_fails() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let _ = rt.block_on(tokio_sieve(101, 541));
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_sieve_finds_the_primes() {
        let rt = fibra::Runtime::builder().current_thread().build().unwrap();
        assert_eq!(rt.block_on(fibra_sieve(100, 541)), 541);
    }
}
