//! Closing: the last sender going lets receivers drain then fail; the last
//! receiver going makes every send fail with its value handed back.

mod common;

use common::{DropCount, MakeChan, WakeCounter, poll_noop, poll_with};
use fibra::{
    Op, RecvError, SendError, TryRecvError, TrySendError, bounded, channel, choose, unbounded,
};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

fn flavours() -> [(&'static str, MakeChan); 4] {
    [
        ("rendezvous", channel::<u64>),
        ("bounded(1)", || bounded(1)),
        ("bounded(4)", || bounded(4)),
        ("unbounded", unbounded::<u64>),
    ]
}

type MakeStringChan = fn() -> (fibra::Sender<String>, fibra::Receiver<String>);

fn string_flavours() -> [(&'static str, MakeStringChan); 3] {
    [
        ("rendezvous", channel::<String>),
        ("bounded(2)", || bounded(2)),
        ("unbounded", unbounded::<String>),
    ]
}

// ----- dropping every sender ------------------------------------------------

#[test]
fn receivers_drain_the_buffer_then_fail_after_all_senders_drop() {
    for cap in [Some(3), None] {
        let (tx, rx) = match cap {
            Some(c) => bounded::<u32>(c),
            None => unbounded(),
        };
        for i in 0..3 {
            tx.try_send(i).unwrap();
        }
        drop(tx);
        assert!(
            !rx.is_disconnected(),
            "values are left: not disconnected yet"
        );
        assert_eq!(rx.try_recv(), Ok(0));
        assert_eq!(rx.recv_blocking(), Ok(1));
        assert_eq!(futures::executor::block_on(rx.recv()), Ok(2));
        assert!(rx.is_disconnected());
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(rx.recv_blocking(), Err(RecvError));
        assert_eq!(rx.recv_op().try_perform().ok(), Some(Err(RecvError)));
        assert_eq!(futures::executor::block_on(rx.recv()), Err(RecvError));
    }
}

#[test]
fn rendezvous_receive_fails_at_once_after_all_senders_drop() {
    let (tx, rx) = channel::<u32>();
    drop(tx);
    assert!(rx.is_disconnected());
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    assert_eq!(rx.recv_blocking(), Err(RecvError));
}

#[test]
fn the_channel_stays_open_while_any_sender_clone_lives() {
    for (name, make) in flavours() {
        let (tx, rx) = make();
        let tx2 = tx.clone();
        drop(tx);
        assert!(!rx.is_disconnected(), "{name}");
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "{name}");
        let t = std::thread::spawn(move || tx2.send_blocking(5));
        assert_eq!(rx.recv_blocking(), Ok(5), "{name}");
        t.join().unwrap().unwrap();
        assert_eq!(rx.recv_blocking(), Err(RecvError), "{name}");
    }
}

#[test]
fn receivers_blocked_on_os_threads_are_woken_when_the_last_sender_drops() {
    for (name, make) in flavours() {
        let (tx, rx) = make();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let rx = rx.clone();
                std::thread::spawn(move || rx.recv_blocking())
            })
            .collect();
        std::thread::sleep(Duration::from_millis(30));
        let tx2 = tx.clone();
        drop(tx);
        std::thread::sleep(Duration::from_millis(10));
        assert!(
            waiters.iter().all(|w| !w.is_finished()),
            "{name}: woken too early"
        );
        drop(tx2);
        for w in waiters {
            assert_eq!(w.join().unwrap(), Err(RecvError), "{name}");
        }
    }
}

#[test]
fn a_blocked_async_receiver_is_woken_by_close() {
    for (name, make) in flavours() {
        let (tx, rx) = make();
        let (waker, wakes) = WakeCounter::new();
        let mut recv = pin!(rx.recv());
        assert!(poll_with(recv.as_mut(), &waker).is_pending(), "{name}");
        drop(tx);
        assert!(
            wakes.count() >= 1,
            "{name}: close did not wake the receiver"
        );
        assert_eq!(
            poll_with(recv.as_mut(), &waker),
            Poll::Ready(Err(RecvError)),
            "{name}"
        );
    }
}

#[test]
fn a_tokio_task_waiting_to_receive_ends_when_the_senders_drop() {
    let rt = common::tokio_mt();
    let (tx, rx) = channel::<u32>();
    let task = rt.spawn(async move { rx.recv().await });
    std::thread::sleep(Duration::from_millis(20));
    drop(tx);
    assert_eq!(rt.block_on(task).unwrap(), Err(RecvError));
}

#[test]
fn a_blocked_choice_commits_the_branch_whose_channel_closed() {
    let (tx1, rx1) = channel::<u32>();
    let (_tx2, rx2) = channel::<u32>();
    let t = std::thread::spawn(move || {
        choose((
            rx1.recv_op().wrap(|r| (1, r)),
            rx2.recv_op().wrap(|r| (2, r)),
        ))
        .perform()
    });
    std::thread::sleep(Duration::from_millis(20));
    drop(tx1);
    assert_eq!(t.join().unwrap(), (1, Err(RecvError)));
}

// ----- dropping every receiver ----------------------------------------------

#[test]
fn every_send_form_returns_the_value_once_all_receivers_drop() {
    for (name, make) in string_flavours() {
        let (tx, rx) = make();
        let rx2 = rx.clone();
        drop(rx);
        assert!(!tx.is_disconnected(), "{name}: one receiver left");
        drop(rx2);
        assert!(tx.is_disconnected(), "{name}");
        let e = tx.send_blocking("blocking".into()).unwrap_err();
        assert_eq!(e.into_inner(), "blocking", "{name}");
        let e = futures::executor::block_on(tx.send("async".into())).unwrap_err();
        assert_eq!(e, SendError("async".to_string()), "{name}");
        match tx.try_send("try".into()) {
            Err(TrySendError::Disconnected(v)) => assert_eq!(v, "try", "{name}"),
            other => panic!("{name}: expected Disconnected, got {other:?}"),
        }
        let r = tx
            .send_op("op".into())
            .try_perform()
            .ok()
            .expect("decided now");
        assert_eq!(r.unwrap_err().0, "op", "{name}");
        let r = tx.send_op("perform".into()).perform();
        assert_eq!(r.unwrap_err().0, "perform", "{name}");
    }
}

#[test]
fn a_sender_blocked_on_an_os_thread_gets_its_value_back_when_receivers_drop() {
    // Rendezvous (nobody receiving) and bounded (full): the sender waits.
    for (name, make, prefill) in [
        ("rendezvous", channel::<String> as fn() -> _, 0),
        ("bounded(2)", || bounded(2), 2),
    ] {
        let (tx, rx) = make();
        for i in 0..prefill {
            tx.try_send(format!("buffered {i}")).unwrap();
        }
        let t = std::thread::spawn(move || tx.send_blocking("mine".to_string()));
        std::thread::sleep(Duration::from_millis(30));
        assert!(!t.is_finished(), "{name}: the send should be waiting");
        drop(rx);
        let err = t.join().unwrap().unwrap_err();
        assert_eq!(err.into_inner(), "mine", "{name}");
    }
}

#[test]
fn a_sender_blocked_in_async_code_gets_its_value_back_when_receivers_drop() {
    for (name, make) in string_flavours() {
        let (tx, rx) = make();
        let cap = tx.capacity().unwrap_or(0);
        if tx.capacity().is_none() {
            continue; // unbounded sends never block
        }
        for i in 0..cap {
            tx.try_send(i.to_string()).unwrap();
        }
        let (waker, wakes) = WakeCounter::new();
        let mut send = pin!(tx.send("waiting".to_string()));
        assert!(poll_with(send.as_mut(), &waker).is_pending(), "{name}");
        drop(rx);
        assert!(
            wakes.count() >= 1,
            "{name}: blocked sender not woken by close"
        );
        match poll_with(send.as_mut(), &waker) {
            Poll::Ready(Err(SendError(v))) => assert_eq!(v, "waiting", "{name}"),
            other => panic!("{name}: expected the value back, got {other:?}"),
        }
    }
}

#[test]
fn a_tokio_task_blocked_sending_gets_its_value_back_when_receivers_drop() {
    let rt = common::tokio_mt();
    let (tx, rx) = channel::<String>();
    let task = rt.spawn(async move { tx.send("from task".to_string()).await });
    std::thread::sleep(Duration::from_millis(20));
    drop(rx);
    let err = rt.block_on(task).unwrap().unwrap_err();
    assert_eq!(err.into_inner(), "from task");
}

#[test]
fn a_blocked_send_branch_in_a_choice_returns_its_value_through_the_choice() {
    let (tx, rx) = bounded::<String>(1);
    tx.try_send("full".into()).unwrap();
    let (_other_tx, other_rx) = channel::<String>();
    let t = std::thread::spawn(move || {
        choose((
            tx.send_op("branch value".to_string())
                .wrap(|r| r.map_err(|e| e.into_inner())),
            other_rx.recv_op().wrap(|_| Ok(())),
        ))
        .perform()
    });
    std::thread::sleep(Duration::from_millis(20));
    drop(rx);
    assert_eq!(t.join().unwrap(), Err("branch value".to_string()));
}

#[test]
fn buffered_values_are_dropped_not_leaked_when_the_last_receiver_goes() {
    let drops = Arc::new(AtomicUsize::new(0));
    for make in [bounded::<DropCount> as fn(usize) -> _, |_| unbounded()] {
        drops.store(0, Ordering::SeqCst);
        let (tx, rx) = make(8);
        for i in 0..5 {
            tx.try_send(DropCount::new(i, &drops)).unwrap();
        }
        let rx2 = rx.clone();
        drop(rx);
        assert_eq!(drops.load(Ordering::SeqCst), 0, "a receiver is left");
        drop(rx2);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            5,
            "buffered values leaked or double-dropped"
        );
        assert_eq!(tx.len(), 0);
        // Later sends come back and are dropped by the caller, once.
        let back = tx
            .try_send(DropCount::new(9, &drops))
            .unwrap_err()
            .into_inner();
        assert_eq!(back.value, 9);
        drop(back);
        assert_eq!(drops.load(Ordering::SeqCst), 6);
    }
}

#[test]
fn values_buffered_when_both_sides_drop_are_dropped_exactly_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    for senders_first in [true, false] {
        drops.store(0, Ordering::SeqCst);
        let (tx, rx) = unbounded();
        for i in 0..100 {
            tx.try_send(DropCount::new(i, &drops)).unwrap();
        }
        if senders_first {
            drop(tx);
            drop(rx);
        } else {
            drop(rx);
            drop(tx);
        }
        assert_eq!(
            drops.load(Ordering::SeqCst),
            100,
            "senders_first={senders_first}"
        );
    }
}

#[test]
fn a_pending_receive_is_not_confused_by_other_handles_closing() {
    // Dropping a receiver clone must not disturb another receiver's pending
    // receive, nor close the channel.
    let (tx, rx) = channel::<u32>();
    let rx2 = rx.clone();
    let mut recv = pin!(rx.recv());
    assert!(poll_noop(recv.as_mut()).is_pending());
    drop(rx2);
    assert!(!tx.is_disconnected());
    tx.try_send(1).unwrap();
    assert_eq!(poll_noop(recv.as_mut()), Poll::Ready(Ok(1)));
}
