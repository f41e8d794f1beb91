//! Bounded channels: a buffer of `cap` values; sends wait while it is full.

mod common;

use common::{WakeCounter, poll_noop, poll_with};
use fibra::{Op, TryRecvError, bounded};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Duration;

#[test]
fn capacity_len_and_is_empty_track_the_buffer() {
    let (tx, rx) = bounded::<u32>(3);
    assert_eq!(tx.capacity(), Some(3));
    assert_eq!(rx.capacity(), Some(3));
    assert!(tx.is_empty() && rx.is_empty());
    for i in 0..3 {
        assert_eq!(tx.len(), i as usize);
        tx.try_send(i).unwrap();
        assert_eq!(rx.len(), i as usize + 1);
    }
    assert!(!rx.is_empty());
    rx.try_recv().unwrap();
    assert_eq!((tx.len(), rx.len()), (2, 2));
}

#[test]
fn try_send_fills_exactly_capacity_then_reports_full_with_the_value() {
    for cap in [1, 2, 5, 16] {
        let (tx, rx) = bounded::<String>(cap);
        for i in 0..cap {
            tx.try_send(i.to_string()).unwrap();
        }
        let err = tx.try_send("extra".to_string()).unwrap_err();
        assert!(err.is_full(), "cap {cap}");
        assert_eq!(err.into_inner(), "extra");
        assert_eq!(rx.len(), cap);
        // One slot frees: exactly one more fits.
        assert_eq!(rx.try_recv().unwrap(), "0");
        tx.try_send("again".to_string()).unwrap();
        assert!(tx.try_send("no".to_string()).unwrap_err().is_full());
    }
}

#[test]
fn try_recv_on_an_empty_buffer_is_empty_then_gets_values_in_fifo_order() {
    let (tx, rx) = bounded::<u32>(4);
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    for i in 0..4 {
        tx.try_send(i).unwrap();
    }
    for i in 0..4 {
        assert_eq!(rx.try_recv(), Ok(i));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn send_op_try_perform_on_a_full_buffer_gives_the_op_and_value_back() {
    let (tx, rx) = bounded::<String>(1);
    tx.send_op("a".into()).try_perform().ok().unwrap().unwrap();
    let op = tx.send_op("b".into()).try_perform().unwrap_err();
    assert_eq!(op.into_value(), "b");
    assert_eq!(rx.try_recv().unwrap(), "a");
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn interleaved_sends_and_receives_keep_fifo_order() {
    let (tx, rx) = bounded::<u32>(3);
    let mut next_send = 0;
    let mut next_recv = 0;
    // A fixed pattern wrapping around the buffer many times.
    for round in 0..200 {
        let sends = round % 4;
        for _ in 0..sends {
            if tx.try_send(next_send).is_ok() {
                next_send += 1;
            }
        }
        for _ in 0..(round % 3) {
            if let Ok(v) = rx.try_recv() {
                assert_eq!(v, next_recv);
                next_recv += 1;
            }
        }
        assert_eq!(rx.len() as u32, next_send - next_recv);
        assert!(rx.len() <= 3);
    }
}

#[test]
fn blocked_senders_enter_the_buffer_in_fifo_order_as_room_frees() {
    let (tx, rx) = bounded::<u32>(2);
    tx.try_send(0).unwrap();
    tx.try_send(1).unwrap();
    let mut sends: Vec<_> = (2..6).map(|i| Box::pin(tx.send(i))).collect();
    for s in &mut sends {
        assert!(poll_noop(s.as_mut()).is_pending());
    }
    assert_eq!(rx.len(), 2, "blocked sends are not buffered");
    // Each receive frees one slot, which the oldest blocked sender takes.
    assert_eq!(rx.try_recv(), Ok(0));
    assert_eq!(rx.len(), 2);
    assert_eq!(poll_noop(sends[0].as_mut()), Poll::Ready(Ok(())));
    assert!(poll_noop(sends[1].as_mut()).is_pending());
    for want in 1..6 {
        assert_eq!(rx.try_recv(), Ok(want));
    }
    for s in &mut sends[1..] {
        assert_eq!(poll_noop(s.as_mut()), Poll::Ready(Ok(())));
    }
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn a_sender_blocked_on_a_full_buffer_is_woken_when_room_frees() {
    let (tx, rx) = bounded::<u32>(1);
    tx.try_send(1).unwrap();
    let (waker, wakes) = WakeCounter::new();
    let mut send = pin!(tx.send(2));
    assert!(poll_with(send.as_mut(), &waker).is_pending());
    assert_eq!(wakes.count(), 0);
    assert_eq!(rx.try_recv(), Ok(1));
    assert!(wakes.count() >= 1, "blocked sender not woken");
    assert_eq!(poll_with(send.as_mut(), &waker), Poll::Ready(Ok(())));
    assert_eq!(rx.try_recv(), Ok(2));
}

#[test]
fn a_receiver_blocked_on_an_empty_buffer_is_woken_by_a_send() {
    let (tx, rx) = bounded::<u32>(4);
    let (waker, wakes) = WakeCounter::new();
    let mut recv = pin!(rx.recv());
    assert!(poll_with(recv.as_mut(), &waker).is_pending());
    tx.try_send(8).unwrap();
    assert!(wakes.count() >= 1, "blocked receiver not woken");
    assert_eq!(poll_with(recv.as_mut(), &waker), Poll::Ready(Ok(8)));
    assert_eq!(rx.len(), 0);
}

#[test]
fn send_blocking_waits_while_full_on_os_threads() {
    let (tx, rx) = bounded::<u32>(2);
    let done = Arc::new(AtomicBool::new(false));
    let t = {
        let done = done.clone();
        std::thread::spawn(move || {
            for i in 0..3 {
                tx.send_blocking(i).unwrap();
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !done.load(Ordering::SeqCst),
        "third send did not wait for room"
    );
    assert_eq!(rx.len(), 2);
    assert_eq!(rx.recv_blocking(), Ok(0));
    t.join().unwrap();
    assert!(done.load(Ordering::SeqCst));
    assert_eq!(rx.recv_blocking(), Ok(1));
    assert_eq!(rx.recv_blocking(), Ok(2));
}

#[test]
fn recv_blocking_waits_for_a_value_on_os_threads() {
    let (tx, rx) = bounded::<u32>(2);
    let t = std::thread::spawn(move || rx.recv_blocking());
    std::thread::sleep(Duration::from_millis(20));
    tx.send_blocking(4).unwrap();
    assert_eq!(t.join().unwrap(), Ok(4));
}

#[test]
fn huge_capacity_is_still_bounded() {
    let (tx, _rx) = bounded::<u8>(usize::MAX);
    assert!(
        tx.capacity().is_some(),
        "bounded(usize::MAX) must not be unbounded"
    );
}

#[test]
fn one_producer_one_consumer_preserves_order_across_threads() {
    for cap in [1, 7] {
        let (tx, rx) = bounded::<u64>(cap);
        let n = 3000;
        let t = std::thread::spawn(move || {
            for i in 0..n {
                tx.send_blocking(i).unwrap();
            }
        });
        for i in 0..n {
            assert_eq!(rx.recv_blocking(), Ok(i), "cap {cap}");
        }
        t.join().unwrap();
    }
}

fn bounded1() -> (fibra::Sender<u64>, fibra::Receiver<u64>) {
    bounded(1)
}

fn bounded8() -> (fibra::Sender<u64>, fibra::Receiver<u64>) {
    bounded(8)
}

#[test]
fn mpmc_os_threads_deliver_each_value_exactly_once() {
    common::mpmc_os_threads(bounded1, 3, 3, 1000);
    common::mpmc_os_threads(bounded8, 3, 2, 1000);
}

#[test]
fn mpmc_mixing_os_threads_and_tokio_tasks_delivers_each_value_once() {
    common::mpmc_threads_and_tasks(bounded1, 1000);
    common::mpmc_threads_and_tasks(bounded8, 1000);
}

#[test]
fn ping_pong_between_os_thread_and_tokio_task() {
    common::ping_pong_thread_and_task(bounded1, 500);
}

/// A buffered send takes a shortcut when nobody waits: it must still hand
/// the value to a receive already waiting on the empty channel, not leave
/// it in the buffer next to that receive. Each form of send, against a
/// pending `recv` future and a pending `recv_op` perform.
#[test]
fn a_send_with_room_goes_to_a_receive_already_waiting() {
    for form in 0..3 {
        for op_form in [false, true] {
            let (tx, rx) = bounded::<u32>(4);
            let (waker, woken) = WakeCounter::new();
            let mut recv: std::pin::Pin<Box<dyn std::future::Future<Output = _>>> = if op_form {
                Box::pin(std::future::IntoFuture::into_future(rx.recv_op()))
            } else {
                Box::pin(rx.recv())
            };
            assert!(poll_with(recv.as_mut(), &waker).is_pending());
            match form {
                0 => tx.send_blocking(7).unwrap(),
                1 => tx.try_send(7).unwrap(),
                _ => futures::executor::block_on(tx.send(7)).unwrap(),
            }
            let case = format!("form {form}, op {op_form}");
            assert_eq!(woken.count(), 1, "{case}");
            assert_eq!(tx.len(), 0, "{case}: the value went to the waiting receive");
            assert_eq!(poll_noop(recv.as_mut()), Poll::Ready(Ok(7)), "{case}");
        }
    }
}

/// The shortcut and the general path interleave without losing or
/// reordering anything: one producer thread sends 0..N through a small
/// buffer (its sends alternate between the shortcut, when there is room,
/// and blocking, when it is full); the receiver mixes every form of
/// receive, and each value arrives once, in order.
#[test]
fn shortcut_and_general_path_keep_fifo_order_through_a_full_buffer() {
    const N: u64 = 500;
    for cap in [1, 3, 64] {
        let (tx, rx) = bounded::<u64>(cap);
        let producer = std::thread::spawn(move || {
            for i in 0..N {
                match i % 3 {
                    0 => tx.send_blocking(i).unwrap(),
                    1 => futures::executor::block_on(tx.send(i)).unwrap(),
                    _ => {
                        let mut v = i;
                        loop {
                            match tx.try_send(v) {
                                Ok(()) => break,
                                Err(e) => v = e.into_inner(),
                            }
                            std::thread::yield_now();
                        }
                    }
                }
            }
        });
        let mut next = 0;
        while next < N {
            let got = match next % 4 {
                0 => rx.recv_blocking().unwrap(),
                1 => futures::executor::block_on(rx.recv()).unwrap(),
                2 => rx.recv_op().perform().unwrap(),
                _ => match rx.try_recv() {
                    Ok(v) => v,
                    Err(TryRecvError::Empty) => continue,
                    Err(e) => panic!("{e:?}"),
                },
            };
            assert_eq!(got, next, "cap {cap}");
            next += 1;
        }
        producer.join().unwrap();
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected), "cap {cap}");
    }
}

/// A task whose plain sends and receives always find the buffer ready never
/// waits, so only the cooperative budget can make it yield: without it the
/// other task would never run (on one thread, and on one worker).
#[test]
fn a_task_whose_buffered_sends_and_receives_are_always_ready_cannot_starve_its_worker() {
    for rt in [
        fibra::Runtime::builder().current_thread().build().unwrap(),
        fibra::Runtime::builder().workers(1).build().unwrap(),
    ] {
        let spins = rt.block_on(async {
            let flag = Arc::new(AtomicBool::new(false));
            let f = flag.clone();
            let spinner = fibra::spawn(async move {
                // Spawned by the spinner as it starts: on one thread it
                // runs only once the spinner yields.
                let setter = fibra::spawn(async move { flag.store(true, Ordering::SeqCst) });
                let (tx, rx) = bounded::<u64>(4);
                let mut spins = 0u64;
                while !f.load(Ordering::SeqCst) {
                    tx.send(spins).await.unwrap();
                    assert_eq!(rx.recv().await, Ok(spins));
                    spins += 1;
                    assert!(spins < 10_000_000, "the other task never ran");
                }
                setter.await.unwrap();
                spins
            });
            spinner.await.unwrap()
        });
        assert!(spins > 0, "the spinner ran before the flag was set");
    }
}

/// A plain send or receive that waits holds a clone of the waker (in the
/// state it builds when it publishes) and lets it go however it ends:
/// committed and polled, withdrawn by a drop, or dropped after a partner
/// committed it.
#[test]
fn a_waiting_send_or_receive_releases_its_waker_however_it_ends() {
    let (waker, counter) = WakeCounter::new();
    let base = Arc::strong_count(&counter);
    let (tx, rx) = bounded::<u64>(1);

    // A receive that waits, is committed by a send, then polled: Ready.
    let mut recv = pin!(rx.recv());
    assert!(poll_with(recv.as_mut(), &waker).is_pending());
    assert_eq!(Arc::strong_count(&counter), base + 1);
    tx.try_send(1).unwrap();
    assert_eq!(counter.count(), 1);
    assert_eq!(poll_noop(recv.as_mut()), Poll::Ready(Ok(1)));
    assert_eq!(Arc::strong_count(&counter), base);

    // A receive that waits and is dropped: withdrawn.
    {
        let mut recv = pin!(rx.recv());
        assert!(poll_with(recv.as_mut(), &waker).is_pending());
        assert_eq!(Arc::strong_count(&counter), base + 1);
    }
    assert_eq!(Arc::strong_count(&counter), base);

    // A send that waits on a full buffer, is committed by a receive (the
    // value moves into the buffer), then dropped without another poll.
    tx.try_send(2).unwrap();
    {
        let mut send = pin!(tx.send(3));
        assert!(poll_with(send.as_mut(), &waker).is_pending());
        assert_eq!(Arc::strong_count(&counter), base + 1);
        assert_eq!(rx.try_recv(), Ok(2));
    }
    assert_eq!(Arc::strong_count(&counter), base);
    assert_eq!(rx.try_recv(), Ok(3), "the committed send's value was kept");

    // A receive dropped after a send committed to it: the value goes back.
    {
        let mut recv = pin!(rx.recv());
        assert!(poll_with(recv.as_mut(), &waker).is_pending());
        tx.try_send(4).unwrap();
    }
    assert_eq!(Arc::strong_count(&counter), base);
    assert_eq!(
        rx.try_recv(),
        Ok(4),
        "the dropped receive gave its value back"
    );

    // A send polled twice while it waits keeps one clone of the waker.
    tx.try_send(5).unwrap();
    let mut send = pin!(tx.send(6));
    assert!(poll_with(send.as_mut(), &waker).is_pending());
    assert!(poll_with(send.as_mut(), &waker).is_pending());
    assert_eq!(Arc::strong_count(&counter), base + 1);
    assert_eq!(rx.try_recv(), Ok(5));
    assert_eq!(poll_noop(send.as_mut()), Poll::Ready(Ok(())));
    assert_eq!(Arc::strong_count(&counter), base);
    assert_eq!(rx.try_recv(), Ok(6));
}

/// Blocking calls on an OS thread against tasks on a runtime, both ways, at
/// capacities where the thread waits for room or for a value (first
/// without a record, then with one): every value arrives once, in order.
#[test]
fn blocking_threads_and_tasks_hand_off_every_value_in_order() {
    const N: u64 = 20_000;
    for cap in [1, 3] {
        let rt = fibra::Runtime::builder().workers(1).build().unwrap();
        // A task sends, the thread receives.
        let (tx, rx) = bounded::<u64>(cap);
        let sender = rt.spawn(async move {
            for i in 0..N {
                tx.send(i).await.unwrap();
            }
        });
        for i in 0..N {
            assert_eq!(rx.recv_blocking(), Ok(i), "cap {cap}");
        }
        assert_eq!(rx.recv_blocking(), Err(fibra::RecvError), "cap {cap}");
        rt.block_on(sender).unwrap();
        // The thread sends, a task receives.
        let (tx, rx) = bounded::<u64>(cap);
        let receiver = rt.spawn(async move {
            let mut next = 0;
            while let Ok(v) = rx.recv().await {
                assert_eq!(v, next, "cap {cap}");
                next += 1;
            }
            next
        });
        for i in 0..N {
            tx.send_blocking(i).unwrap();
        }
        drop(tx);
        assert_eq!(rt.block_on(receiver).unwrap(), N, "cap {cap}");
    }
}

/// A thread waiting in a blocking call sees the other side go, whether the
/// other side goes while the thread still spins or once it has parked.
#[test]
fn blocking_calls_see_the_other_side_go() {
    for delay in [Duration::ZERO, Duration::from_millis(20)] {
        let (tx, rx) = bounded::<u64>(1);
        let t = std::thread::spawn(move || rx.recv_blocking());
        std::thread::sleep(delay);
        drop(tx);
        assert_eq!(t.join().unwrap(), Err(fibra::RecvError), "{delay:?}");

        let (tx, rx) = bounded::<u64>(1);
        tx.send_blocking(1).unwrap();
        let t = std::thread::spawn(move || tx.send_blocking(2));
        std::thread::sleep(delay);
        drop(rx);
        assert_eq!(t.join().unwrap(), Err(fibra::SendError(2)), "{delay:?}");
    }
}
