//! Mailboxes: order, addresses, disconnection and closing, receives as ops
//! in choices (cancel safety), selective receive, bounded mailboxes with
//! back-pressure, actors and their exits, and mailboxes used from OS threads
//! and other executors.

mod common;

use common::{
    DropCount, WakeCounter, drive_after_first_poll, poll_noop, poll_with, tokio_mt, wait_until,
};
use fibra::time::after;
use fibra::{
    Addr, BoxOp, Exit, Mailbox, Op, RecvTimeoutError, Runtime, SendError, TryRecvError,
    TrySendError, always, bounded, bounded_mailbox, channel, choose, choose_biased, mailbox,
};
use std::collections::HashSet;
use std::future::IntoFuture;
use std::hash::{BuildHasher, RandomState};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(30);

/// Everything left in the mailbox now, in order.
fn drain<M>(mb: &mut Mailbox<M>) -> Vec<M> {
    std::iter::from_fn(|| mb.try_recv().ok()).collect()
}

fn flavours() -> Vec<(&'static str, Runtime)> {
    vec![
        (
            "multi-thread",
            Runtime::builder().workers(2).build().unwrap(),
        ),
        (
            "current-thread",
            Runtime::builder().current_thread().build().unwrap(),
        ),
    ]
}

// ----- basics ------------------------------------------------------------------

#[test]
fn messages_are_received_in_the_order_they_were_sent() {
    let (addr, mut mb) = mailbox::<u32>();
    for i in 0..100 {
        addr.send(i).unwrap();
    }
    assert_eq!(mb.len(), 100);
    assert!(!mb.is_empty());
    assert_eq!(drain(&mut mb), (0..100).collect::<Vec<_>>());
    assert!(mb.is_empty());
    assert_eq!(mb.try_recv(), Err(TryRecvError::Empty));
    // Interleaved with receives, and through every receive form.
    let sent: Vec<u32> = (0..10).flat_map(|i| [i, i + 100]).collect();
    fibra::block_on(async {
        for i in 0..10 {
            addr.send(sent[2 * i]).unwrap();
            addr.send(sent[2 * i + 1]).unwrap();
            assert_eq!(mb.recv().await, Some(sent[i]));
        }
        for &want in &sent[10..15] {
            assert_eq!(mb.recv_op().await, Some(want));
        }
    });
    assert_eq!(mb.recv_blocking(), Some(sent[15]));
    assert_eq!(mb.recv_op().try_perform().ok(), Some(Some(sent[16])));
    assert_eq!(mb.len(), 3);
    assert_eq!(drain(&mut mb), sent[17..]);
}

#[test]
fn a_mailbox_sends_to_itself_through_mb_addr() {
    let (addr, mut mb) = mailbox::<&str>();
    addr.send("from outside").unwrap();
    let me = mb.addr();
    assert_eq!(me, addr, "mb.addr() names the same mailbox");
    me.send("to self").unwrap();
    assert_eq!(mb.try_recv(), Ok("from outside"));
    assert_eq!(mb.try_recv(), Ok("to self"));
    // The new address counts: the mailbox stays connected through it.
    drop(addr);
    assert_eq!(mb.try_recv(), Err(TryRecvError::Empty));
    drop(me);
    assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
    // An actor counting down by sending to itself.
    let got = fibra::run(async {
        let (reply, mut answers) = mailbox::<u32>();
        let actor = fibra::spawn_actor(move |mut mb: Mailbox<u32>| async move {
            let me = mb.addr();
            let mut steps = 0;
            while let Some(n) = mb.recv().await {
                steps += 1;
                if n == 0 {
                    break;
                }
                me.send(n - 1).unwrap();
            }
            reply.send(steps).unwrap();
        });
        actor.send(5).unwrap();
        assert_eq!(actor.exited().await, Exit::Normal);
        answers.recv().await
    });
    assert_eq!(got, Some(6));
}

#[test]
fn addresses_are_equal_hash_alike_and_print_alike_exactly_when_they_name_one_mailbox() {
    let (a, mb_a) = mailbox::<u8>();
    let (b, _mb_b) = mailbox::<u8>();
    let a2 = a.clone();
    let a3 = mb_a.addr();
    assert_eq!(a, a2);
    assert_eq!(a, a3);
    assert_ne!(a, b);
    assert_ne!(a2, b);
    let hasher = RandomState::new();
    assert_eq!(hasher.hash_one(&a), hasher.hash_one(&a2));
    assert_eq!(hasher.hash_one(&a), hasher.hash_one(&a3));
    // An address hashes by identity, which its interior mutability (the
    // mailbox's state) never changes.
    #[allow(clippy::mutable_key_type)]
    let set: HashSet<Addr<u8>> = [a.clone(), a2.clone(), a3.clone(), b.clone()]
        .into_iter()
        .collect();
    assert_eq!(set.len(), 2);
    assert!(set.contains(&a3) && set.contains(&b));
    let (da, db) = (format!("{a:?}"), format!("{b:?}"));
    assert!(da.starts_with("Addr(0x") && da.ends_with(')'), "{da}");
    assert_eq!(da, format!("{a2:?}"));
    assert_eq!(da, format!("{a3}"), "Display is Debug");
    assert_ne!(da, db);
    // Clones are working addresses of the same mailbox.
    let mut mb_a = mb_a;
    a2.send(1).unwrap();
    a3.send(2).unwrap();
    assert_eq!(drain(&mut mb_a), [1, 2]);
    // The identity is stable for the mailbox's life, closed or not.
    drop(mb_a);
    assert_eq!(format!("{a:?}"), da);
    assert_eq!(a, a2);
}

#[test]
fn send_after_the_mailbox_is_dropped_returns_the_message() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (addr, mb) = mailbox::<DropCount>();
    addr.send(DropCount::new(1, &drops)).unwrap();
    assert!(!addr.is_closed());
    assert_eq!(addr.try_exited(), None);
    drop(mb);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the message inside was dropped with the mailbox"
    );
    assert!(addr.is_closed());
    assert_eq!(addr.try_exited(), Some(Exit::Closed));
    match addr.send(DropCount::new(2, &drops)) {
        Err(TrySendError::Disconnected(m)) => assert_eq!(m.value, 2),
        other => panic!("{other:?}"),
    }
    match addr.send_op(DropCount::new(3, &drops)).perform() {
        Err(SendError(m)) => assert_eq!(m.value, 3),
        Ok(()) => panic!("sent to a dropped mailbox"),
    }
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    // A full bounded mailbox reports Disconnected, not Full, once dropped.
    let (addr, mb) = bounded_mailbox::<u32>(1);
    addr.send(1).unwrap();
    assert_eq!(addr.send(2), Err(TrySendError::Full(2)));
    drop(mb);
    assert_eq!(addr.send(3), Err(TrySendError::Disconnected(3)));
    assert_eq!(addr.send_op(4).perform(), Err(SendError(4)));
}

#[test]
fn send_to_an_actor_that_ended_normally_or_by_panic_returns_the_message() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    let h = rt.handle();
    let normal = h.spawn_actor(|mut mb: Mailbox<String>| async move {
        mb.recv().await;
    });
    normal.send("first".into()).unwrap();
    assert_eq!(fibra::block_on(normal.exited()), Exit::Normal);
    assert!(normal.is_closed());
    assert_eq!(
        normal.send("late".into()),
        Err(TrySendError::Disconnected("late".into()))
    );
    assert_eq!(
        normal.send_op("later".into()).perform(),
        Err(SendError("later".into()))
    );

    let crashing = h.spawn_actor(|mut mb: Mailbox<String>| async move {
        let m = mb.recv().await.unwrap();
        panic!("crashed on {m}");
    });
    crashing.send("poison".into()).unwrap();
    match fibra::block_on(crashing.exited()) {
        Exit::Panicked(msg) => assert!(msg.contains("crashed on poison"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert!(crashing.is_closed());
    assert_eq!(
        crashing.send("late".into()),
        Err(TrySendError::Disconnected("late".into()))
    );
    // The runtime survived the panic.
    assert_eq!(rt.block_on(async { 1 + 1 }), 2);
}

#[test]
fn messages_in_and_past_the_first_block_are_each_received_or_dropped_once() {
    // A mailbox's first block lives in its own allocation, later ones are
    // allocated (31 messages a block): receive part of a backlog that spans
    // blocks, at every offset, and drop the rest with the mailbox.
    for sent in [0, 1, 30, 31, 32, 62, 63, 100] {
        for received in [0, 1, 31, 32, 62] {
            let received = received.min(sent);
            let drops = Arc::new(AtomicUsize::new(0));
            let (addr, mut mb) = mailbox::<DropCount>();
            for i in 0..sent {
                addr.send(DropCount::new(i, &drops)).unwrap();
            }
            for i in 0..received {
                assert_eq!(mb.try_recv().unwrap().value, i);
            }
            assert_eq!(drops.load(Ordering::SeqCst), received as usize);
            let monitor = addr.monitor();
            drop(mb);
            assert_eq!(
                drops.load(Ordering::SeqCst),
                sent as usize,
                "{sent}/{received}"
            );
            drop(addr);
            // The monitor alone holds the mailbox now.
            assert_eq!(monitor.try_exited(), Some(Exit::Closed));
            assert_eq!(monitor.clone().try_exited(), Some(Exit::Closed));
        }
    }
}

#[test]
fn actor_mailboxes_outlive_their_runtime_and_go_on_any_thread() {
    // An actor spawned on a worker has its mailbox in that worker's memory:
    // addresses and monitors that outlive the runtime, dropped on another
    // thread, still work, and every message left in a mailbox is dropped
    // once. `[u64; 64]` messages make a mailbox too big for that memory
    // (the system allocator's then): both kinds.
    for (name, rt) in flavours() {
        let drops = Arc::new(AtomicUsize::new(0));
        let d = drops.clone();
        let (small, big) = rt.block_on(async move {
            let mut small = Vec::new();
            let mut big = Vec::new();
            for i in 0..200u64 {
                // Sent: set once all three messages are in the mailbox, so
                // the actor cannot end (closing it) before the last send.
                let sent = Arc::new(fibra::IVar::new());
                let sent2 = sent.clone();
                let a = fibra::spawn_actor(|mut mb: Mailbox<DropCount>| async move {
                    // Takes one message, leaves the rest for the drop.
                    mb.recv().await;
                    sent2.get().await;
                });
                for j in 0..3 {
                    a.send(DropCount::new(i * 3 + j, &d)).unwrap();
                }
                sent.put(()).unwrap();
                small.push(a);
                let b = fibra::spawn_actor(|mut mb: Mailbox<[u64; 64]>| async move {
                    let m = mb.recv().await.unwrap();
                    assert_eq!(m[63], 63);
                });
                b.send(std::array::from_fn(|k| k as u64)).unwrap();
                big.push(b);
            }
            for a in &small {
                assert_eq!(a.exited().await, Exit::Normal);
            }
            for b in &big {
                assert_eq!(b.exited().await, Exit::Normal);
            }
            (small, big)
        });
        drop(rt);
        let monitors: Vec<_> = small.iter().map(|a| a.monitor()).collect();
        std::thread::spawn(move || {
            for a in &small {
                assert!(
                    a.send(DropCount::new(0, &Arc::new(AtomicUsize::new(0))))
                        .is_err()
                );
            }
            drop((small, big));
        })
        .join()
        .unwrap();
        // Each mailbox's two messages left went with it (the monitors hold
        // the mailboxes, not the messages: they went with the mailbox's
        // close).
        assert_eq!(drops.load(Ordering::SeqCst), 600, "{name}");
        assert!(
            monitors
                .iter()
                .all(|m| m.try_exited() == Some(Exit::Normal))
        );
        drop(monitors);
    }
}

#[test]
fn a_monitor_outlives_the_actor_and_every_address() {
    let rt = Runtime::new().unwrap();
    let monitors = rt.block_on(async {
        let mut monitors = Vec::new();
        for n in 0..40u64 {
            let addr = fibra::spawn_actor(move |mut mb: Mailbox<u64>| async move {
                for _ in 0..n {
                    mb.recv().await.unwrap();
                }
            });
            for i in 0..n {
                addr.send(i).unwrap();
            }
            monitors.push(addr.monitor());
        }
        for m in &monitors {
            assert_eq!(m.exited().await, Exit::Normal);
        }
        monitors
    });
    drop(rt);
    assert!(
        monitors
            .iter()
            .all(|m| m.try_exited() == Some(Exit::Normal))
    );
}

#[test]
fn recv_returns_none_once_every_address_is_gone_after_what_was_sent_before() {
    let (addr, mut mb) = mailbox::<u32>();
    let addr2 = addr.clone();
    addr.send(1).unwrap();
    addr2.send(2).unwrap();
    drop(addr);
    assert_eq!(mb.try_recv(), Ok(1));
    assert_eq!(mb.try_recv(), Ok(2));
    assert_eq!(mb.try_recv(), Err(TryRecvError::Empty), "one address left");
    // A receive waiting when the last address goes: woken, it first gets the
    // message sent before the drop, then None.
    let (waker, wakes) = WakeCounter::new();
    {
        let mut recv = pin!(mb.recv());
        assert!(poll_with(recv.as_mut(), &waker).is_pending());
        std::thread::spawn(move || {
            addr2.send(3).unwrap();
            drop(addr2);
        })
        .join()
        .unwrap();
        assert!(wakes.count() >= 1, "the waiting receive was not woken");
        assert_eq!(poll_with(recv.as_mut(), &waker), Poll::Ready(Some(3)));
    }
    let (waker, wakes) = WakeCounter::new();
    assert_eq!(poll_with(pin!(mb.recv()), &waker), Poll::Ready(None));
    assert_eq!(wakes.count(), 0);
    assert_eq!(mb.recv_blocking(), None);
    assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
    // A parked receive is woken by the last drop alone (no message).
    let (addr, mut mb) = mailbox::<u32>();
    let (waker, wakes) = WakeCounter::new();
    let mut recv = pin!(mb.recv());
    assert!(poll_with(recv.as_mut(), &waker).is_pending());
    let clone = addr.clone();
    drop(addr);
    assert_eq!(wakes.count(), 0, "an address is left: no wake");
    drop(clone);
    assert!(wakes.count() >= 1, "the last address went without a wake");
    assert_eq!(poll_with(recv.as_mut(), &waker), Poll::Ready(None));
}

#[test]
fn a_message_sent_just_before_the_last_address_drops_is_never_missed() {
    // A helper thread sends one message and drops the only address while
    // the receiver looks, parks, or wakes: the message must come before
    // None, every time.
    let (work_tx, work_rx) = std::sync::mpsc::channel::<Addr<u32>>();
    let helper = std::thread::spawn(move || {
        for (i, addr) in work_rx.into_iter().enumerate() {
            if i % 3 == 0 {
                std::thread::yield_now();
            }
            addr.send(i as u32).unwrap();
        }
    });
    for i in 0..2_000u32 {
        let (addr, mut mb) = mailbox::<u32>();
        work_tx.send(addr).unwrap();
        let got = match i % 3 {
            0 => mb.recv_blocking(),
            1 => fibra::block_on(mb.recv()),
            _ => loop {
                match mb.try_recv() {
                    Ok(m) => break Some(m),
                    Err(TryRecvError::Disconnected) => break None,
                    Err(TryRecvError::Empty) => std::thread::yield_now(),
                }
            },
        };
        assert_eq!(got, Some(i), "round {i}: the message was missed");
        assert_eq!(mb.recv_blocking(), None, "round {i}");
    }
    drop(work_tx);
    helper.join().unwrap();
}

#[test]
fn try_recv_tells_empty_from_disconnected() {
    let (addr, mut mb) = mailbox::<u32>();
    assert_eq!(mb.try_recv(), Err(TryRecvError::Empty));
    addr.send(1).unwrap();
    drop(addr);
    assert_eq!(mb.try_recv(), Ok(1), "a message outlives its sender");
    assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
    // Closed with an address alive: Disconnected too.
    let (addr, mut mb) = mailbox::<u32>();
    mb.close();
    assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
    drop(addr);
}

#[test]
fn recv_timeout_times_out_receives_and_reports_disconnection() {
    let (addr, mut mb) = mailbox::<u32>();
    fibra::block_on(async {
        let t0 = Instant::now();
        assert_eq!(
            mb.recv_timeout(Duration::from_millis(20)).await,
            Err(RecvTimeoutError::Timeout)
        );
        assert!(t0.elapsed() >= Duration::from_millis(20), "woke early");
        addr.send(1).unwrap();
        assert_eq!(mb.recv_timeout(Duration::from_millis(20)).await, Ok(1));
        // (A message arriving while it waits: see the next test.)
        // A message sent after a timeout is not lost.
        assert_eq!(
            mb.recv_timeout(Duration::from_millis(1)).await,
            Err(RecvTimeoutError::Timeout)
        );
        addr.send(3).unwrap();
        assert_eq!(mb.recv_timeout(Duration::ZERO).await, Ok(3));
    });
    drop(addr);
    let t0 = Instant::now();
    assert_eq!(
        fibra::block_on(mb.recv_timeout(LONG)),
        Err(RecvTimeoutError::Disconnected)
    );
    assert!(t0.elapsed() < LONG / 2, "waited for the timeout");
    assert!(!RecvTimeoutError::Timeout.to_string().is_empty());
}

#[test]
fn recv_timeout_is_woken_by_a_message_that_arrives_while_it_waits() {
    const WAIT: Duration = Duration::from_secs(2);
    let (addr, mut mb) = mailbox::<u32>();
    let t0 = Instant::now();
    let a = addr.clone();
    let got = drive_after_first_poll(mb.recv_timeout(WAIT), move |pending| {
        assert!(pending);
        a.send(1).unwrap();
    });
    assert_eq!(got, Ok(1), "slept through the message");
    assert!(
        t0.elapsed() < WAIT / 2,
        "woken by the timer, not the message"
    );
    // The same through the public combinator, and for a selective receive.
    let a = addr.clone();
    let got = drive_after_first_poll(
        fibra::time::timeout(mb.recv_matching_op(|m| *m == 3), WAIT).into_future(),
        move |pending| {
            assert!(pending);
            a.send(2).unwrap();
            a.send(3).unwrap();
        },
    );
    assert_eq!(got, Ok(Some(3)), "slept through the match");
    assert!(
        t0.elapsed() < WAIT / 2,
        "woken by the timer, not the message"
    );
    assert_eq!(mb.try_recv(), Ok(2));
}

#[test]
fn close_fails_later_sends_but_keeps_queued_messages_receivable() {
    let (addr, mut mb) = mailbox::<u32>();
    addr.send(1).unwrap();
    addr.send(2).unwrap();
    assert_eq!(addr.try_exited(), None);
    mb.close();
    assert!(addr.is_closed());
    assert_eq!(addr.try_exited(), Some(Exit::Closed));
    assert_eq!(fibra::block_on(addr.exited()), Exit::Closed);
    assert_eq!(addr.send(3), Err(TrySendError::Disconnected(3)));
    assert_eq!(addr.send_op(4).perform(), Err(SendError(4)));
    assert_eq!(mb.addr().send(5), Err(TrySendError::Disconnected(5)));
    // A monitor waiting when another plain mailbox is dropped.
    let (other, other_mb) = mailbox::<u32>();
    let watcher = {
        let other = other.clone();
        let (polled_tx, polled_rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            drive_after_first_poll(other.exited(), |pending| polled_tx.send(pending).unwrap())
        });
        assert!(polled_rx.recv().unwrap());
        t
    };
    drop(other_mb);
    assert_eq!(watcher.join().unwrap(), Exit::Closed);
    mb.close(); // twice: harmless
    assert_eq!(mb.len(), 2);
    assert_eq!(mb.try_recv_matching(|m| *m == 2), Some(2));
    assert_eq!(fibra::block_on(mb.recv()), Some(1));
    // Closed and empty: over, although an address is alive.
    assert_eq!(fibra::block_on(mb.recv()), None);
    assert_eq!(mb.recv_blocking(), None);
    assert_eq!(fibra::block_on(mb.recv_matching(|_| true)), None);
    assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
    assert_eq!(
        fibra::block_on(mb.recv_timeout(LONG)),
        Err(RecvTimeoutError::Disconnected)
    );
    drop(addr);
}

// ----- recv_op in choices -----------------------------------------------------------

#[derive(Debug, PartialEq)]
enum Got<T> {
    Mail(Option<u32>),
    Other(T),
}

#[test]
fn recv_op_in_a_choice_with_a_channel_commits_the_ready_branch_only() {
    let (addr, mut mb) = mailbox::<u32>();
    let (tx, rx) = bounded::<&str>(1);
    // Only the channel is ready.
    tx.try_send("chan").unwrap();
    let got = choose((
        mb.recv_op().wrap(Got::Mail),
        rx.recv_op().wrap(|r| Got::Other(r.unwrap())),
    ))
    .perform();
    assert_eq!(got, Got::Other("chan"));
    // Only the mailbox is ready.
    addr.send(1).unwrap();
    let got = choose((
        mb.recv_op().wrap(Got::Mail),
        rx.recv_op().wrap(|r| Got::Other(r.unwrap())),
    ))
    .perform();
    assert_eq!(got, Got::Mail(Some(1)));
    // Both ready, the channel preferred: the message stays.
    addr.send(2).unwrap();
    tx.try_send("chan2").unwrap();
    let got = choose_biased((
        rx.recv_op().wrap(|r| Got::Other(r.unwrap())),
        mb.recv_op().wrap(Got::Mail),
    ))
    .perform();
    assert_eq!(got, Got::Other("chan2"));
    assert_eq!(mb.try_recv(), Ok(2));
}

#[test]
fn a_waiting_recv_op_whose_choice_another_branch_won_leaves_the_message_in_place() {
    let (addr, mut mb) = mailbox::<u32>();
    let (tx, rx) = channel::<&str>();
    addr.send(0).unwrap();
    assert_eq!(mb.try_recv(), Ok(0));
    let (waker, wakes) = WakeCounter::new();
    {
        let mut fut = pin!(
            choose((
                mb.recv_op().wrap(Got::Mail),
                rx.recv_op().wrap(|r| Got::Other(r.unwrap())),
            ))
            .into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        // A message arrives (the perform is woken to look again), but before
        // it looks a sender commits the channel branch.
        addr.send(1).unwrap();
        addr.send(2).unwrap();
        assert!(wakes.count() >= 1, "the parked receive was not woken");
        tx.try_send("chan").unwrap();
        assert_eq!(
            poll_with(fut.as_mut(), &waker),
            Poll::Ready(Got::Other("chan"))
        );
    }
    assert_eq!(drain(&mut mb), [1, 2], "the losing receive took a message");
    // The other way round: the mailbox wins; the channel branch's record is
    // gone (a rendezvous send finds nobody).
    {
        let mut fut = pin!(
            choose((
                mb.recv_op().wrap(Got::Mail),
                rx.recv_op().wrap(|r| Got::Other(r.unwrap())),
            ))
            .into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        addr.send(3).unwrap();
        assert_eq!(
            poll_with(fut.as_mut(), &waker),
            Poll::Ready(Got::Mail(Some(3)))
        );
    }
    assert_eq!(tx.try_send("nobody"), Err(TrySendError::Full("nobody")));
    assert_eq!(mb.try_recv(), Err(TryRecvError::Empty));
}

/// A waker that runs `hook` each time it is cloned (skipping nested
/// clones): a perform clones its waker while it parks a mailbox receive,
/// between the receive's first look and its last, so the hook can change
/// the world exactly there.
fn clone_hook_waker(hook: impl FnMut() + Send + 'static) -> std::task::Waker {
    use std::sync::Mutex;
    use std::task::{RawWaker, RawWakerVTable, Waker};
    type Hook = Mutex<Box<dyn FnMut() + Send>>;
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop_by_ref, noop);
    unsafe fn clone(data: *const ()) -> RawWaker {
        // SAFETY: `data` is an `Arc<Hook>` owned by a live waker.
        let hook = unsafe { &*data.cast::<Hook>() };
        if let Ok(mut h) = hook.try_lock() {
            h();
        }
        // SAFETY: as above; the new waker owns one more count.
        unsafe { Arc::increment_strong_count(data.cast::<Hook>()) };
        RawWaker::new(data, &VTABLE)
    }
    unsafe fn noop(data: *const ()) {
        // SAFETY: wake and drop release the count this waker owned.
        drop(unsafe { Arc::from_raw(data.cast::<Hook>()) });
    }
    unsafe fn noop_by_ref(_: *const ()) {}
    let hook: Arc<Hook> = Arc::new(Mutex::new(Box::new(hook)));
    // SAFETY: the vtable keeps the Arc's count as the RawWaker contract asks.
    unsafe { Waker::from_raw(RawWaker::new(Arc::into_raw(hook).cast(), &VTABLE)) }
}

#[test]
fn a_receive_that_finds_a_message_but_loses_the_commit_puts_it_back_in_place() {
    for selective in [false, true] {
        let (addr, mut mb) = mailbox::<u32>();
        let (tx, rx) = channel::<()>();
        let fired = Arc::new(AtomicUsize::new(0));
        // Once the channel branch is published, the hook commits it and
        // sends two messages: the mailbox branch, parking, then finds a
        // message but cannot commit.
        let waker = {
            let (addr, fired) = (addr.clone(), fired.clone());
            clone_hook_waker(move || {
                if fired.load(Ordering::SeqCst) == 0 && tx.try_send(()).is_ok() {
                    fired.store(1, Ordering::SeqCst);
                    addr.send(10).unwrap();
                    addr.send(11).unwrap();
                }
            })
        };
        let got = {
            let mail = if selective {
                mb.recv_matching_op(|m| *m == 11).boxed()
            } else {
                mb.recv_op().boxed()
            };
            let mut fut = pin!(
                choose_biased((
                    rx.recv_op().wrap(|r| Got::Other(r.is_ok())),
                    mail.wrap(Got::Mail),
                ))
                .into_future()
            );
            common::spin_poll(fut.as_mut(), &waker)
        };
        assert_eq!(fired.load(Ordering::SeqCst), 1, "the hook never ran");
        assert_eq!(got, Got::Other(true), "selective {selective}");
        assert_eq!(drain(&mut mb), [10, 11], "selective {selective}");
    }
}

#[test]
fn recv_op_in_a_choice_with_a_timeout() {
    let (addr, mut mb) = mailbox::<u32>();
    // Empty: the timer wins, not early.
    let t0 = Instant::now();
    let got = choose((
        mb.recv_op().wrap(Got::Mail),
        after(Duration::from_millis(10)).wrap(|()| Got::Other(())),
    ))
    .perform();
    assert_eq!(got, Got::Other(()));
    assert!(t0.elapsed() >= Duration::from_millis(10));
    // A message sent now is there for the next receive.
    addr.send(1).unwrap();
    // Both ready, the timer preferred: the message stays.
    let got = choose_biased((
        after(Duration::ZERO).wrap(|()| Got::Other(())),
        mb.recv_op().wrap(Got::Mail),
    ))
    .perform();
    assert_eq!(got, Got::Other(()));
    assert_eq!(mb.len(), 1);
    // Ready message against a long timer: the message.
    let got = choose((
        mb.recv_op().wrap(Got::Mail),
        after(LONG).wrap(|()| Got::Other(())),
    ))
    .perform();
    assert_eq!(got, Got::Mail(Some(1)));
    // A message arriving from a thread while the choice waits.
    let (polled_tx, polled_rx) = std::sync::mpsc::channel();
    let a = addr.clone();
    let sender = std::thread::spawn(move || {
        polled_rx.recv().unwrap();
        a.send(2).unwrap();
    });
    let got = drive_after_first_poll(
        choose((
            mb.recv_op().wrap(Got::Mail),
            after(LONG).wrap(|()| Got::Other(())),
        ))
        .into_future(),
        |pending| {
            assert!(pending);
            polled_tx.send(()).unwrap();
        },
    );
    assert_eq!(got, Got::Mail(Some(2)));
    sender.join().unwrap();
    // Disconnected while waiting: None wins over the timer.
    let got = drive_after_first_poll(
        choose((
            mb.recv_op().wrap(Got::Mail),
            after(LONG).wrap(|()| Got::Other(())),
        ))
        .into_future(),
        |pending| {
            assert!(pending);
            drop(addr);
        },
    );
    assert_eq!(got, Got::Mail(None));
}

#[test]
fn recv_op_in_a_choice_with_a_join() {
    #[derive(Debug, PartialEq)]
    enum Ev {
        Mail(Option<u32>),
        Joined(Option<u32>),
    }
    fibra::run(async {
        let (addr, mut mb) = mailbox::<u32>();
        let (go_tx, go_rx) = channel::<()>();
        let task = fibra::spawn(async move {
            go_rx.recv().await.unwrap();
            7
        });
        // The task waits: the message wins.
        addr.send(1).unwrap();
        let ev = choose((
            mb.recv_op().wrap(Ev::Mail),
            task.join_op().wrap(|r| Ev::Joined(r.ok())),
        ))
        .await;
        assert_eq!(ev, Ev::Mail(Some(1)));
        // Both wait; the task ends first: the join wins (committed while the
        // receive was parked), and a message sent later is still there.
        let joiner = async {
            choose((
                mb.recv_op().wrap(Ev::Mail),
                task.join_op().wrap(|r| Ev::Joined(r.ok())),
            ))
            .await
        };
        let releaser = async {
            fibra::yield_now().await;
            go_tx.send(()).await.unwrap();
        };
        let (ev, ()) = futures::join!(joiner, releaser);
        assert_eq!(ev, Ev::Joined(Some(7)));
        addr.send(2).unwrap();
        assert_eq!(mb.recv().await, Some(2));
        // A finished task and a waiting message, the join preferred: the
        // message stays.
        let done = fibra::spawn(async { 8 });
        while !done.is_finished() {
            fibra::yield_now().await;
        }
        addr.send(3).unwrap();
        let ev = choose_biased((
            done.join_op().wrap(|r| Ev::Joined(r.ok())),
            mb.recv_op().wrap(Ev::Mail),
        ))
        .await;
        assert_eq!(ev, Ev::Joined(Some(8)));
        assert_eq!(mb.try_recv(), Ok(3));
    });
}

#[test]
fn dropping_a_pending_recv_loses_nothing() {
    let (addr, mut mb) = mailbox::<u32>();
    // Dropped after it was woken, before it looked again.
    let (waker, wakes) = WakeCounter::new();
    {
        let mut recv = pin!(mb.recv());
        assert!(poll_with(recv.as_mut(), &waker).is_pending());
        addr.send(1).unwrap();
        assert!(wakes.count() >= 1);
        addr.send(2).unwrap();
    }
    // Dropped before anything arrived.
    {
        let mut recv = pin!(mb.recv_matching(|m| *m > 100));
        assert!(poll_noop(recv.as_mut()).is_pending());
    }
    addr.send(3).unwrap();
    assert_eq!(drain(&mut mb), [1, 2, 3]);
    // The next receive is the one woken: no stale registration.
    let (waker, wakes) = WakeCounter::new();
    let mut recv = pin!(mb.recv());
    assert!(poll_with(recv.as_mut(), &waker).is_pending());
    addr.send(4).unwrap();
    assert!(wakes.count() >= 1, "a dropped receive left a stale waker");
    assert_eq!(poll_with(recv.as_mut(), &waker), Poll::Ready(Some(4)));
}

#[test]
fn a_recv_dropped_by_tokio_timeout_or_select_loses_nothing() {
    const N: u32 = 3_000;
    let rt = tokio_mt();
    let (addr, mut mb) = mailbox::<u32>();
    let received = Arc::new(AtomicUsize::new(0));
    let sender = {
        let received = received.clone();
        std::thread::spawn(move || {
            for i in 0..N {
                addr.send(i).unwrap();
                if i % 64 == 63 {
                    // Let the receiver catch up and wait on an empty mailbox
                    // for longer than its timeouts.
                    wait_until("the receiver caught up", LONG, || {
                        received.load(Ordering::SeqCst) > i as usize
                    });
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        })
    };
    let (got, cancelled) = rt.block_on(async move {
        let mut got = Vec::new();
        let mut cancelled = 0;
        for round in 0u32.. {
            let r = match round % 4 {
                // Zero timeout: a pending receive is dropped at once.
                0 => tokio::time::timeout(Duration::ZERO, mb.recv()).await.ok(),
                1 => tokio::time::timeout(Duration::from_millis(1), mb.recv())
                    .await
                    .ok(),
                // select! with a branch that is always ready: the receive is
                // polled first, then dropped if it was pending.
                2 => tokio::select! {
                    biased;
                    r = mb.recv() => Some(r),
                    () = std::future::ready(()) => None,
                },
                _ => {
                    let recv = pin!(mb.recv());
                    match futures::future::select(recv, pin!(tokio::task::yield_now())).await {
                        futures::future::Either::Left((r, _)) => Some(r),
                        futures::future::Either::Right(_) => None,
                    }
                }
            };
            match r {
                Some(Some(v)) => {
                    got.push(v);
                    received.fetch_add(1, Ordering::SeqCst);
                }
                Some(None) => break,
                None => cancelled += 1,
            }
        }
        (got, cancelled)
    });
    sender.join().unwrap();
    assert_eq!(got, (0..N).collect::<Vec<_>>(), "lost or reordered");
    assert!(
        cancelled > 0,
        "no receive was cancelled: the test tested nothing"
    );
}

#[test]
fn a_recv_dropped_by_futures_select_loses_nothing() {
    let (addr, mut mb) = mailbox::<u32>();
    let (tx, rx) = bounded::<()>(1);
    futures::executor::block_on(async {
        use futures::FutureExt;
        for i in 0..100u32 {
            // The other branch is ready: the receive is polled, then dropped.
            tx.try_send(()).unwrap();
            futures::select_biased! {
                m = mb.recv().fuse() => panic!("nothing was sent, got {m:?}"),
                r = rx.recv().fuse() => r.unwrap(),
            }
            addr.send(i).unwrap();
            // Now the message is ready and the other branch is not.
            futures::select! {
                m = mb.recv().fuse() => assert_eq!(m, Some(i)),
                _ = rx.recv().fuse() => panic!("nothing on the channel"),
            }
        }
    });
    assert_eq!(mb.try_recv(), Err(TryRecvError::Empty));
}

// ----- selective receive -----------------------------------------------------------

#[test]
fn selective_receive_takes_the_first_match_and_keeps_the_rest_in_order() {
    let (addr, mut mb) = mailbox::<u32>();
    for i in 0..20 {
        addr.send(i).unwrap();
    }
    assert_eq!(mb.try_recv_matching(|m| m % 5 == 3), Some(3));
    assert_eq!(mb.try_recv_matching(|m| m % 5 == 3), Some(8));
    assert_eq!(mb.try_recv_matching(|m| *m > 100), None);
    assert_eq!(fibra::block_on(mb.recv_matching(|m| m % 5 == 3)), Some(13));
    // Messages that arrive after a selective receive looked come after the
    // ones it skipped.
    addr.send(20).unwrap();
    addr.send(21).unwrap();
    assert_eq!(mb.recv_matching_op(|m| *m == 20).perform(), Some(20));
    assert_eq!(mb.len(), 18);
    let want: Vec<u32> = (0..22).filter(|m| ![3, 8, 13, 20].contains(m)).collect();
    assert_eq!(drain(&mut mb), want);
}

#[test]
fn a_selective_receive_that_loses_a_choice_leaves_every_message_in_order() {
    let (addr, mut mb) = mailbox::<u32>();
    for i in 0..10 {
        addr.send(i).unwrap();
    }
    // Nothing matches: it examines everything, then the timer wins.
    let mut calls = 0;
    let got = choose((
        mb.recv_matching_op(|m| {
            calls += 1;
            *m == 99
        })
        .wrap(Got::Mail),
        after(Duration::from_millis(5)).wrap(|()| Got::Other(())),
    ))
    .perform();
    assert_eq!(got, Got::Other(()));
    assert!(calls >= 10, "only {calls} messages examined");
    // A match arrives while it waits, but a channel sender commits the
    // choice first.
    let (tx, rx) = channel::<&str>();
    let (waker, _wakes) = WakeCounter::new();
    {
        let mut fut = pin!(
            choose((
                mb.recv_matching_op(|m| *m == 99).wrap(Got::Mail),
                rx.recv_op().wrap(|r| Got::Other(r.unwrap())),
            ))
            .into_future()
        );
        assert!(poll_with(fut.as_mut(), &waker).is_pending());
        addr.send(10).unwrap();
        addr.send(99).unwrap();
        addr.send(11).unwrap();
        tx.try_send("chan").unwrap();
        assert_eq!(
            poll_with(fut.as_mut(), &waker),
            Poll::Ready(Got::Other("chan"))
        );
    }
    // Both ready, the other branch preferred.
    let got = choose_biased((
        always(Got::Other("always")),
        mb.recv_matching_op(|m| *m == 99).wrap(Got::Mail),
    ))
    .perform();
    assert_eq!(got, Got::Other("always"));
    let mut want: Vec<u32> = (0..11).collect();
    want.extend([99, 11]);
    assert_eq!(drain(&mut mb), want);
}

#[test]
fn a_panicking_predicate_loses_no_message() {
    let (addr, mut mb) = mailbox::<u32>();
    for i in 0..10 {
        addr.send(i).unwrap();
    }
    // In try_recv_matching.
    let r = catch_unwind(AssertUnwindSafe(|| {
        mb.try_recv_matching(|m| {
            assert!(*m != 6, "predicate panics on 6");
            *m == 8
        })
    }));
    assert!(r.is_err());
    assert_eq!(mb.len(), 10);
    // In an op's first look.
    let r = catch_unwind(AssertUnwindSafe(|| {
        mb.recv_matching_op(|m| {
            assert!(*m != 3, "predicate panics on 3");
            false
        })
        .perform()
    }));
    assert!(r.is_err());
    // In a parked receive woken by the poisonous message.
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut fut = pin!(mb.recv_matching(|m| {
            assert!(*m != 100, "predicate panics on 100");
            false
        }));
        assert!(poll_noop(fut.as_mut()).is_pending());
        addr.send(100).unwrap();
        addr.send(101).unwrap();
        let _ = poll_noop(fut.as_mut());
    }));
    assert!(r.is_err());
    let mut want: Vec<u32> = (0..10).collect();
    want.extend([100, 101]);
    assert_eq!(drain(&mut mb), want);
    // The mailbox still works: a blocked receive is woken by a send.
    let a = addr.clone();
    let got = drive_after_first_poll(mb.recv(), move |pending| {
        assert!(pending);
        a.send(7).unwrap();
    });
    assert_eq!(got, Some(7));
}

#[test]
fn a_blocked_selective_receive_skips_non_matching_arrivals_and_takes_the_match() {
    let (addr, mut mb) = mailbox::<u32>();
    let examined = Arc::new(AtomicUsize::new(0));
    let receiver = {
        let examined = examined.clone();
        std::thread::spawn(move || {
            let m = mb
                .recv_matching_op(|m| {
                    examined.fetch_add(1, Ordering::SeqCst);
                    *m == 1000
                })
                .perform();
            (m, mb)
        })
    };
    for i in 0..5 {
        addr.send(i).unwrap();
        wait_until("the receive examined the message", LONG, || {
            examined.load(Ordering::SeqCst) > i as usize
        });
        assert!(!receiver.is_finished(), "took non-matching message {i}");
    }
    addr.send(1000).unwrap();
    addr.send(5).unwrap();
    let (m, mut mb) = receiver.join().unwrap();
    assert_eq!(m, Some(1000));
    assert_eq!(drain(&mut mb), [0, 1, 2, 3, 4, 5]);
}

/// Sends `n` non-matching messages and then one matching one to a selective
/// receive that waits on another thread; `lockstep` sends each only after
/// the receive examined the previous one (so each arrives while it waits).
/// Returns how many times the predicate ran.
fn predicate_calls(n: usize, lockstep: bool) -> usize {
    let (addr, mut mb) = mailbox::<usize>();
    let calls = Arc::new(AtomicUsize::new(0));
    let receiver = {
        let calls = calls.clone();
        std::thread::spawn(move || {
            let got = fibra::block_on(mb.recv_matching(|m| {
                calls.fetch_add(1, Ordering::SeqCst);
                *m == usize::MAX
            }));
            assert_eq!(got, Some(usize::MAX));
            assert_eq!(mb.len(), n, "non-matching messages went missing");
        })
    };
    for i in 0..n {
        addr.send(i).unwrap();
        if lockstep {
            wait_until("the receive examined the message", LONG, || {
                calls.load(Ordering::SeqCst) > i
            });
        }
    }
    addr.send(usize::MAX).unwrap();
    receiver.join().unwrap();
    calls.load(Ordering::SeqCst)
}

#[test]
fn a_waiting_selective_receive_examines_each_message_once() {
    const N: usize = 1_000;
    for lockstep in [true, false] {
        let calls = predicate_calls(N, lockstep);
        assert!(
            (N + 1..=N + 3).contains(&calls),
            "lockstep {lockstep}: {calls} predicate calls for {} messages (re-examining)",
            N + 1
        );
    }
    // An actor on the runtime doing the same, fed by a task.
    let calls = fibra::run(async {
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let actor = fibra::spawn_actor(move |mut mb: Mailbox<usize>| async move {
            let got = mb
                .recv_matching(|m| {
                    c.fetch_add(1, Ordering::SeqCst);
                    *m == usize::MAX
                })
                .await;
            assert_eq!(got, Some(usize::MAX));
        });
        for i in 0..N {
            actor.send(i).unwrap();
            fibra::yield_now().await;
        }
        actor.send(usize::MAX).unwrap();
        assert_eq!(actor.exited().await, Exit::Normal);
        count.load(Ordering::SeqCst)
    });
    assert!(
        (N + 1..=N + 3).contains(&calls),
        "actor: {calls} predicate calls for {} messages",
        N + 1
    );
}

// ----- bounded mailboxes ---------------------------------------------------------

#[test]
fn a_full_bounded_mailbox_refuses_send_and_hands_the_message_back() {
    let (addr, mut mb) = bounded_mailbox::<u32>(2);
    addr.send(1).unwrap();
    addr.send(2).unwrap();
    assert_eq!(addr.send(3), Err(TrySendError::Full(3)));
    assert_eq!(mb.len(), 2);
    match addr.send_op(4).try_perform() {
        Ok(r) => panic!("sent to a full mailbox: {r:?}"),
        Err(op) => assert_eq!(op.into_value(), 4),
    }
    // A selective receive makes room too.
    assert_eq!(mb.try_recv_matching(|m| *m == 2), Some(2));
    addr.send(5).unwrap();
    assert_eq!(addr.send(6), Err(TrySendError::Full(6)));
    assert_eq!(mb.try_recv(), Ok(1));
    assert_eq!(fibra::block_on(mb.recv()), Some(5));
    // Room is given back once per message taken: exactly `capacity` again.
    addr.send(7).unwrap();
    addr.send_op(8).perform().unwrap();
    assert_eq!(addr.send(9), Err(TrySendError::Full(9)));
    assert_eq!(drain(&mut mb), [7, 8]);
}

#[test]
#[should_panic(expected = "capacity of at least 1")]
fn a_bounded_mailbox_of_capacity_zero_panics() {
    let _ = bounded_mailbox::<u32>(0);
}

#[test]
fn send_op_waits_for_room_and_completes_when_the_receiver_takes_a_message() {
    let (addr, mut mb) = bounded_mailbox::<u32>(1);
    addr.send(1).unwrap();
    let (waker, wakes) = WakeCounter::new();
    {
        let mut send = pin!(addr.send_op(2).into_future());
        assert!(poll_with(send.as_mut(), &waker).is_pending());
        assert_eq!(mb.len(), 1, "a waiting send_op delivered early");
        assert_eq!(wakes.count(), 0);
        assert_eq!(mb.try_recv(), Ok(1));
        assert!(
            wakes.count() >= 1,
            "taking a message did not wake the sender"
        );
        // The freed room belongs to the waiting send: no one barges in.
        assert_eq!(addr.send(3), Err(TrySendError::Full(3)));
        assert_eq!(poll_with(send.as_mut(), &waker), Poll::Ready(Ok(())));
    }
    assert_eq!(mb.try_recv(), Ok(2));
    // OS threads: back-pressure keeps at most `capacity` messages inside.
    let (addr, mut mb) = bounded_mailbox::<u32>(3);
    let senders: Vec<_> = (0..2)
        .map(|s| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                for i in 0..500 {
                    addr.send_op(s * 1000 + i).perform().unwrap();
                }
            })
        })
        .collect();
    drop(addr);
    let mut next = [0, 1000];
    while let Some(m) = mb.recv_blocking() {
        assert!(mb.len() <= 3, "more than the capacity inside");
        let s = (m / 1000) as usize;
        assert_eq!(m, next[s], "out of order");
        next[s] += 1;
    }
    assert_eq!(next, [500, 1500]);
    for s in senders {
        s.join().unwrap();
    }
}

#[test]
fn a_send_op_that_loses_or_is_dropped_delivers_nothing_and_keeps_no_room() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (addr, mut mb) = bounded_mailbox::<DropCount>(1);
    addr.send(DropCount::new(0, &drops)).unwrap();
    // A timeout wins.
    let t0 = Instant::now();
    let sent = choose((
        addr.send_op(DropCount::new(1, &drops)).wrap(|r| r.is_ok()),
        after(Duration::from_millis(5)).wrap(|()| false),
    ))
    .perform();
    assert!(!sent);
    assert!(t0.elapsed() >= Duration::from_millis(5));
    // The choice consumed the op: its message is dropped, not delivered
    // (there is no way to get it back out of a choice).
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(mb.len(), 1);
    // Not performed: the op gives its message back.
    match addr.send_op(DropCount::new(2, &drops)).try_perform() {
        Ok(_) => panic!("sent to a full mailbox"),
        Err(op) => assert_eq!(op.into_value().value, 2),
    }
    // Given room (the receiver took a message), then dropped before it
    // looked again: nothing delivered, and the room goes back.
    {
        let mut send = pin!(addr.send_op(DropCount::new(3, &drops)).into_future());
        assert!(poll_noop(send.as_mut()).is_pending());
        assert_eq!(mb.try_recv().unwrap().value, 0);
        assert_eq!(
            addr.send(DropCount::new(4, &drops))
                .map_err(|e| e.into_inner().value),
            Err(4)
        );
    }
    assert_eq!(mb.try_recv().map(|m| m.value), Err(TryRecvError::Empty));
    addr.send(DropCount::new(5, &drops)).unwrap();
    assert!(matches!(
        addr.send(DropCount::new(6, &drops)),
        Err(TrySendError::Full(_))
    ));
    assert_eq!(mb.try_recv().unwrap().value, 5);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        7,
        "every message dropped exactly once"
    );
}

#[test]
fn closing_a_bounded_mailbox_fails_waiting_send_ops_with_their_message() {
    for how in ["close", "drop"] {
        let (addr, mut mb) = bounded_mailbox::<u32>(1);
        addr.send(0).unwrap();
        let (waker, wakes) = WakeCounter::new();
        let mut send = Box::pin(addr.send_op(1).into_future());
        assert!(poll_with(send.as_mut(), &waker).is_pending());
        let (polled_tx, polled_rx) = std::sync::mpsc::channel();
        let threads: Vec<_> = (2..5u32)
            .map(|i| {
                let addr = addr.clone();
                let polled_tx = polled_tx.clone();
                std::thread::spawn(move || {
                    drive_after_first_poll(addr.send_op(i).into_future(), |pending| {
                        polled_tx.send(pending).unwrap()
                    })
                })
            })
            .collect();
        for _ in 0..3 {
            assert!(polled_rx.recv().unwrap(), "{how}: room in a full mailbox");
        }
        let mb = if how == "close" {
            mb.close();
            Some(mb)
        } else {
            drop(mb);
            None
        };
        assert!(wakes.count() >= 1, "{how}: the waiting send was not woken");
        assert_eq!(
            poll_with(send.as_mut(), &waker),
            Poll::Ready(Err(SendError(1)))
        );
        for (t, i) in threads.into_iter().zip(2..) {
            assert_eq!(t.join().unwrap(), Err(SendError(i)), "{how}");
        }
        if let Some(mut mb) = mb {
            assert_eq!(mb.try_recv(), Ok(0), "the queued message stays");
            assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
            assert_eq!(addr.send(9), Err(TrySendError::Disconnected(9)));
        }
    }
}

// ----- actors ----------------------------------------------------------------------

enum Counter {
    Add(u64),
    Get(fibra::Sender<u64>),
}

#[test]
fn actors_run_on_multi_thread_and_current_thread_runtimes() {
    for (name, rt) in flavours() {
        let total = rt.block_on(async move {
            let counter = fibra::spawn_actor(|mut mb: Mailbox<Counter>| async move {
                let mut total = 0;
                while let Some(msg) = mb.recv().await {
                    match msg {
                        Counter::Add(n) => total += n,
                        Counter::Get(reply) => {
                            reply.send(total).await.unwrap();
                            // (Watching `exited` needs an address, which
                            // keeps `recv` from ever yielding None.)
                            return;
                        }
                    }
                }
            });
            let adders: Vec<_> = (0..4)
                .map(|_| {
                    let counter = counter.clone();
                    fibra::spawn(async move {
                        for n in 1..=100 {
                            counter.send(Counter::Add(n)).unwrap();
                            if n % 10 == 0 {
                                fibra::yield_now().await;
                            }
                        }
                    })
                })
                .collect();
            for a in adders {
                a.await.unwrap();
            }
            let (reply, answer) = bounded(1);
            counter.send(Counter::Get(reply)).unwrap();
            let total = answer.recv().await.unwrap();
            assert_eq!(counter.exited().await, Exit::Normal, "{name}");
            total
        });
        assert_eq!(total, 4 * 5050, "{name}");
        // From outside the runtime, through its handle.
        let echo = rt
            .handle()
            .spawn_actor(|mut mb: Mailbox<(u32, Addr<u32>)>| async move {
                while let Some((n, reply)) = mb.recv().await {
                    reply.send(n + 1).unwrap();
                }
            });
        let (me, mut inbox) = mailbox();
        echo.send((41, me)).unwrap();
        let got = rt.block_on(async move {
            let got = inbox.recv().await;
            drop(echo);
            got
        });
        assert_eq!(got, Some(42), "{name}");
    }
}

#[test]
#[should_panic(expected = "outside a fibra runtime")]
fn spawn_actor_outside_a_runtime_panics() {
    let _ = fibra::spawn_actor(|mut mb: Mailbox<u32>| async move { mb.recv().await });
}

#[test]
fn exited_op_yields_normal_panicked_and_cancelled() {
    for (name, rt) in flavours() {
        let h = rt.handle();
        let normal = h.spawn_actor(|mut mb: Mailbox<u32>| async move {
            mb.recv().await;
        });
        let by_str = h.spawn_actor(|mut mb: Mailbox<u32>| async move {
            let n = mb.recv().await.unwrap();
            panic!("actor failed with {n}");
        });
        let by_other = h.spawn_actor(|mut mb: Mailbox<u32>| async move {
            mb.recv().await.unwrap();
            std::panic::panic_any(17u32);
        });
        assert_eq!(normal.try_exited(), None, "{name}");
        for a in [&normal, &by_str, &by_other] {
            a.send(5).unwrap();
        }
        let exits = rt.block_on({
            let (normal, by_str, by_other) = (normal.clone(), by_str.clone(), by_other.clone());
            async move {
                (
                    normal.exited().await,
                    by_str.exited_op().await,
                    by_other.exited().await,
                )
            }
        });
        assert_eq!(exits.0, Exit::Normal, "{name}");
        match &exits.1 {
            Exit::Panicked(msg) => assert!(msg.contains("actor failed with 5"), "{name}: {msg}"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(
            matches!(exits.2, Exit::Panicked(_)),
            "{name}: {:?}",
            exits.2
        );
        assert_eq!(by_str.try_exited(), Some(exits.1.clone()));

        // Cancelled: the runtime is dropped while the actor waits.
        let drops = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(fibra::IVar::new());
        let waiting = {
            let (drops, started) = (drops.clone(), started.clone());
            h.spawn_actor(move |mut mb: Mailbox<u32>| async move {
                let _guard = DropCount::new(0, &drops);
                started.put(()).unwrap();
                mb.recv().await;
                panic!("the actor got a message nobody sent");
            })
        };
        if name == "current-thread" {
            // Tasks run only inside block_on: let the actor start.
            let started = started.clone();
            rt.block_on(async move { started.get().await });
        }
        started.get_blocking();
        let watcher = {
            let waiting = waiting.clone();
            std::thread::spawn(move || waiting.exited_op().perform())
        };
        drop(rt);
        assert_eq!(watcher.join().unwrap(), Exit::Cancelled, "{name}");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "{name}: the body was not dropped"
        );
        assert_eq!(
            waiting.send(1),
            Err(TrySendError::Disconnected(1)),
            "{name}"
        );
    }
    // An actor that never ran (current-thread runtime never entered).
    let rt = Runtime::builder().current_thread().build().unwrap();
    let never_ran = rt.handle().spawn_actor(|mut mb: Mailbox<u32>| async move {
        mb.recv().await;
    });
    never_ran.send(1).unwrap();
    assert_eq!(never_ran.try_exited(), None);
    drop(rt);
    assert_eq!(never_ran.try_exited(), Some(Exit::Cancelled));
    assert!(never_ran.is_closed());
}

#[test]
fn a_supervisor_chooses_between_messages_and_its_childrens_deaths() {
    #[derive(Debug)]
    enum Ev {
        Report(Option<(usize, u64)>),
        Died(usize, Exit),
    }
    const CHILDREN: usize = 6;
    for (name, rt) in flavours() {
        let (mut reports, mut exits) = rt.block_on(async {
            let (me, mut inbox) = mailbox::<(usize, u64)>();
            // Each child squares its jobs; 0 stops it, 13 crashes it.
            let children: Vec<Addr<u64>> = (0..CHILDREN)
                .map(|i| {
                    let me = me.clone();
                    fibra::spawn_actor(move |mut mb: Mailbox<u64>| async move {
                        loop {
                            let n = mb.recv().await.expect("the supervisor holds our address");
                            assert!(n != 13, "child {i} got 13");
                            if n == 0 {
                                return;
                            }
                            me.send((i, n * n)).unwrap();
                        }
                    })
                })
                .collect();
            drop(me);
            for (i, child) in children.iter().enumerate() {
                child.send(i as u64 + 1).unwrap();
                child.send(i as u64 + 20).unwrap();
                child.send(if i % 2 == 1 { 13 } else { 0 }).unwrap();
            }
            let (mut reports, mut exits) = (Vec::new(), Vec::new());
            let mut live: Vec<usize> = (0..CHILDREN).collect();
            // The inbox ends (`None`) once the last child dropped its
            // address, which it does *before* its exit is reported: from
            // then on, wait for the remaining exits only.
            let mut inbox_open = true;
            while !live.is_empty() {
                let mut ops: Vec<BoxOp<'_, Ev>> = Vec::new();
                if inbox_open {
                    ops.push(inbox.recv_op().wrap(Ev::Report).boxed());
                }
                for &i in &live {
                    ops.push(
                        children[i]
                            .exited_op()
                            .wrap(move |e| Ev::Died(i, e))
                            .boxed(),
                    );
                }
                match choose(ops).await {
                    Ev::Report(Some(r)) => reports.push(r),
                    Ev::Report(None) => inbox_open = false,
                    Ev::Died(i, e) => {
                        live.retain(|&x| x != i);
                        exits.push((i, e));
                    }
                }
            }
            // Every child is gone, and with them every address of the inbox.
            while let Some(r) = inbox.recv().await {
                reports.push(r);
            }
            (reports, exits)
        });
        reports.sort_unstable();
        let want: Vec<(usize, u64)> = (0..CHILDREN)
            .flat_map(|i| [(i, (i as u64 + 1).pow(2)), (i, (i as u64 + 20).pow(2))])
            .collect();
        assert_eq!(reports, want, "{name}");
        exits.sort_by_key(|e| e.0);
        assert_eq!(exits.len(), CHILDREN, "{name}");
        for (i, e) in exits {
            match e {
                Exit::Normal if i % 2 == 0 => {}
                Exit::Panicked(msg) if i % 2 == 1 => {
                    assert!(msg.contains(&format!("child {i} got 13")), "{name}: {msg}");
                }
                other => panic!("{name}: child {i} ended with {other:?}"),
            }
        }
    }
}

#[test]
fn an_exited_op_that_loses_a_choice_leaves_the_exit_for_later() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    rt.block_on(async {
        let child = fibra::spawn_actor(|mut mb: Mailbox<u32>| async move {
            mb.recv().await;
        });
        let got = choose((
            child.exited_op().wrap(Some),
            after(Duration::from_millis(5)).wrap(|()| None),
        ))
        .await;
        assert_eq!(got, None, "the child is alive");
        child.send(1).unwrap();
        assert_eq!(child.exited_op().await, Exit::Normal);
        // Twice, from a clone: the exit is a value, not consumed.
        assert_eq!(child.clone().exited().await, Exit::Normal);
    });
}

// ----- OS threads and other executors --------------------------------------------

/// Per-sender delivery check for messages `sender * per + seq`: each message
/// arrives once, and a plain receive gets its sender's oldest message not
/// received yet (selective receives may take later ones first).
struct Order {
    per: u64,
    got: Vec<Vec<bool>>,
    oldest: Vec<usize>,
}

impl Order {
    fn new(senders: usize, per: u64) -> Self {
        Order {
            per,
            got: vec![vec![false; per as usize]; senders],
            oldest: vec![0; senders],
        }
    }

    fn split(&self, m: u64) -> (usize, usize) {
        ((m / self.per) as usize, (m % self.per) as usize)
    }

    fn mark(&mut self, m: u64) {
        let (s, i) = self.split(m);
        assert!(!self.got[s][i], "message {m} received twice");
        self.got[s][i] = true;
    }

    fn selective(&mut self, m: u64) {
        self.mark(m);
    }

    fn plain(&mut self, m: u64) {
        let (s, i) = self.split(m);
        while self.oldest[s] < self.got[s].len() && self.got[s][self.oldest[s]] {
            self.oldest[s] += 1;
        }
        assert_eq!(i, self.oldest[s], "sender {s}: out of order");
        self.mark(m);
    }

    fn complete(&self) -> bool {
        self.got.iter().flatten().all(|&g| g)
    }
}

#[test]
fn recv_blocking_on_a_thread_gets_every_message_from_sender_threads_in_order() {
    const SENDERS: u64 = 4;
    const PER: u64 = 5_000;
    let (addr, mut mb) = mailbox::<u64>();
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                for i in 0..PER {
                    addr.send(s * PER + i).unwrap();
                }
            })
        })
        .collect();
    drop(addr);
    let receiver = std::thread::spawn(move || {
        let mut next: Vec<u64> = (0..SENDERS).map(|s| s * PER).collect();
        let mut n = 0;
        while let Some(m) = mb.recv_blocking() {
            let s = (m / PER) as usize;
            assert_eq!(m, next[s], "sender {s} out of order");
            next[s] += 1;
            n += 1;
        }
        n
    });
    for s in senders {
        s.join().unwrap();
    }
    assert_eq!(receiver.join().unwrap(), SENDERS * PER);
}

#[test]
fn a_mailbox_works_on_a_tokio_multi_thread_runtime() {
    const PER: u64 = 2_000;
    let rt = tokio_mt();
    for capacity in [None, Some(4)] {
        let (addr, mut mb) = match capacity {
            None => mailbox::<u64>(),
            Some(c) => bounded_mailbox(c),
        };
        let task_senders: Vec<_> = (0..2)
            .map(|s| {
                let addr = addr.clone();
                rt.spawn(async move {
                    for i in 0..PER {
                        addr.send_op(s * PER + i).await.unwrap();
                    }
                })
            })
            .collect();
        let thread_sender = {
            let addr = addr.clone();
            std::thread::spawn(move || {
                for i in 0..PER {
                    addr.send_op(2 * PER + i).perform().unwrap();
                }
            })
        };
        drop(addr);
        let receiver = rt.spawn(async move {
            let mut order = Order::new(3, PER);
            let mut round = 0u32;
            loop {
                round += 1;
                // Plain, selective and timed receives, all on tokio's wakers.
                let m = match round % 3 {
                    0 => mb.recv().await,
                    1 => match mb.recv_timeout(Duration::from_millis(1)).await {
                        Ok(m) => Some(m),
                        Err(RecvTimeoutError::Timeout) => continue,
                        Err(RecvTimeoutError::Disconnected) => None,
                    },
                    _ => {
                        if let Some(m) = mb.try_recv_matching(|m| m % 7 == 0) {
                            order.selective(m);
                        }
                        continue;
                    }
                };
                match m {
                    Some(m) => order.plain(m),
                    None => break,
                }
            }
            order
        });
        let order = rt.block_on(receiver).unwrap();
        assert!(order.complete(), "{capacity:?}: messages lost");
        for s in task_senders {
            rt.block_on(s).unwrap();
        }
        thread_sender.join().unwrap();
    }
}

#[test]
fn a_mailbox_works_on_futures_executors() {
    use futures::task::LocalSpawnExt;
    // Receiver in futures' block_on, senders on OS threads.
    let (addr, mut mb) = mailbox::<u32>();
    let senders: Vec<_> = (0..2)
        .map(|s| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                for i in 0..1_000 {
                    addr.send(s * 1_000 + i).unwrap();
                }
            })
        })
        .collect();
    drop(addr);
    let mut got = futures::executor::block_on(async {
        let mut got = Vec::new();
        while let Some(m) = mb.recv().await {
            got.push(m);
        }
        got
    });
    for s in senders {
        s.join().unwrap();
    }
    got.sort_unstable();
    assert_eq!(got, (0..2_000).collect::<Vec<_>>());
    // Sender and receiver as tasks of one LocalPool: back-pressure hands
    // control back and forth on a single thread.
    let (addr, mut mb) = bounded_mailbox::<u32>(2);
    let mut pool = futures::executor::LocalPool::new();
    let spawner = pool.spawner();
    let sender = spawner
        .spawn_local_with_handle(async move {
            for i in 0..1_000 {
                addr.send_op(i).await.unwrap();
            }
        })
        .unwrap();
    let receiver = spawner
        .spawn_local_with_handle(async move {
            let mut n = 0;
            while let Some(m) = mb.recv().await {
                assert_eq!(m, n);
                assert!(mb.len() <= 2);
                n += 1;
            }
            n
        })
        .unwrap();
    let n = pool.run_until(async move {
        sender.await;
        receiver.await
    });
    assert_eq!(n, 1_000);
}
