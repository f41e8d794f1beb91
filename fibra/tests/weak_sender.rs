//! `WeakSender`: it does not keep the channel open, upgrades while a
//! strong sender lives and never after the channel closed, and an upgrade
//! racing the last sender's drop either sends or finds the channel closed.

mod common;

use fibra::{RecvError, TryRecvError, WeakSender, unbounded};
use std::time::Duration;

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn weak_senders_are_send_sync_and_clone() {
    assert_send_sync::<WeakSender<String>>();
    let (tx, _rx) = unbounded::<u8>();
    let weak = tx.downgrade();
    assert!(weak.clone().same_channel(&weak));
}

#[test]
fn a_weak_sender_does_not_keep_the_channel_open() {
    let (tx, rx) = unbounded::<u32>();
    let weak = tx.downgrade();
    assert_eq!(tx.sender_count(), 1);
    drop(tx);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    assert!(weak.upgrade().is_none());
}

#[test]
fn an_upgraded_sender_sends_and_keeps_the_channel_open_while_it_lives() {
    let (tx, rx) = unbounded::<u32>();
    let weak = tx.downgrade();
    let strong = weak.upgrade().unwrap();
    assert_eq!(tx.sender_count(), 2);
    drop(tx);
    strong.try_send(1).unwrap();
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "still open");
    drop(strong);
    assert_eq!(rx.recv_blocking(), Err(RecvError));
    assert!(weak.upgrade().is_none(), "a closed channel reopened");
}

#[test]
fn a_receiver_waiting_with_only_weak_senders_left_is_woken() {
    let (tx, rx) = unbounded::<u32>();
    let weak = tx.downgrade();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        drop(tx);
    });
    assert_eq!(rx.recv_blocking(), Err(RecvError));
    t.join().unwrap();
    drop(weak);
}

#[test]
fn stress_upgrades_racing_the_last_drop() {
    // Many rounds: a thread drops the last strong sender while another
    // upgrades and sends. Every upgrade that succeeded delivers its value;
    // after both, the channel is closed for good.
    for _ in 0..common::scaled(300) {
        let (tx, rx) = unbounded::<u32>();
        let weak = tx.downgrade();
        let dropper = std::thread::spawn(move || drop(tx));
        let upgrader = std::thread::spawn(move || {
            let sent = weak.upgrade().map(|s| s.try_send(7).unwrap()).is_some();
            (sent, weak)
        });
        dropper.join().unwrap();
        let (sent, weak) = upgrader.join().unwrap();
        if sent {
            assert_eq!(rx.try_recv(), Ok(7));
        }
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert!(weak.upgrade().is_none());
    }
}
