//! The machine's cross-core round trip: how long one cache line takes to
//! go from one core to another and back, measured before each pass of
//! every row (`Harness::probe_cross_core`) and kept as the row's figure
//! `xcore_ns` (the largest of its passes).
//!
//! On a VM it is not a constant: on the 2-core machines this suite runs on
//! it is 60-90 ns most of the time and about 340 ns for stretches of
//! seconds to a minute (the host placing the two vCPUs farther apart), with
//! each core's own speed unchanged. Work that moves data between cores all
//! the time (message passing between tasks on two workers) runs up to 3x
//! slower in those stretches while one worker is unaffected, so a 2-worker
//! row measured in one is not comparable with one measured outside it:
//! the figure says which it was.
//!
//! Two threads, not pinned (as the runtimes' workers are not), pass a
//! counter back and forth through one atomic word: the caller writes odd
//! values, the partner answers with the next even one. Both spin, so on an
//! otherwise idle machine they run on different cores.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Round trips timed together; the result is the median chunk's.
const ROUND_TRIPS: u64 = 2_000;
/// Chunks timed.
const CHUNKS: usize = 5;
/// Beyond this the partner is not getting a core of its own (another
/// process is busy): no figure.
const LIMIT: Duration = Duration::from_millis(100);
/// Written by the caller to stop the partner.
const STOP: u64 = u64::MAX;

/// The median cross-core round trip in nanoseconds, or `None` on a
/// single-CPU machine or when the two threads could not run at once for
/// [`LIMIT`]. Takes about a millisecond on an idle machine.
pub fn round_trip_ns() -> Option<f64> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return None;
    }
    let word = Arc::new(AtomicU64::new(0));
    let partner = {
        let word = word.clone();
        std::thread::Builder::new()
            .name("xcore-probe".into())
            .spawn(move || answer(&word))
            .ok()?
    };
    let started = Instant::now();
    let mut chunks = Vec::with_capacity(CHUNKS);
    let mut next = 1;
    'timing: for _ in 0..CHUNKS {
        let start = Instant::now();
        for _ in 0..ROUND_TRIPS {
            // Release/Acquire: the only data is the word itself; the pair
            // orders nothing else, and costs nothing extra on x86.
            word.store(next, Ordering::Release);
            let mut spins = 0u32;
            while word.load(Ordering::Acquire) != next + 1 {
                std::hint::spin_loop();
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(4096) && started.elapsed() > LIMIT {
                    chunks.clear();
                    break 'timing;
                }
            }
            next += 2;
        }
        chunks.push(start.elapsed().as_nanos() as f64 / ROUND_TRIPS as f64);
    }
    word.store(STOP, Ordering::Release);
    let _ = partner.join();
    if chunks.len() < CHUNKS {
        return None;
    }
    chunks.sort_by(f64::total_cmp);
    Some(chunks[CHUNKS / 2])
}

/// The partner: answers each odd value with the next even one until
/// [`STOP`].
fn answer(word: &AtomicU64) {
    loop {
        let v = word.load(Ordering::Acquire);
        if v == STOP {
            return;
        }
        if !v.is_multiple_of(2) {
            word.store(v + 1, Ordering::Release);
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_takes_some_time_and_the_partner_stops() {
        // Under a parallel test run the partner may not get a core for the
        // whole limit: then there is no figure, which is allowed.
        if let Some(ns) = round_trip_ns() {
            assert!(ns.is_finite() && ns > 1.0, "{ns}");
            assert!(ns < LIMIT.as_nanos() as f64, "{ns}");
        }
    }
}
