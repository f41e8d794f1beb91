//! loom models of the mailbox (queue, parking, selective receive) and of
//! the semaphore. Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p fibra --release --lib loom_`.

use crate::loom::{model, thread};
use crate::{Op, Semaphore, TryRecvError, bounded, choose, mailbox};

#[test]
fn loom_mailbox_two_senders_each_message_once() {
    // Two producers race on the queue's tail (and one may be caught between
    // its swap and its link) while the receiver parks and wakes. (Sender
    // order is the selective-receive model's business: two sends from one
    // thread here make the model take minutes.)
    model(|| {
        let (a, mut mb) = mailbox::<u32>();
        let b = a.clone();
        let ta = thread::spawn(move || a.send(1).unwrap());
        let tb = thread::spawn(move || b.send(10).unwrap());
        let mut got = [mb.recv_blocking().unwrap(), mb.recv_blocking().unwrap()];
        ta.join().unwrap();
        tb.join().unwrap();
        got.sort();
        assert_eq!(got, [1, 10]);
        assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
    });
}

#[test]
fn loom_mailbox_last_reference_drops_it_once_on_either_thread() {
    // The mailbox's own count (`inner_arc.rs`): whichever thread drops the
    // last reference (the sender's address or the receiver) drops the
    // mailbox, and the message in it if the send came after the receiver
    // left, once and after the other thread's last use.
    struct Counted(crate::loom::Arc<crate::loom::AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, crate::loom::Ordering::SeqCst);
        }
    }
    model(|| {
        let drops = crate::loom::Arc::new(crate::loom::AtomicUsize::new(0));
        let (addr, mb) = mailbox::<Counted>();
        let d = drops.clone();
        let t = thread::spawn(move || drop(addr.send(Counted(d))));
        drop(mb);
        t.join().unwrap();
        assert_eq!(drops.load(crate::loom::Ordering::SeqCst), 1);
    });
}

#[test]
fn loom_mailbox_two_senders_across_a_block_boundary() {
    // Blocks hold two messages under loom: two senders race to fill the
    // first block and install the second. The receiver looks only after
    // both are done, so every slot must be written by then, each message
    // once. (This model did not reach the interleaving of the stale-block
    // bug fixed in 98b7a57 — a sender reading `tail.block` after its claim;
    // the conservation stress tests found that one.)
    model(|| {
        let (a, mut mb) = mailbox::<u32>();
        let b = a.clone();
        let ta = thread::spawn(move || a.send(1).unwrap());
        let tb = thread::spawn(move || {
            b.send(10).unwrap();
            b.send(11).unwrap();
        });
        ta.join().unwrap();
        tb.join().unwrap();
        let mut got: Vec<u32> = (0..3).map(|_| mb.try_recv().unwrap()).collect();
        got.sort();
        assert_eq!(got, [1, 10, 11]);
        assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
    });
}

#[test]
fn loom_mailbox_messages_cross_a_block_boundary_in_order() {
    // Blocks hold two messages under loom: the third send installs a new
    // block while the receiver may be reading the first.
    model(|| {
        let (addr, mut mb) = mailbox::<u32>();
        let t = thread::spawn(move || (1..=3).for_each(|m| addr.send(m).unwrap()));
        let got: Vec<u32> = (0..3).map(|_| mb.recv_blocking().unwrap()).collect();
        assert_eq!(got, [1, 2, 3]);
        t.join().unwrap();
    });
}

#[test]
fn loom_mailbox_drained_block_reused_by_a_racing_install() {
    // Blocks hold two messages under loom: 1-2 fill the embedded block,
    // 3-4 the first allocated one, 5-6 the second. The receiver, reading
    // while the sender sends 4-6, puts the drained first allocated block
    // in `spare` as it reads 4, racing the install that send 4 makes (it
    // finds no spare) and send 6 (it may take the drained block and write
    // into it again). Every message must arrive once, in order, and no
    // block be freed twice or written while the receiver reads it.
    model(|| {
        let (addr, mut mb) = mailbox::<u32>();
        (1..=3).for_each(|m| addr.send(m).unwrap());
        let t = thread::spawn(move || (4..=6).for_each(|m| addr.send(m).unwrap()));
        let got: Vec<u32> = (0..6).map(|_| mb.recv_blocking().unwrap()).collect();
        assert_eq!(got, [1, 2, 3, 4, 5, 6]);
        t.join().unwrap();
        assert_eq!(mb.recv_blocking(), None);
    });
}

#[test]
fn loom_mailbox_send_racing_the_receiver_parking_is_not_lost() {
    model(|| {
        let (addr, mut mb) = mailbox::<u32>();
        let t = thread::spawn(move || addr.send(7).unwrap());
        assert_eq!(mb.recv_blocking(), Some(7));
        t.join().unwrap();
        assert_eq!(mb.recv_blocking(), None);
    });
}

#[test]
fn loom_mailbox_receiver_parks_again_while_the_last_wake_runs() {
    // Each blocking receive brings a new waker. The sender that took the
    // first park may still be running the old waker when the receiver,
    // already woken, parks again with the new one: the receiver must wait
    // before it replaces the waker.
    model(|| {
        let (addr, mut mb) = mailbox::<u32>();
        let t = thread::spawn(move || {
            addr.send(1).unwrap();
            addr.send(2).unwrap();
        });
        assert_eq!(mb.recv_blocking(), Some(1));
        assert_eq!(mb.recv_blocking(), Some(2));
        t.join().unwrap();
    });
}

#[test]
fn loom_mailbox_selective_receive_woken_by_a_non_match_keeps_waiting() {
    model(|| {
        let (addr, mut mb) = mailbox::<u32>();
        let t = thread::spawn(move || {
            addr.send(1).unwrap();
            addr.send(2).unwrap();
        });
        assert_eq!(mb.recv_matching_op(|&m| m == 2).perform(), Some(2));
        assert_eq!(mb.try_recv(), Ok(1));
        t.join().unwrap();
        assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
    });
}

#[test]
fn loom_mailbox_receive_losing_a_choice_leaves_the_message() {
    // The receiver waits on its mailbox or a channel; both get a value. The
    // branch that loses must not have taken its value.
    model(|| {
        let (addr, mut mb) = mailbox::<u32>();
        let (tx, rx) = bounded::<u32>(1);
        let tm = thread::spawn(move || {
            addr.send(1).unwrap();
            addr
        });
        let tc = thread::spawn(move || {
            tx.try_send(2).unwrap();
            tx
        });
        let first = choose((
            mb.recv_op().wrap(|m| m.unwrap()),
            rx.recv_op().wrap(|v| v.unwrap()),
        ))
        .perform();
        let _addr = tm.join().unwrap();
        let _tx = tc.join().unwrap();
        let second = match first {
            1 => rx.try_recv().unwrap(),
            2 => mb.try_recv().unwrap(),
            other => panic!("received {other}"),
        };
        assert_eq!(first + second, 3);
    });
}

#[test]
fn loom_semaphore_release_racing_a_blocked_acquire() {
    model(|| {
        let sem = crate::loom::Arc::new(Semaphore::new(0));
        let s2 = sem.clone();
        let t = thread::spawn(move || s2.release(1));
        sem.acquire_blocking().unwrap().forget();
        t.join().unwrap();
        assert_eq!(sem.available_permits(), 0);
    });
}

#[test]
fn loom_semaphore_two_blocked_acquires_each_get_a_release() {
    // Two acquires block (or not) while two releases come from the main
    // thread: `WAITING` must stay set while either record is queued, or a
    // release skips the queue and a waiter sleeps for good.
    model(|| {
        let sem = crate::loom::Arc::new(Semaphore::new(0));
        let (s1, s2) = (sem.clone(), sem.clone());
        let t1 = thread::spawn(move || s1.acquire_blocking().unwrap().forget());
        let t2 = thread::spawn(move || s2.acquire_blocking().unwrap().forget());
        sem.release(1);
        sem.release(1);
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(sem.available_permits(), 0);
    });
}

#[test]
fn loom_semaphore_acquire_future_racing_two_releases() {
    // The future of `acquire` looks at the count first and builds its
    // perform only when it finds no permit; two releases race both looks.
    // Each of the two acquires ends with one permit, none is left over.
    model(|| {
        let sem = crate::loom::Arc::new(Semaphore::new(0));
        let (s1, s2) = (sem.clone(), sem.clone());
        let t1 = thread::spawn(move || s1.release(1));
        let t2 = thread::spawn(move || s2.release(1));
        crate::block_on(sem.acquire()).unwrap().forget();
        crate::block_on(sem.acquire()).unwrap().forget();
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(sem.available_permits(), 0);
    });
}

#[test]
fn loom_semaphore_acquire_losing_a_choice_keeps_no_permit() {
    // A blocked acquire in a choice with a channel receive; a permit and a
    // value arrive at once. Whichever branch wins, the permits add up.
    model(|| {
        let sem = crate::loom::Arc::new(Semaphore::new(0));
        let (tx, rx) = bounded::<u32>(1);
        let s2 = sem.clone();
        let tr = thread::spawn(move || s2.release(1));
        let tc = thread::spawn(move || {
            tx.try_send(5).unwrap();
            tx
        });
        let acquired = choose((
            sem.acquire_op().wrap(|p| {
                p.unwrap().forget();
                true
            }),
            rx.recv_op().wrap(|_| false),
        ))
        .perform();
        tr.join().unwrap();
        let _tx = tc.join().unwrap();
        let expected = if acquired { 0 } else { 1 };
        assert_eq!(sem.available_permits(), expected);
    });
}

#[test]
fn loom_link_racing_a_death_signals_once() {
    // A link is made while the other side dies: the death finds it in the
    // link list (made before the death, or while it ran: drained after the
    // exit is published), or the link sees the published exit and signals
    // itself. Exactly one signal either way.
    model(|| {
        let (a, mut ma) = mailbox::<crate::ExitSignal>();
        ma.trap_exits(|s| s);
        let (b, mb) = mailbox::<()>();
        let b_id = b.id();
        let t = thread::spawn(move || drop(mb)); // b's death (closed)
        a.link(&b);
        t.join().unwrap();
        let s = ma.try_recv().expect("the death was signalled");
        assert_eq!((s.from, s.exit), (b_id, crate::Exit::Closed));
        assert_eq!(ma.try_recv(), Err(TryRecvError::Empty));
    });
}

#[test]
fn loom_exit_seen_after_the_links_are_signalled() {
    // A mailbox's exit is published only after its death signalled its
    // links: whoever sees the exit finds the signal already queued, and a
    // link made while the death runs is signalled once, after it.
    model(|| {
        let (a, mut ma) = mailbox::<crate::ExitSignal>();
        ma.trap_exits(|s| s);
        let (late, mut ml) = mailbox::<crate::ExitSignal>();
        ml.trap_exits(|s| s);
        let (b, mb) = mailbox::<()>();
        a.link(&b);
        let t = thread::spawn(move || drop(mb)); // b's death (closed)
        late.link(&b);
        // Seen the exit: the signal is there already.
        let early = b
            .try_exited()
            .map(|_| ma.try_recv().expect("signalled first"));
        t.join().unwrap();
        let signal = match early {
            Some(s) => s,
            None => ma.try_recv().expect("the death was signalled"),
        };
        assert_eq!(signal.exit, crate::Exit::Closed);
        assert_eq!(ml.try_recv().map(|s| s.exit), Ok(crate::Exit::Closed));
        assert_eq!(ma.try_recv(), Err(TryRecvError::Empty));
        assert_eq!(ml.try_recv(), Err(TryRecvError::Empty));
        assert!(crate::loom::lock(&b.inner.ctl).links.is_empty());
    });
}

#[test]
fn loom_link_racing_both_deaths() {
    // Both sides die while they are linked: whatever the order, no deadlock
    // (the link takes both locks, each death only its own), no signal
    // reaches a dead side, and the link lists (which hold each other's
    // mailbox) are emptied, so nothing leaks.
    model(|| {
        let (a, ma) = mailbox::<()>();
        let (b, mb) = mailbox::<()>();
        let t = thread::spawn(move || drop(mb));
        a.link(&b);
        drop(ma);
        t.join().unwrap();
        assert_eq!(a.try_exited(), Some(crate::Exit::Closed));
        assert_eq!(b.try_exited(), Some(crate::Exit::Closed));
        assert!(crate::loom::lock(&a.inner.ctl).links.is_empty());
        assert!(crate::loom::lock(&b.inner.ctl).links.is_empty());
    });
}

#[test]
fn loom_kill_racing_the_tasks_first_park() {
    // An actor task registers its waker at its first `Pending` poll and
    // then looks at the kill; a kill sets the kill and then wakes the
    // registered waker. Either the task sees the kill, or the kill wakes it.
    use crate::loom::{AtomicUsize, Ordering};
    use std::sync::Arc as StdArc;
    use std::task::{Wake, Waker};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: StdArc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    model(|| {
        let addr = super::supervised_addr::<()>();
        let killer = addr.clone();
        let count = StdArc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let t = thread::spawn(move || killer.kill());
        let saw_kill = addr.inner.register_task_waker(&waker);
        t.join().unwrap();
        let woken = count.0.load(Ordering::SeqCst);
        assert!(saw_kill || woken == 1, "a kill went unnoticed");
        assert_eq!(addr.inner.take_kill(), Some(crate::Exit::Killed));
    });
}

#[test]
fn loom_mailbox_recv_future_racing_a_send_and_the_last_address() {
    // `Mailbox::recv` (the plain future, not an op) parks with the task's
    // waker and checks for a disconnection only after its park failed: a
    // send followed by the drop of the last address, racing it, must give
    // the message, then `None`, and never leave the receiver parked for
    // good.
    model(|| {
        let (addr, mut mb) = mailbox::<u32>();
        let t = thread::spawn(move || {
            addr.send(7).unwrap();
            drop(addr);
        });
        assert_eq!(crate::block_on(mb.recv()), Some(7));
        assert_eq!(crate::block_on(mb.recv()), None);
        t.join().unwrap();
    });
}
