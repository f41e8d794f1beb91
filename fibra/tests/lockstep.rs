//! Races between two choices that each send on the channel the other
//! receives from, lined up (with a waker hook that runs between a perform's
//! try and block phases) so that their block phases run at the same moment.
//!
//! Kept apart from `stress.rs`: when this livelocks, the two stuck threads
//! spin until the test process exits, and would slow every other test in the
//! same binary.

mod common;

use common::{hook_waker, scaled, spin_poll};
use fibra::{Op, bounded, choose_biased};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Two performs, lined up to enter their block phases together, each a
/// biased choice of "send on the channel the other receives from" then
/// "receive from the channel the other sends to", over full one-slot buffers.
/// Each, in its retry, takes a buffered value and then refills the buffer on
/// the channel's behalf from the other's blocked send: both may try to commit
/// the other at the same moment. They must settle it (one commits the other),
/// not spin on each other forever; and no value may be lost or duplicated.
#[test]
fn two_blocked_choices_refilling_each_others_buffers_do_not_livelock() {
    let trials = scaled(1_000);
    common::with_progress_watchdog(
        "two choices refilling each other's buffers",
        None,
        Duration::from_secs(5),
        move |progress| {
            let mut outcomes = [0usize; 4];
            for trial in 0..trials {
                let (r, s) = lockstep_trial(trial);
                outcomes[usize::from(r.is_some()) * 2 + usize::from(s.is_some())] += 1;
                progress.fetch_add(1, Ordering::SeqCst);
            }
            eprintln!("lockstep: (sent,sent) (sent,got) (got,sent) (got,got) = {outcomes:?}");
        },
    );
}

/// One trial; returns what each side got (`None`: its send committed).
fn lockstep_trial(trial: usize) -> (Option<u32>, Option<u32>) {
    let (tx_x, rx_x) = bounded::<u32>(1);
    let (tx_y, rx_y) = bounded::<u32>(1);
    tx_x.try_send(100).unwrap();
    let r_paused = Arc::new(AtomicBool::new(false));
    let go = Arc::new(AtomicBool::new(false));
    let (r_out, s_out) = std::thread::scope(|scope| {
        // R: send 1 on X, or receive from Y. Its try sees X full, Y empty;
        // then it waits (in its waker's clone) for the go.
        let r = scope.spawn(|| {
            let (paused, go) = (r_paused.clone(), go.clone());
            let waker = hook_waker(move || {
                paused.store(true, Ordering::SeqCst);
                // Spin, so as to leave the moment the go comes; the go is
                // normally microseconds away. If it is late, this thread may
                // be sharing a core with S: start yielding it.
                let mut spins = 0u32;
                while !go.load(Ordering::SeqCst) {
                    spins = spins.saturating_add(1);
                    if spins > 1 << 16 {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
            });
            let op = choose_biased((
                tx_x.send_op(1).wrap(|r| r.map(|()| None).unwrap()),
                rx_y.recv_op().wrap(|r| Some(r.unwrap())),
            ));
            spin_poll(pin!(fibra::Perform::new(op)), &waker)
        });
        let t0 = std::time::Instant::now();
        while !r_paused.load(Ordering::SeqCst) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "trial {trial}: R never reached its block phase"
            );
            std::thread::yield_now();
        }
        // Empty X, fill Y.
        assert_eq!(rx_x.try_recv(), Ok(100));
        tx_y.try_send(200).unwrap();
        // S, on this thread: send 2 on Y, or receive from X. Its try sees Y
        // full, X empty; between its try and its block, X is refilled and R
        // released, so both block phases run together.
        let (tx_x2, go2) = (tx_x.clone(), go.clone());
        let waker = hook_waker(move || {
            tx_x2.try_send(101).unwrap();
            go2.store(true, Ordering::SeqCst);
        });
        let op = choose_biased((
            tx_y.send_op(2).wrap(|r| r.map(|()| None).unwrap()),
            rx_x.recv_op().wrap(|r| Some(r.unwrap())),
        ));
        let s_out = spin_poll(pin!(fibra::Perform::new(op)), &waker);
        (r.join().unwrap(), s_out)
    });
    // Conservation: the buffered 101 and 200 are somewhere exactly once; a
    // side's own value (1 for R, 2 for S) was delivered iff its send won.
    let mut seen: Vec<u32> = [r_out, s_out].into_iter().flatten().collect();
    while let Ok(v) = rx_x.try_recv() {
        seen.push(v);
    }
    while let Ok(v) = rx_y.try_recv() {
        seen.push(v);
    }
    seen.sort_unstable();
    let mut want = vec![101, 200];
    if r_out.is_none() {
        want.push(1);
    }
    if s_out.is_none() {
        want.push(2);
    }
    want.sort_unstable();
    assert_eq!(
        seen, want,
        "trial {trial}: R got {r_out:?}, S got {s_out:?}"
    );
    (r_out, s_out)
}
