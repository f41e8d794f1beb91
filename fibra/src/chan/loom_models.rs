//! loom models of the channel protocol. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p fibra --release --lib loom_`.
//!
//! Each model runs the real channel code under every interleaving loom can
//! reach within its preemption bound (see `crate::loom::model`).

use crate::loom::{Arc, Mutex, model, thread};
use crate::{Op, RecvError, SendError, TrySendError, bounded, channel, choose};
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

#[test]
fn loom_rendezvous_sender_and_receiver_arrive_together() {
    model(|| {
        let (tx, rx) = channel::<u32>();
        let t = thread::spawn(move || tx.send_blocking(7));
        assert_eq!(rx.recv_blocking(), Ok(7));
        assert_eq!(t.join().unwrap(), Ok(()));
    });
}

#[test]
fn loom_two_crossed_choices_commit_exactly_one_pairing() {
    // X offers to send on A or receive on B; Y the mirror image. Exactly one
    // of the two pairings commits, and both sides agree on which.
    model(|| {
        let (a_tx, a_rx) = channel::<u32>();
        let (b_tx, b_rx) = channel::<u32>();
        let y = thread::spawn(move || {
            choose((
                a_rx.recv_op().wrap(|v| ('A', v.unwrap())),
                b_tx.send_op(2).wrap(|r| ('B', r.map(|_| 0).unwrap())),
            ))
            .perform()
        });
        let x = choose((
            a_tx.send_op(1).wrap(|r| ('A', r.map(|_| 0).unwrap())),
            b_rx.recv_op().wrap(|v| ('B', v.unwrap())),
        ))
        .perform();
        let y = y.join().unwrap();
        match (x, y) {
            (('A', 0), ('A', 1)) | (('B', 2), ('B', 0)) => {}
            other => panic!("inconsistent commit: {other:?}"),
        }
    });
}

#[test]
fn loom_choice_races_two_partners_each_value_once() {
    // One receiver chooses over A and B twice; one sender on each. Both
    // values arrive, once each, with no lost wake-up.
    model(|| {
        let (a_tx, a_rx) = channel::<u32>();
        let (b_tx, b_rx) = channel::<u32>();
        // Keep both channels open: a closed channel is ready with an error.
        let _keep = (a_tx.clone(), b_tx.clone());
        let pa = thread::spawn(move || a_tx.send_blocking(1));
        let pb = thread::spawn(move || b_tx.send_blocking(2));
        let first = choose((a_rx.recv_op(), b_rx.recv_op())).perform().unwrap();
        let second = choose((a_rx.recv_op(), b_rx.recv_op())).perform().unwrap();
        assert_eq!(first + second, 3);
        assert_ne!(first, second);
        pa.join().unwrap().unwrap();
        pb.join().unwrap().unwrap();
    });
}

#[test]
fn loom_dropped_receive_never_loses_the_value() {
    // A receive is polled once (publishing its record) and dropped, racing a
    // sender's attempt. The value ends up exactly once: received by that
    // poll, handed back to the sender, or given back to the channel.
    model(|| {
        let (tx, rx) = channel::<u32>();
        let _keep_open = tx.clone();
        let sender = thread::spawn(move || match tx.try_send(7) {
            Ok(()) => None,
            Err(TrySendError::Full(v)) => Some(v),
            Err(TrySendError::Disconnected(_)) => unreachable!("receiver alive"),
        });
        let mut got = None;
        {
            let mut fut = pin!(rx.recv());
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                got = Some(v.unwrap());
            }
            // dropped here, possibly after a commit
        }
        let returned = sender.join().unwrap();
        let rescued = rx.try_recv().ok();
        let all: Vec<u32> = [got, returned, rescued].into_iter().flatten().collect();
        assert_eq!(all, [7], "value lost or duplicated");
    });
}

#[test]
fn loom_dropped_send_is_withdrawn_or_delivered() {
    // A send is polled once and dropped while a receiver tries to take it:
    // either the receiver got it (and the send counts as done) or nothing
    // happened; never both, never a receiver holding a dangling record.
    model(|| {
        let (tx, rx) = channel::<u32>();
        let _keep_open = rx.clone();
        let receiver = thread::spawn(move || rx.try_recv().ok());
        let mut sent = false;
        {
            let mut fut = pin!(tx.send(9));
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                r.unwrap();
                sent = true;
            }
        }
        let got = receiver.join().unwrap();
        if sent {
            assert_eq!(got, Some(9));
        }
        // Dropped unsent: the receiver may have committed just before the
        // drop (then it holds the value) or not at all. What this model
        // checks is the race itself: loom tracks every access to the send
        // slot and the record, so a receiver touching a freed or
        // half-withdrawn record fails the model.
        assert!(rx_kept_open_then_empty(&_keep_open));
    });
}

/// After the race, nothing else can arrive: the channel is empty.
fn rx_kept_open_then_empty(rx: &crate::Receiver<u32>) -> bool {
    rx.try_recv().is_err()
}

#[test]
fn loom_close_races_blocked_send_and_recv() {
    model(|| {
        let (tx1, rx1) = channel::<u32>();
        let (tx2, rx2) = channel::<u32>();
        let r = thread::spawn(move || rx1.recv_blocking());
        let s = thread::spawn(move || tx2.send_blocking(5));
        drop(tx1); // last sender of channel 1: the receiver must see Closed
        drop(rx2); // last receiver of channel 2: the send fails, value back
        assert_eq!(r.join().unwrap(), Err(RecvError));
        assert_eq!(s.join().unwrap(), Err(SendError(5)));
    });
}

#[test]
fn loom_close_after_send_delivers_then_reports_closed() {
    model(|| {
        let (tx, rx) = bounded::<u32>(1);
        let s = thread::spawn(move || {
            tx.send_blocking(1).unwrap();
            // tx dropped: closes the channel
        });
        assert_eq!(rx.recv_blocking(), Ok(1));
        assert_eq!(rx.recv_blocking(), Err(RecvError));
        s.join().unwrap();
    });
}

#[test]
fn loom_bounded_full_and_empty_edges() {
    // Capacity 1: the second send waits for room; the receiver's pop refills
    // the buffer from the blocked sender. Order is preserved.
    model(|| {
        let (tx, rx) = bounded::<u32>(1);
        let s = thread::spawn(move || {
            tx.send_blocking(1).unwrap();
            tx.send_blocking(2).unwrap();
        });
        assert_eq!(rx.recv_blocking(), Ok(1));
        assert_eq!(rx.recv_blocking(), Ok(2));
        s.join().unwrap();
    });
}

#[test]
fn loom_choice_never_meets_itself() {
    // A choice offering both sides of one channel must commit with the other
    // thread, never with itself.
    model(|| {
        let (tx, rx) = channel::<u32>();
        let tx2 = tx.clone();
        let other = thread::spawn(move || tx2.send_blocking(3));
        let got = Arc::new(Mutex::new(None));
        let out = choose((
            tx.send_op(1).wrap(|r| {
                r.unwrap();
                None
            }),
            rx.recv_op().wrap(|v| Some(v.unwrap())),
        ))
        .perform();
        *got.lock().unwrap() = out;
        // Only `other` can be our partner: we received its 3. (Sending our 1
        // would need a receiver, and there is none besides ourselves.)
        assert_eq!(*got.lock().unwrap(), Some(3));
        other.join().unwrap().unwrap();
    });
}

// Plain waits (`Sender::send`, `Receiver::recv` awaited outside any choice)
// publish plain records, which partners commit without a compare-and-swap,
// holding only the channel's lock (`op/waiter.rs`, "Plain records").

/// A waker that unparks a model thread, for models that poll by hand.
struct Unpark(loom::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

#[test]
fn loom_plain_recv_is_committed_by_a_choosing_sender() {
    model(|| {
        let (tx, rx) = channel::<u32>();
        let (_other_tx, other_rx) = channel::<u32>();
        let s = thread::spawn(move || {
            choose((
                tx.send_op(5).wrap(|r| r.is_ok()),
                other_rx.recv_op().wrap(|_| false),
            ))
            .perform()
        });
        assert_eq!(crate::block_on(rx.recv()), Ok(5));
        assert!(s.join().unwrap(), "the send branch committed");
    });
}

#[test]
fn loom_plain_send_is_committed_by_a_choosing_receiver() {
    model(|| {
        let (tx, rx) = channel::<u32>();
        let (_other_tx, other_rx) = channel::<u32>();
        let r = thread::spawn(move || choose((rx.recv_op(), other_rx.recv_op())).perform());
        assert_eq!(crate::block_on(tx.send(6)), Ok(()));
        assert_eq!(r.join().unwrap(), Ok(6));
    });
}

#[test]
fn loom_plain_recv_repolled_with_a_new_waker_while_a_sender_commits() {
    // The second poll replaces the waker under the channel's lock while a
    // sender may be committing: either the poll sees the value, or the new
    // waker is the one woken. Never a wake to the old waker only.
    model(|| {
        let (tx, rx) = channel::<u32>();
        let mut fut = pin!(rx.recv());
        let mut noop = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut noop).is_pending());
        let s = thread::spawn(move || tx.send_blocking(8));
        let waker = Waker::from(std::sync::Arc::new(Unpark(loom::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let got = loop {
            match fut.as_mut().poll(&mut cx) {
                Poll::Ready(v) => break v,
                // Only the new waker can end this park: a wake to the old
                // (no-op) one would leave the model deadlocked, which loom
                // reports.
                Poll::Pending => loom::thread::park(),
            }
        };
        assert_eq!(got, Ok(8));
        assert_eq!(s.join().unwrap(), Ok(()));
    });
}

#[test]
fn loom_close_races_plain_send_and_recv() {
    model(|| {
        let (tx1, rx1) = channel::<u32>();
        let (tx2, rx2) = channel::<u32>();
        let r = thread::spawn(move || crate::block_on(rx1.recv()));
        let s = thread::spawn(move || crate::block_on(tx2.send(5)));
        drop(tx1);
        drop(rx2);
        assert_eq!(r.join().unwrap(), Err(RecvError));
        assert_eq!(s.join().unwrap(), Err(SendError(5)));
    });
}

#[test]
fn loom_plain_bounded_refill_from_a_plain_sender() {
    // Capacity 1: the second plain send waits; the receiver's pop refills
    // the buffer from its plain record. Order is preserved.
    model(|| {
        let (tx, rx) = bounded::<u32>(1);
        let s = thread::spawn(move || {
            crate::block_on(tx.send(1)).unwrap();
            crate::block_on(tx.send(2)).unwrap();
        });
        assert_eq!(crate::block_on(rx.recv()), Ok(1));
        assert_eq!(crate::block_on(rx.recv()), Ok(2));
        s.join().unwrap();
    });
}

#[test]
fn loom_buffered_shortcut_races_a_parking_receiver_and_close() {
    // Room for both values: each send may take the shortcut (buffer, no
    // partner), which it must not do while the receiver is queued; the
    // receiver's shortcut pops what is buffered. Whatever the interleaving,
    // the receiver gets 1, 2, then the close, and never sleeps next to a
    // value. Fails (a receiver left parked) if the send shortcut ignores a
    // queued receiver.
    model(|| {
        let (tx, rx) = bounded::<u32>(2);
        let r = thread::spawn(move || {
            let a = rx.recv_blocking();
            let b = crate::block_on(rx.recv());
            let c = rx.recv_blocking();
            (a, b, c)
        });
        tx.send_blocking(1).unwrap();
        crate::block_on(tx.send(2)).unwrap();
        drop(tx);
        assert_eq!(r.join().unwrap(), (Ok(1), Ok(2), Err(RecvError)));
    });
}

#[test]
fn loom_choice_over_buffered_branches_takes_each_value_once() {
    // Two buffered channels filled through the shortcuts (`try_send` from
    // one thread, `send_blocking` from this one) while a chooser receives
    // over both, twice: each value once, none left behind.
    model(|| {
        let (a_tx, a_rx) = bounded::<u32>(1);
        let (b_tx, b_rx) = bounded::<u32>(1);
        // Keep both open: a closed, empty channel is a ready branch.
        let _keep = (a_tx.clone(), b_tx.clone());
        let chooser = thread::spawn(move || {
            let mut got = [0; 2];
            for g in &mut got {
                *g = choose((a_rx.recv_op(), b_rx.recv_op())).perform().unwrap();
            }
            got.sort_unstable();
            got
        });
        let pa = thread::spawn(move || a_tx.try_send(1).unwrap());
        b_tx.send_blocking(2).unwrap();
        pa.join().unwrap();
        assert_eq!(chooser.join().unwrap(), [1, 2]);
    });
}

/// Counts the drops of a value, to check it is dropped exactly once.
struct Counted(u32, Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn loom_async_send_racing_close_and_a_cancelled_receive_loses_nothing() {
    // An asynchronous send on a rendezvous channel with nobody receiving
    // (its value waits in the buffer, beyond capacity), while one receiver polls a receive
    // once and drops it (cancelled, maybe after it took the value: then
    // the value goes back to the channel) and then itself, and the other
    // receiver goes too (the close). The value is received once, comes
    // back through the receipt once, or (given back to a channel that then
    // closed) drops with the channel's buffer: exactly one of the three,
    // and it is dropped exactly once.
    model(|| {
        let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (tx, rx) = channel::<Counted>();
        let rx2 = rx.clone();
        let mut receipt = tx.send_async(Counted(7, drops.clone()));
        let receiver = thread::spawn(move || {
            let mut got = None;
            {
                let mut fut = pin!(rx2.recv());
                let mut cx = Context::from_waker(Waker::noop());
                if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                    got = Some(v.unwrap());
                }
            }
            drop(rx2);
            got.map(|c| c.0)
        });
        drop(rx);
        let received = receiver.join().unwrap();
        // Both receivers are gone: the receipt is settled.
        let outcome = match receipt.consumed_op().try_perform() {
            Ok(o) => o,
            Err(_) => panic!("an asynchronous send left unsettled after the close"),
        };
        match (received, outcome) {
            (Some(7), Ok(())) => {}
            (None, Err(SendError(c))) => assert_eq!(c.0, 7),
            // Taken by the cancelled receive, given back, dropped at the
            // close.
            (None, Ok(())) => {}
            other => panic!("inconsistent: {:?}", (other.0, other.1.is_ok())),
        }
        drop(tx);
        assert_eq!(
            drops.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "dropped once"
        );
    });
}

#[test]
fn loom_async_send_meets_a_blocked_receiver_or_waits_for_it() {
    // A receiver blocks while an asynchronous send commits: it hands the
    // value over at once, or queues it beyond capacity where the receiver
    // takes it. The receipt is awaited while the receiver runs (its waker
    // registered, then woken by the receiver's pop after the unlock). The
    // value arrives once and the receipt says consumed.
    model(|| {
        let (tx, rx) = channel::<u32>();
        let receiver = thread::spawn(move || rx.recv_blocking());
        let receipt = tx.send_async(5);
        assert_eq!(crate::block_on(receipt), Ok(()));
        assert_eq!(receiver.join().unwrap(), Ok(5));
    });
}

#[test]
fn loom_a_consumed_op_waiting_while_the_receivers_go_gets_the_value_back() {
    // A value waits beyond capacity; its receipt's `consumed_op` blocks on
    // one thread while the last receiver goes on another: the op is
    // committed by the close (or sees it in its try) and gives the value
    // back, once.
    model(|| {
        let (tx, rx) = channel::<u32>();
        let mut receipt = tx.send_async(8);
        let closer = thread::spawn(move || drop(rx));
        let out = receipt.consumed_op().perform();
        assert_eq!(out.unwrap_err().into_inner(), 8);
        closer.join().unwrap();
        drop(tx);
    });
}

#[test]
fn loom_a_dropped_receipt_racing_the_close_drops_its_value_once() {
    // A value waits beyond capacity; its receipt is dropped on one thread
    // while the last receiver goes on another. Whichever comes first under
    // the lock, the value is dropped exactly once by the time both are
    // done: at the close (the receipt was forgotten) or with the receipt
    // (the close kept it for the receipt) — not left in the channel.
    model(|| {
        let drops = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (tx, rx) = channel::<Counted>();
        let receipt = tx.send_async(Counted(1, drops.clone()));
        let t = thread::spawn(move || drop(receipt));
        drop(rx);
        t.join().unwrap();
        assert_eq!(drops.load(std::sync::atomic::Ordering::SeqCst), 1);
        drop(tx);
    });
}

#[test]
fn loom_an_async_send_and_a_blocked_send_both_arrive_in_an_order_of_theirs() {
    // A sender blocks while another sends asynchronously: the asynchronous
    // value waits beyond capacity (the blocked sender came after it) or in
    // a parcel behind the blocked sender's record. Both values arrive once,
    // the receipt settles as consumed, the blocked send completes.
    model(|| {
        let (tx, rx) = channel::<u32>();
        let tx2 = tx.clone();
        let blocked = thread::spawn(move || tx2.send_blocking(1));
        let receipt = tx.send_async(2);
        let a = rx.recv_blocking().unwrap();
        let b = rx.recv_blocking().unwrap();
        assert_eq!(a + b, 3);
        assert_ne!(a, b);
        assert_eq!(blocked.join().unwrap(), Ok(()));
        assert_eq!(crate::block_on(receipt), Ok(()));
    });
}

#[test]
fn loom_partner_unlinks_a_stale_record_while_its_owner_withdraws() {
    // A sender chooses between A and B and publishes on both (in its try
    // or its block phase); the receiver's choice commits one, then a
    // receive on the other meets the sender's stale record there and
    // unlinks it, racing the sender's own withdrawal, which skips the lock
    // once it sees the record unlinked. One value arrives, once; the other
    // channel is left empty (no record absorbs a later send).
    model(|| {
        let (a_tx, a_rx) = channel::<u32>();
        let (b_tx, b_rx) = channel::<u32>();
        let (a_keep, b_keep) = (a_tx.clone(), b_tx.clone());
        let sender = thread::spawn(move || choose((a_tx.send_op(1), b_tx.send_op(2))).perform());
        let got = choose((a_rx.recv_op(), b_rx.recv_op())).perform().unwrap();
        let other = if got == 1 { &b_rx } else { &a_rx };
        assert!(other.try_recv().is_err(), "a stale record delivered");
        assert_eq!(sender.join().unwrap(), Ok(()));
        assert!(matches!(a_keep.try_send(3), Err(TrySendError::Full(3))));
        assert!(matches!(b_keep.try_send(4), Err(TrySendError::Full(4))));
    });
}

#[test]
fn loom_a_partner_unlinks_a_flagged_and_a_bitted_record_while_their_owner_withdraws() {
    // A receiver chooses over B, A and C (leaf 0 is B: under loom the
    // opstate's only flag; A and C are in the bit word). The sender sends
    // on A, then tries B and C: each try meets the choice's stale record
    // there (if the choice published on it) and unlinks it, one mark on
    // the flag, one in the word, racing the owner's withdrawal, which skips
    // the lock of every record it sees marked. The choice gets A's value,
    // neither try succeeds, and no record is left to absorb a later send.
    model(|| {
        let (a_tx, a_rx) = channel::<u32>();
        let (b_tx, b_rx) = channel::<u32>();
        let (c_tx, c_rx) = channel::<u32>();
        let (a_keep, b_keep, c_keep) = (a_tx.clone(), b_tx.clone(), c_tx.clone());
        let sender = thread::spawn(move || {
            let sent = a_tx.send_blocking(1);
            (sent, b_tx.try_send(2).is_ok(), c_tx.try_send(3).is_ok())
        });
        let got = choose((b_rx.recv_op(), a_rx.recv_op(), c_rx.recv_op())).perform();
        assert_eq!(got, Ok(1));
        assert_eq!(sender.join().unwrap(), (Ok(()), false, false));
        assert!(matches!(a_keep.try_send(4), Err(TrySendError::Full(4))));
        assert!(matches!(b_keep.try_send(5), Err(TrySendError::Full(5))));
        assert!(matches!(c_keep.try_send(6), Err(TrySendError::Full(6))));
    });
}
