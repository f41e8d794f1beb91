//! Scenarios modelled on Go's channel test programs (`$GOROOT/test/chan/`),
//! written afresh against fibra: tasks on fibra's runtime where Go has
//! goroutines, `select!`/`choose` where Go has `select`, an `if false`
//! guard where Go selects on a nil channel, and `else` for `default`.

mod common;

use fibra::time::after;
use fibra::{
    Receiver, RecvError, Runtime, Sender, TryRecvError, bounded, channel, select,
    select_biased_blocking, select_blocking, unbounded,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Two workers, as Go's tests run with `GOMAXPROCS(2)`.
fn runtime() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

/// Long enough never to fire in a test that passes.
const STALL: Duration = Duration::from_secs(10);

// ----- doubleselect.go ---------------------------------------------------------

/// Go's `doubleselect.go`: a sender offers each counter value on four
/// rendezvous channels at once (a four-clause `select!` of sends); four
/// forwarders funnel the channels into one. If two send clauses of one
/// select could both commit, a value would arrive twice. Checks every value
/// arrives exactly once, and that every clause was used.
#[test]
fn doubleselect_each_value_is_sent_on_exactly_one_clause() {
    const N: u64 = 10_000;
    let rt = runtime();
    let (all, per_channel) = rt.block_on(async {
        let (txs, rxs): (Vec<Sender<u64>>, Vec<Receiver<u64>>) =
            (0..4).map(|_| channel::<u64>()).unzip();
        let sender = fibra::spawn(async move {
            let [c1, c2, c3, c4] = &txs[..] else {
                unreachable!()
            };
            for i in 0..N {
                select! {
                    r = c1.send_op(i) => r.unwrap(),
                    r = c2.send_op(i) => r.unwrap(),
                    r = c3.send_op(i) => r.unwrap(),
                    r = c4.send_op(i) => r.unwrap(),
                }
            }
            // Dropping the senders closes the four channels.
        });
        let (mux_tx, mux_rx) = channel::<u64>();
        let muxes: Vec<_> = rxs
            .into_iter()
            .map(|rx| {
                let out = mux_tx.clone();
                fibra::spawn(async move {
                    let mut n = 0;
                    while let Ok(v) = rx.recv().await {
                        out.send(v).await.unwrap();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        drop(mux_tx);
        let mut seen = vec![false; N as usize];
        let mut all = Vec::new();
        while let Ok(v) = mux_rx.recv().await {
            assert!(!seen[v as usize], "got duplicate value {v}");
            seen[v as usize] = true;
            all.push(v);
        }
        sender.await.unwrap();
        let mut per_channel = Vec::new();
        for m in muxes {
            per_channel.push(m.await.unwrap());
        }
        (all, per_channel)
    });
    common::assert_exactly_once(all, N);
    assert_eq!(per_channel.iter().sum::<u64>(), N);
    assert!(
        per_channel.iter().all(|&n| n > 0),
        "a clause never won: {per_channel:?}"
    );
}

// ----- select2.go --------------------------------------------------------------

/// Counts the bytes live that threads marked with `TRACK` allocated (and
/// freed), so a test can see whether repeated selects leak.
struct CountingAlloc;

static TRACKED: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    static TRACK: Cell<bool> = const { Cell::new(false) };
}

fn tracking() -> bool {
    TRACK.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: every method forwards to `System` unchanged and only counts.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() && tracking() {
            TRACKED.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if tracking() {
            TRACKED.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() && tracking() {
            TRACKED.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Go's `select2.go`: selects must not consume memory that they do not
/// give back. A thread runs batches of two-clause selects (a rendezvous
/// channel fed by another thread, and a dummy channel nobody sends on, whose
/// receive is withdrawn every time); after a warm-up batch, a second batch
/// must not grow the memory live on the two threads by more than a few
/// kilobytes (a record left behind per select would be megabytes).
#[test]
fn select2_repeated_selects_do_not_grow_memory() {
    const PER_BATCH: usize = 20_000;
    let (tx, rx) = channel::<u32>();
    let (_dummy_tx, dummy) = channel::<u32>();
    let barrier = Arc::new(Barrier::new(2));
    let sender = {
        let barrier = barrier.clone();
        std::thread::spawn(move || {
            TRACK.with(|t| t.set(true));
            for _batch in 0..2 {
                for _ in 0..PER_BATCH {
                    tx.send_blocking(1).unwrap();
                }
                barrier.wait(); // batch done
                barrier.wait(); // measured
            }
            TRACK.with(|t| t.set(false));
        })
    };
    let receiver = std::thread::spawn(move || {
        TRACK.with(|t| t.set(true));
        let mut live = Vec::new();
        for _batch in 0..2 {
            for _ in 0..PER_BATCH {
                select_blocking! {
                    v = rx.recv_op() => assert_eq!(v, Ok(1)),
                    _ = dummy.recv_op() => panic!("dummy"),
                }
            }
            barrier.wait();
            live.push(TRACKED.load(Ordering::SeqCst));
            barrier.wait();
        }
        TRACK.with(|t| t.set(false));
        live
    });
    sender.join().unwrap();
    let live = receiver.join().unwrap();
    let growth = live[1] - live[0];
    assert!(
        growth < 64 * 1024,
        "{PER_BATCH} selects grew live memory by {growth} bytes ({live:?})"
    );
}

// ----- select3.go --------------------------------------------------------------

/// What a select did: took the clause, or went to `else` / the timer.
#[derive(Debug, PartialEq)]
enum Took<T> {
    Clause(T),
    Else,
    Blocked,
}

/// Go's `select3.go`: which selects block and which never do. A disabled
/// clause (Go's nil channel) is never chosen; a receive from a closed
/// channel and a send with room never block; a send to a channel whose
/// receivers are gone fails at once (Go panics); a select over a not-ready
/// channel blocks (here: its timer clause fires); `else` runs only when
/// nothing is ready; and a select offering both ends of one rendezvous
/// channel does not meet itself.
#[test]
fn select3_which_selects_block_and_which_do_not() {
    let wait = || after(Duration::from_millis(20));
    let (tx, rx) = bounded::<i32>(1);
    let (closed_tx, closed_rx) = channel::<i32>();
    drop(closed_tx);
    let (orphan_tx, orphan_rx) = bounded::<i32>(1);
    drop(orphan_rx);

    // Disabled clauses are never selected, with or without other clauses.
    tx.try_send(1).unwrap();
    let t = select_blocking! {
        v = rx.recv_op(), if false => Took::Clause(v),
        r = tx.send_op(7), if false => Took::Clause(r.map(|()| 0).map_err(|_| RecvError)),
        else => Took::Else,
    };
    assert_eq!(t, Took::Else);
    let t = select_blocking! {
        v = rx.recv_op(), if false => Took::Clause(v),
        () = wait() => Took::Blocked,
    };
    assert_eq!(t, Took::Blocked, "a select of only disabled clauses blocks");
    assert_eq!(rx.try_recv(), Ok(1));

    // A send with room never blocks, inside a select or not.
    let t = select_blocking! {
        r = tx.send_op(7) => Took::Clause(r.is_ok()),
        else => Took::Else,
    };
    assert_eq!(t, Took::Clause(true));
    // And a receive with a value.
    let t = select_blocking! {
        v = rx.recv_op() => Took::Clause(v),
        else => Took::Else,
    };
    assert_eq!(t, Took::Clause(Ok(7)));

    // A receive from a closed channel never blocks, however often.
    for _ in 0..10 {
        let t = select_blocking! {
            v = closed_rx.recv_op() => Took::Clause(v),
            else => Took::Else,
        };
        assert_eq!(t, Took::Clause(Err(RecvError)));
        let t = select_blocking! {
            v = closed_rx.recv_op() => Took::Clause(v),
        };
        assert_eq!(t, Took::Clause(Err(RecvError)));
    }

    // A send to a channel nobody can receive from fails at once, value back.
    let t = select_blocking! {
        r = orphan_tx.send_op(7) => Took::Clause(r.map_err(|e| e.into_inner())),
        () = wait() => Took::Blocked,
    };
    assert_eq!(t, Took::Clause(Err(7)));

    // Receiving from a channel with nothing in it blocks.
    let t = select_blocking! {
        v = rx.recv_op() => Took::Clause(v),
        () = wait() => Took::Blocked,
    };
    assert_eq!(t, Took::Blocked);
    let (_quiet_tx, quiet) = channel::<i32>();
    let t = select_blocking! {
        v = quiet.recv_op() => Took::Clause(v),
        else => Took::Else,
    };
    assert_eq!(t, Took::Else);

    // A select does not get confused when it sees itself: both ends of one
    // rendezvous channel in one select never commit with each other.
    let (c_tx, c_rx) = channel::<i32>();
    let t = select_blocking! {
        r = c_tx.send_op(1) => Took::Clause(r.map(|()| -1).map_err(|_| RecvError)),
        v = c_rx.recv_op() => Took::Clause(v),
        () = wait() => Took::Blocked,
    };
    assert_eq!(t, Took::Blocked);
    let t = select_blocking! {
        r = c_tx.send_op(1) => Took::Clause(r.map(|()| -1).map_err(|_| RecvError)),
        v = c_rx.recv_op() => Took::Clause(v),
        else => Took::Else,
    };
    assert_eq!(t, Took::Else);
}

// ----- select4.go --------------------------------------------------------------

/// Go's `select4.go`: a select proceeds as soon as a value is ready, and
/// the clause that does not win has no effect (there, its assignment
/// target is never evaluated; here, its body never runs).
#[test]
fn select4_a_ready_value_wins_and_the_other_clause_has_no_effect() {
    let losing_bodies = AtomicUsize::new(0);
    for _ in 0..1_000 {
        let (tx, rx) = bounded::<i32>(1);
        let (_tx1, rx1) = channel::<i32>();
        tx.try_send(42).unwrap();
        let mut x = (0,);
        select_blocking! {
            _ = rx1.recv_op() => {
                losing_bodies.fetch_add(1, Ordering::SeqCst);
            }
            v = rx.recv_op() => x.0 = v.unwrap(),
        }
        assert_eq!(x.0, 42);
    }
    assert_eq!(losing_bodies.load(Ordering::SeqCst), 0);
}

// ----- select5.go --------------------------------------------------------------

/// Go's `select5.go` (a generator of single-goroutine select tests that
/// check the order of evaluation): every guard is evaluated once, in order,
/// before any op; then every enabled clause's op expression — channel
/// first, then the value to send — once, in written order, whichever clause
/// wins; disabled ones not at all. Exactly the one ready, enabled clause
/// takes effect; the others send and take nothing; without one, `else`.
/// Checked over every guard mask, every choice of ready clause, in the fair
/// and biased blocking forms and the async form.
#[test]
fn select5_order_of_evaluation_and_exactly_one_effect() {
    // Clauses 0 and 2 receive, 1 and 3 send, each on its own channel.
    const RECV: [bool; 4] = [true, false, true, false];
    for mask in 0u8..16 {
        for ready in [None, Some(0), Some(1), Some(2), Some(3)] {
            for form in 0..3 {
                let what = format!("mask {mask:04b}, ready {ready:?}, form {form}");
                let chans: Vec<(Sender<u32>, Receiver<u32>)> =
                    (0..4).map(|_| bounded::<u32>(1)).collect();
                // A receive is ready iff its channel holds a value; a send
                // iff its channel has room.
                for (i, (tx, _)) in chans.iter().enumerate() {
                    let is_ready = ready == Some(i);
                    if RECV[i] == is_ready {
                        tx.try_send(100 + i as u32).unwrap();
                    }
                }
                let log = RefCell::new(Vec::new());
                let on = |i: usize| mask & (1 << i) != 0;
                let guard = |i: usize| {
                    log.borrow_mut().push(format!("g{i}"));
                    on(i)
                };
                let tx = |i: usize| {
                    log.borrow_mut().push(format!("c{i}"));
                    &chans[i].0
                };
                let rx = |i: usize| {
                    log.borrow_mut().push(format!("c{i}"));
                    &chans[i].1
                };
                let val = |i: usize| {
                    log.borrow_mut().push(format!("v{i}"));
                    200 + i as u32
                };
                let ran = match form {
                    0 => select_blocking! {
                        v = rx(0).recv_op(), if guard(0) => { assert_eq!(v, Ok(100)); Some(0) }
                        r = tx(1).send_op(val(1)), if guard(1) => { r.unwrap(); Some(1) }
                        v = rx(2).recv_op(), if guard(2) => { assert_eq!(v, Ok(102)); Some(2) }
                        r = tx(3).send_op(val(3)), if guard(3) => { r.unwrap(); Some(3) }
                        else => None,
                    },
                    1 => select_biased_blocking! {
                        v = rx(0).recv_op(), if guard(0) => { assert_eq!(v, Ok(100)); Some(0) }
                        r = tx(1).send_op(val(1)), if guard(1) => { r.unwrap(); Some(1) }
                        v = rx(2).recv_op(), if guard(2) => { assert_eq!(v, Ok(102)); Some(2) }
                        r = tx(3).send_op(val(3)), if guard(3) => { r.unwrap(); Some(3) }
                        else => None,
                    },
                    _ => match ready.filter(|&r| on(r)) {
                        // Without `else`: only when it cannot wait forever.
                        Some(_) => fibra::block_on(async {
                            select! {
                                v = rx(0).recv_op(), if guard(0) => { assert_eq!(v, Ok(100)); Some(0) }
                                r = tx(1).send_op(val(1)), if guard(1) => { r.unwrap(); Some(1) }
                                v = rx(2).recv_op(), if guard(2) => { assert_eq!(v, Ok(102)); Some(2) }
                                r = tx(3).send_op(val(3)), if guard(3) => { r.unwrap(); Some(3) }
                            }
                        }),
                        None => continue,
                    },
                };
                let expected_log: Vec<String> = (0..4)
                    .map(|i| format!("g{i}"))
                    .chain((0..4).filter(|&i| on(i)).flat_map(|i| {
                        let mut v = vec![format!("c{i}")];
                        if !RECV[i] {
                            v.push(format!("v{i}"));
                        }
                        v
                    }))
                    .collect();
                assert_eq!(*log.borrow(), expected_log, "{what}");
                let winner = ready.filter(|&r| on(r));
                assert_eq!(ran, winner, "{what}");
                // Exactly the winner's effect.
                for (i, (_, rx)) in chans.iter().enumerate() {
                    let before = RECV[i] == (ready == Some(i)); // held a value
                    let now = !rx.is_empty();
                    let after = if winner == Some(i) { !before } else { before };
                    assert_eq!(now, after, "{what}: channel {i}");
                    if winner == Some(i) && !RECV[i] {
                        assert_eq!(rx.try_recv(), Ok(200 + i as u32), "{what}");
                    }
                }
            }
        }
    }
}

// ----- select6.go --------------------------------------------------------------

/// Go's `select6.go` (issue 2075): a select that loses on a channel where
/// other receivers wait must leave that channel's queue intact. Task A
/// waits on `c1`; task B selects on `c1` and `c2`, wins `c2` (sent by task
/// C), reports on `c3` and then waits on `c1` again. Both later sends on
/// `c1` must find a receiver (a corrupted queue would hang them).
#[test]
fn select6_a_losing_select_leaves_the_other_waiters_intact() {
    let rt = runtime();
    rt.block_on(async {
        for round in 0..300 {
            let (c1_tx, c1) = channel::<bool>();
            let (c2_tx, c2) = channel::<bool>();
            let (c3_tx, c3) = channel::<bool>();
            let a = {
                let c1 = c1.clone();
                fibra::spawn(async move { c1.recv().await.unwrap() })
            };
            let b = fibra::spawn(async move {
                select! {
                    _ = c1.recv_op() => panic!("dummy"),
                    v = c2.recv_op() => c3_tx.send(v.unwrap()).await.unwrap(),
                }
                c1.recv().await.unwrap()
            });
            let c = fibra::spawn(async move { c2_tx.send(true).await.unwrap() });
            assert_eq!(c3.recv().await, Ok(true));
            for k in 0..2 {
                let sent = fibra::time::timeout(c1_tx.send_op(true), STALL).await;
                assert!(
                    matches!(sent, Ok(Ok(()))),
                    "round {round}: send {k} on c1 found no receiver"
                );
            }
            assert!(a.await.unwrap() && b.await.unwrap());
            c.await.unwrap();
        }
    });
}

// ----- select7.go --------------------------------------------------------------

/// Go's `select7.go`: a value sent to a receiver that discards it, for
/// every pairing of three receivers (a plain receive, a one-clause select,
/// a select with a second, never-ready channel) and three senders (the
/// same three shapes). Every pairing completes, with tasks and with
/// threads, whichever side arrives first.
#[test]
fn select7_every_pairing_of_plain_and_select_sends_and_receives_completes() {
    async fn recv(kind: usize, c: &Receiver<i32>) -> i32 {
        let (_tx, never) = channel::<i32>();
        match kind {
            0 => c.recv().await.unwrap(),
            1 => select! { v = c.recv_op() => v.unwrap() },
            _ => select! {
                v = c.recv_op() => v.unwrap(),
                _ = never.recv_op() => unreachable!(),
            },
        }
    }
    async fn send(kind: usize, c: &Sender<i32>) {
        let (never, _rx) = channel::<i32>();
        match kind {
            0 => c.send(1).await.unwrap(),
            1 => select! { r = c.send_op(1) => r.unwrap() },
            _ => select! {
                r = c.send_op(1) => r.unwrap(),
                _ = never.send_op(1) => unreachable!(),
            },
        }
    }
    let rt = runtime();
    rt.block_on(async {
        for r in 0..3 {
            for s in 0..3 {
                for yields in 0..20 {
                    let (tx, rx) = channel::<i32>();
                    let receiver = fibra::spawn(async move { recv(r, &rx).await });
                    for _ in 0..yields % 4 {
                        fibra::yield_now().await;
                    }
                    send(s, &tx).await;
                    assert_eq!(receiver.await.unwrap(), 1, "recv{r} / send{s}");
                }
            }
        }
    });
    // The same pairings between OS threads (blocking forms).
    for r in 0..3 {
        for s in 0..3 {
            let (tx, rx) = channel::<i32>();
            let receiver = std::thread::spawn(move || fibra::block_on(recv(r, &rx)));
            fibra::block_on(send(s, &tx));
            assert_eq!(receiver.join().unwrap(), 1, "threads: recv{r} / send{s}");
        }
    }
}

// ----- select8.go --------------------------------------------------------------

/// Go's `select8.go`: `break` inside select bodies of one, two and three
/// clauses, with and without a default. In Go `break` leaves the select;
/// in fibra the body is a block of the enclosing function, so `break`
/// leaves the enclosing loop and nothing after it in the loop runs.
#[test]
fn select8_break_in_select_bodies_leaves_the_enclosing_loop() {
    let rt = runtime();
    let after_break = rt.block_on(async {
        let (ch_tx, ch) = channel::<i32>();
        let feeder = fibra::spawn(async move {
            // Sends 5 until nobody listens any more.
            while ch_tx.send(5).await.is_ok() {}
        });
        let mut after_break = 0;
        loop {
            select! {
                v = ch.recv_op() => if v == Ok(5) { break },
            }
            after_break += 1;
        }
        loop {
            select! {
                v = ch.recv_op() => if v == Ok(5) { break },
                else => {
                    fibra::yield_now().await;
                    continue;
                }
            }
            after_break += 1;
        }
        let (ten_tx, _ten_rx) = channel::<i32>(); // nobody receives 10
        loop {
            select! {
                v = ch.recv_op() => if v == Ok(5) { break },
                r = ten_tx.send_op(10) => panic!("unreachable: {r:?}"),
                else => {
                    fibra::yield_now().await;
                    continue;
                }
            }
            after_break += 1;
        }
        drop(ch);
        feeder.await.unwrap();
        after_break
    });
    assert_eq!(after_break, 0);
}

// ----- select.go ----------------------------------------------------------------

/// Go's `select.go`: a loop offers a value on two buffered channels and
/// turns each off (Go: sets it to nil; here: its `if` guard) once it has
/// sent, leaving by `default` (`else`) when nothing is left. Both values
/// arrive, distinct. Unlike Go, which evaluates the value expression of
/// every case, even on a nil channel (10 calls in Go's program), fibra does
/// not build a disabled clause's op: only 4 calls.
#[test]
fn select_go_guards_turn_clauses_off_after_they_fire() {
    let counter = Cell::new(0u32);
    let shift = Cell::new(0u32);
    let get_value = || {
        counter.set(counter.get() + 1);
        1u32 << shift.get()
    };
    let send = |a: Option<&Sender<u32>>, b: Option<&Sender<u32>>| {
        let (mut a, mut b) = (a, b);
        let mut i = 0;
        loop {
            select_blocking! {
                r = a.unwrap().send_op(get_value()), if a.is_some() => {
                    r.unwrap();
                    i += 1;
                    a = None;
                }
                r = b.unwrap().send_op(get_value()), if b.is_some() => {
                    r.unwrap();
                    i += 1;
                    b = None;
                }
                else => break,
            }
            shift.set(shift.get() + 1);
        }
        i
    };
    let (a_tx, a_rx) = bounded::<u32>(1);
    let (b_tx, b_rx) = bounded::<u32>(1);
    assert_eq!(send(Some(&a_tx), Some(&b_tx)), 2);
    let (av, bv) = (a_rx.try_recv().unwrap(), b_rx.try_recv().unwrap());
    assert_eq!(av | bv, 3, "bad values {av} {bv}");
    assert_eq!(send(Some(&a_tx), None), 1);
    assert_eq!(a_rx.try_recv(), Ok(4));
    assert_eq!(counter.get(), 4);
}

// ----- sieve1.go ----------------------------------------------------------------

fn first_primes(n: usize) -> Vec<u64> {
    let mut primes = Vec::new();
    let mut k = 2;
    while primes.len() < n {
        if primes.iter().all(|p| k % p != 0) {
            primes.push(k);
        }
        k += 1;
    }
    primes
}

/// Go's `sieve1.go`: the classic concurrent prime sieve, a daisy chain of
/// filter tasks on rendezvous channels. Checks the first 60 primes, then
/// tears the chain down from the end (the consumer leaves, each stage's
/// send fails and it returns) and joins every task.
#[test]
fn sieve1_daisy_chain_of_filters_and_a_clean_teardown() {
    const N: usize = 60;
    let rt = runtime();
    let got = rt.block_on(async {
        let (primes_tx, primes) = channel::<u64>();
        let sieve = fibra::spawn(async move {
            let (gen_tx, mut ch) = channel::<u64>();
            let mut stages = vec![fibra::spawn(async move {
                let mut i = 2;
                while gen_tx.send(i).await.is_ok() {
                    i += 1;
                }
            })];
            loop {
                let prime = ch.recv().await.unwrap();
                if primes_tx.send(prime).await.is_err() {
                    return stages;
                }
                let (out, next) = channel::<u64>();
                let input = std::mem::replace(&mut ch, next);
                stages.push(fibra::spawn(async move {
                    while let Ok(i) = input.recv().await {
                        if i % prime != 0 && out.send(i).await.is_err() {
                            return;
                        }
                    }
                }));
            }
        });
        let mut got = Vec::new();
        for _ in 0..N {
            got.push(primes.recv().await.unwrap());
        }
        drop(primes);
        let stages = sieve.await.unwrap();
        assert_eq!(stages.len(), N + 1);
        for s in stages {
            let joined = select! {
                r = s.join_op() => r.is_ok(),
                () = after(STALL) => false,
            };
            assert!(joined, "a stage did not end");
        }
        got
    });
    assert_eq!(got, first_primes(N));
}

// ----- sieve2.go ----------------------------------------------------------------

/// A sending proxy (sieve2.go's `sendproxy`): values sent to the returned
/// sender reach `out` in order, through a buffer that grows as needed, so
/// the sender never waits for `out`'s reader. The output clause is enabled
/// only while the buffer holds something (Go: a nil channel otherwise).
fn send_proxy(out: Sender<u64>) -> Sender<u64> {
    let (proxy_tx, proxy) = bounded::<u64>(10);
    fibra::spawn(async move {
        let mut buf = VecDeque::new();
        let mut open = true;
        while open || !buf.is_empty() {
            select! {
                v = proxy.recv_op(), if open => match v {
                    Ok(v) => buf.push_back(v),
                    Err(RecvError) => open = false,
                },
                r = out.send_op(*buf.front().unwrap()), if !buf.is_empty() => {
                    if r.is_err() {
                        return;
                    }
                    buf.pop_front();
                }
            }
        }
    });
    proxy_tx
}

/// A task sending `start, start + step, ...` on a new buffered channel.
fn counting(start: u64, step: u64, cap: usize) -> Receiver<u64> {
    let (tx, rx) = bounded(cap);
    fibra::spawn(async move {
        let mut n = start;
        while tx.send(n).await.is_ok() {
            n += step;
        }
    });
    rx
}

/// Go's `sieve2.go`: an Eratosthenes sieve over odd candidates. A merger
/// task keeps a heap of streams of odd multiples of the primes found so
/// far (each from p*p) and emits the composites in order; the sieve task
/// emits each candidate below the next composite as a prime and feeds it
/// back to the merger through a growing send proxy (a select whose send
/// clause is guarded), without which the feedback loop would deadlock.
/// Checks the first 100 primes.
#[test]
fn sieve2_eratosthenes_with_a_heap_merge_and_a_send_proxy() {
    const N: usize = 100;
    let rt = runtime();
    let got = rt.block_on(async {
        let (out_tx, out) = bounded::<u64>(10);
        let (composites_tx, composites) = bounded::<u64>(50);
        let (feedback_tx, feedback) = bounded::<u64>(10);
        feedback_tx.send(3).await.unwrap();
        // The merger: emits every odd composite in increasing order, once.
        fibra::spawn(async move {
            let mut streams: Vec<Receiver<u64>> = Vec::new();
            let mut heap: BinaryHeap<(std::cmp::Reverse<u64>, usize)> = BinaryHeap::new();
            let mut last = 0;
            while let Ok(p) = feedback.recv().await {
                let multiples = counting(p * p, 2 * p, 10);
                let head = multiples.recv().await.unwrap();
                // Everything below p*p is a multiple of a smaller prime.
                while let Some(&(std::cmp::Reverse(min), i)) = heap.peek() {
                    if min >= head {
                        break;
                    }
                    heap.pop();
                    if min != last {
                        if composites_tx.send(min).await.is_err() {
                            return;
                        }
                        last = min;
                    }
                    let next = streams[i].recv().await.unwrap();
                    heap.push((std::cmp::Reverse(next), i));
                }
                // p*p itself is next.
                if head != last {
                    if composites_tx.send(head).await.is_err() {
                        return;
                    }
                    last = head;
                }
                let next = multiples.recv().await.unwrap();
                streams.push(multiples);
                heap.push((std::cmp::Reverse(next), streams.len() - 1));
            }
        });
        // The sieve.
        fibra::spawn(async move {
            let primes = send_proxy(feedback_tx);
            out_tx.send(2).await.unwrap();
            out_tx.send(3).await.unwrap();
            let candidates = counting(5, 2, 50);
            let mut p = candidates.recv().await.unwrap();
            loop {
                let Ok(c) = composites.recv().await else {
                    return;
                };
                while p < c {
                    if primes.send(p).await.is_err() || out_tx.send(p).await.is_err() {
                        return;
                    }
                    p = candidates.recv().await.unwrap();
                }
                if p == c {
                    p = candidates.recv().await.unwrap();
                }
            }
        });
        let mut got = Vec::new();
        for _ in 0..N {
            let p = select! {
                p = out.recv_op() => p.unwrap(),
                () = after(STALL) => panic!("the sieve stalled after {got:?}"),
            };
            got.push(p);
        }
        got
    });
    // Dropping the runtime ends the endless generators.
    drop(rt);
    assert_eq!(got, first_primes(N));
}

// ----- powser1.go ---------------------------------------------------------------

/// A rational number in lowest terms, denominator positive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rat(i64, i64);

fn gcd(a: i64, b: i64) -> i64 {
    if a == 0 { b.abs() } else { gcd(b % a, a) }
}

impl Rat {
    fn new(num: i64, den: i64) -> Rat {
        let g = gcd(num, den).max(1) * den.signum();
        Rat(num / g, den / g)
    }

    fn int(n: i64) -> Rat {
        Rat(n, 1)
    }

    fn add(self, o: Rat) -> Rat {
        Rat::new(self.0 * o.1 + o.0 * self.1, self.1 * o.1)
    }

    fn mul(self, o: Rat) -> Rat {
        Rat::new(self.0 * o.0, self.1 * o.1)
    }
}

/// A coefficient, or `None`: the series ended (Go's `finis`).
type Coef = Option<Rat>;

/// The reading end of a power series: a demand-driven stream. A reader
/// sends a request, then receives one coefficient (powser1's `dch`).
struct Ps {
    req: Sender<()>,
    dat: Receiver<Coef>,
}

/// The writing end of a power series.
struct PsOut {
    req: Receiver<()>,
    dat: Sender<Coef>,
}

fn mk_ps() -> (Ps, PsOut) {
    let (req_tx, req_rx) = channel();
    let (dat_tx, dat_rx) = channel();
    (
        Ps {
            req: req_tx,
            dat: dat_rx,
        },
        PsOut {
            req: req_rx,
            dat: dat_tx,
        },
    )
}

/// Asks for and receives the next coefficient; `None` once the series ended
/// (or its producer went away: the runtime is shutting down).
async fn get(u: &Ps) -> Coef {
    u.req.send(()).await.ok()?;
    u.dat.recv().await.ok().flatten()
}

/// Waits for a request and answers it; false if the reader went away.
async fn put(z: &PsOut, c: Coef) -> bool {
    z.req.recv().await.is_ok() && z.dat.send(c).await.is_ok()
}

/// One coefficient from each of two series, asking and receiving on both
/// concurrently (powser1's `getn`: a select whose clauses are switched on
/// and off as the exchange progresses).
async fn get2(u: &Ps, v: &Ps) -> (Coef, Coef) {
    let mut asked = [false; 2];
    let mut got: [Option<Coef>; 2] = [None, None];
    while got[0].is_none() || got[1].is_none() {
        select! {
            r = u.req.send_op(()), if !asked[0] => { r.unwrap(); asked[0] = true }
            r = v.req.send_op(()), if !asked[1] => { r.unwrap(); asked[1] = true }
            c = u.dat.recv_op(), if asked[0] && got[0].is_none() => got[0] = Some(c.unwrap()),
            c = v.dat.recv_op(), if asked[1] && got[1].is_none() => got[1] = Some(c.unwrap()),
        }
    }
    (got[0].unwrap(), got[1].unwrap())
}

/// Serves `z` from `f`'s coefficients, one per request, until the reader
/// leaves.
fn produce<F, Fut>(f: F) -> Ps
where
    F: FnOnce(PsOut) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (ps, out) = mk_ps();
    fibra::spawn(f(out));
    ps
}

/// Copies `u` to `z`.
async fn copy(u: &Ps, z: &PsOut) {
    while z.req.recv().await.is_ok() {
        let c = get(u).await;
        if z.dat.send(c).await.is_err() {
            return;
        }
    }
}

/// The constant series c, c, c, ...
fn rep(c: Rat) -> Ps {
    produce(move |z| async move { while put(&z, Some(c)).await {} })
}

/// A polynomial: the given coefficients, then the end.
fn poly(cs: Vec<Rat>) -> Ps {
    produce(move |z| async move {
        for c in cs {
            if !put(&z, Some(c)).await {
                return;
            }
        }
        while put(&z, None).await {}
    })
}

fn add(u: Ps, v: Ps) -> Ps {
    produce(move |z| async move {
        while z.req.recv().await.is_ok() {
            let c = match get2(&u, &v).await {
                (Some(a), Some(b)) => Some(a.add(b)),
                (Some(a), None) => {
                    if z.dat.send(Some(a)).await.is_ok() {
                        copy(&u, &z).await;
                    }
                    return;
                }
                (None, Some(b)) => {
                    if z.dat.send(Some(b)).await.is_ok() {
                        copy(&v, &z).await;
                    }
                    return;
                }
                (None, None) => None,
            };
            if z.dat.send(c).await.is_err() {
                return;
            }
        }
    })
}

fn cmul(c: Rat, u: Ps) -> Ps {
    produce(move |z| async move {
        while z.req.recv().await.is_ok() {
            let v = get(&u).await.map(|x| c.mul(x));
            if z.dat.send(v).await.is_err() {
                return;
            }
        }
    })
}

/// The derivative: drops the constant term, multiplies term i by i.
fn diff(u: Ps) -> Ps {
    produce(move |z| async move {
        if z.req.recv().await.is_err() {
            return;
        }
        let mut c = get(&u).await.and(Some(()));
        let mut i = 1;
        loop {
            let v = match c {
                Some(()) => get(&u).await.map(|x| Rat::int(i).mul(x)),
                None => None,
            };
            c = v.map(|_| ());
            if z.dat.send(v).await.is_err() || z.req.recv().await.is_err() {
                return;
            }
            i += 1;
        }
    })
}

/// The integral with constant term `c`.
fn integ(c: Rat, u: Ps) -> Ps {
    produce(move |z| async move {
        if !put(&z, Some(c)).await {
            return;
        }
        let mut i = 1;
        while z.req.recv().await.is_ok() {
            let v = get(&u).await.map(|x| Rat::new(1, i).mul(x));
            if z.dat.send(v).await.is_err() {
                return;
            }
            i += 1;
        }
    })
}

/// Copies `input` to two readers that may read at different rates. One
/// task serves both: it accepts requests from either reader, asks the input
/// for the next coefficient when a reader wants one that is not buffered
/// yet, and answers each reader from its own queue — all in one select,
/// each clause enabled only when it makes sense, so a reader is served
/// while the input is still being asked.
fn split_into(input: Ps, outs: [PsOut; 2]) {
    fibra::spawn(async move {
        let [o0, o1] = &outs;
        let mut queues: [VecDeque<Coef>; 2] = [VecDeque::new(), VecDeque::new()];
        let mut wants = [false; 2];
        let mut asking = false; // a request to `input` is out
        let mut asked = false; // ... and was accepted
        loop {
            let need = (0..2).any(|i| wants[i] && queues[i].is_empty());
            select! {
                r = o0.req.recv_op(), if !wants[0] => match r {
                    Ok(()) => wants[0] = true,
                    Err(_) => return,
                },
                r = o1.req.recv_op(), if !wants[1] => match r {
                    Ok(()) => wants[1] = true,
                    Err(_) => return,
                },
                r = o0.dat.send_op(*queues[0].front().unwrap()), if wants[0] && !queues[0].is_empty() => {
                    if r.is_err() { return; }
                    queues[0].pop_front();
                    wants[0] = false;
                }
                r = o1.dat.send_op(*queues[1].front().unwrap()), if wants[1] && !queues[1].is_empty() => {
                    if r.is_err() { return; }
                    queues[1].pop_front();
                    wants[1] = false;
                }
                r = input.req.send_op(()), if need && !asking => {
                    if r.is_err() { return; }
                    asking = true;
                    asked = true;
                }
                c = input.dat.recv_op(), if asked => {
                    let Ok(c) = c else { return };
                    asking = false;
                    asked = false;
                    queues[0].push_back(c);
                    queues[1].push_back(c);
                }
            }
        }
    });
}

fn split(input: Ps) -> [Ps; 2] {
    let (a, a_out) = mk_ps();
    let (b, b_out) = mk_ps();
    split_into(input, [a_out, b_out]);
    [a, b]
}

/// The product: with U = u + xU' and V = v + xV',
/// UV = uv + x(uV' + vU') + x²U'V'.
fn mul(u: Ps, v: Ps) -> Ps {
    produce(move |z| async move {
        if z.req.recv().await.is_err() {
            return;
        }
        let (Some(a), Some(b)) = get2(&u, &v).await else {
            while z.dat.send(None).await.is_ok() && z.req.recv().await.is_ok() {}
            return;
        };
        if z.dat.send(Some(a.mul(b))).await.is_err() {
            return;
        }
        let [uu0, uu1] = split(u);
        let [vv0, vv1] = split(v);
        let w = add(cmul(a, vv0), cmul(b, uu0));
        if z.req.recv().await.is_err() {
            return;
        }
        let first = get(&w).await;
        if z.dat.send(first).await.is_err() {
            return;
        }
        copy(&add(w, mul(uu1, vv1)), &z).await;
    })
}

/// exp(U) for U with constant term 0: Z = 1 + ∫ Z·U', with Z fed back into
/// its own definition through a split.
fn exp(u: Ps) -> Ps {
    let (z0, z0_out) = mk_ps();
    let (z1, z1_out) = mk_ps();
    split_into(integ(Rat::int(1), mul(z0, diff(u))), [z0_out, z1_out]);
    z1
}

async fn take(u: &Ps, n: usize) -> Vec<Coef> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(get(u).await);
    }
    v
}

fn ints(ns: &[i64]) -> Vec<Coef> {
    ns.iter().map(|&n| Some(Rat::int(n))).collect()
}

/// Go's `powser1.go` (McIlroy's power series, smaller): series as
/// demand-driven streams of coefficients, one task per operator. `get2`
/// and `split` are selects whose clauses are switched on and off by
/// guards; multiplication builds new operators as it goes, and `exp` feeds
/// its own output back through a split. Checks the coefficients of 1/(1-x)
/// sums, products, derivative, integral, a finite polynomial plus a series,
/// and exp(x/(1-x)) against the values in Go's program.
#[test]
fn powser1_power_series_as_demand_driven_streams() {
    let rt = runtime();
    rt.block_on(async {
        let ones = || rep(Rat::int(1));
        let twos = || rep(Rat::int(2));
        assert_eq!(take(&ones(), 5).await, ints(&[1; 5]));
        assert_eq!(take(&add(ones(), twos()), 5).await, ints(&[3; 5]));
        assert_eq!(
            take(&add(ones(), cmul(Rat::int(-1), twos())), 5).await,
            ints(&[-1; 5])
        );
        assert_eq!(
            take(&diff(ones()), 10).await,
            ints(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        );
        let mut integral = vec![Some(Rat::int(0))];
        integral.extend((1..10).map(|i| Some(Rat::new(1, i))));
        assert_eq!(take(&integ(Rat::int(0), ones()), 10).await, integral);
        // A finite series ends; added to an endless one, the rest is copied.
        assert_eq!(
            take(&poly(vec![Rat::int(1), Rat::int(2), Rat::int(3)]), 5).await,
            [ints(&[1, 2, 3]), vec![None, None]].concat()
        );
        assert_eq!(
            take(&add(poly(vec![Rat::int(1), Rat::int(2)]), ones()), 5).await,
            ints(&[2, 3, 1, 1, 1])
        );
        assert_eq!(
            take(&diff(poly(vec![Rat::int(5), Rat::int(3), Rat::int(4)])), 4).await,
            [ints(&[3, 8]), vec![None, None]].concat()
        );
        // 1/(1-x)² = 1 + 2x + 3x² + ...
        assert_eq!(
            take(&mul(ones(), ones()), 10).await,
            ints(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        );
        let [s0, s1] = split(ones());
        assert_eq!(take(&s0, 3).await, ints(&[1; 3]));
        assert_eq!(take(&s1, 5).await, ints(&[1; 5]));
        assert_eq!(take(&s0, 2).await, ints(&[1; 2]));
        // exp(1 + x + x² + ...), constant term ignored: Go's expected values.
        let e = [
            (1, 1),
            (1, 1),
            (3, 2),
            (13, 6),
            (73, 24),
            (167, 40),
            (4051, 720),
            (37633, 5040),
            (43817, 4480),
            (4596553, 362880),
        ];
        let exp_task = fibra::spawn(async move { take(&exp(rep(Rat::int(1))), 10).await });
        let got = select! {
            got = exp_task.join_op() => got.unwrap(),
            () = after(STALL) => panic!("exp stalled"),
        };
        assert_eq!(
            got,
            e.iter()
                .map(|&(n, d)| Some(Rat::new(n, d)))
                .collect::<Vec<_>>()
        );
    });
}

// ----- nonblock.go --------------------------------------------------------------

/// One value of each kind for [`nonblock_case`].
async fn nonblock_case<T>(buffer: usize, to_recv: T, to_send: T)
where
    T: Clone + PartialEq + std::fmt::Debug + Send + 'static,
{
    let deadline = Instant::now() + STALL;
    let (c_tx, c) = bounded::<T>(buffer);
    let (sync_tx, sync) = channel::<bool>();

    // Nothing to receive: `else`.
    let t = select! {
        v = c.recv_op() => Some(v),
        else => None,
    };
    assert_eq!(t, None, "buffer {buffer}: received from an empty channel");

    // A receiver task; a non-blocking send succeeds once it is there
    // (rendezvous) or at once (buffered).
    let receiver = {
        let (c, sync_tx, want) = (c.clone(), sync_tx.clone(), to_recv.clone());
        fibra::spawn(async move {
            assert_eq!(c.recv().await, Ok(want));
            sync_tx.send(true).await.unwrap();
        })
    };
    let mut tries = 0;
    loop {
        select! {
            r = c_tx.send_op(to_recv.clone()) => { r.unwrap(); break }
            else => {
                tries += 1;
                assert!(Instant::now() < deadline, "buffer {buffer}: no receiver came");
                fibra::yield_now().await;
            }
        }
    }
    if buffer > 0 {
        assert_eq!(tries, 0, "a send with room waited");
    }
    assert_eq!(sync.recv().await, Ok(true));
    receiver.await.unwrap();

    // A sender task; a non-blocking receive succeeds once it is there.
    let sender = {
        let (c_tx, sync_tx, v) = (c_tx.clone(), sync_tx.clone(), to_send.clone());
        fibra::spawn(async move {
            c_tx.send(v).await.unwrap();
            sync_tx.send(true).await.unwrap();
        })
    };
    if buffer > 0 {
        assert_eq!(sync.recv().await, Ok(true));
    }
    let got = loop {
        select! {
            v = c.recv_op() => break v.unwrap(),
            else => {
                assert!(Instant::now() < deadline, "buffer {buffer}: no sender came");
                fibra::yield_now().await;
            }
        }
    };
    assert_eq!(got, to_send);
    if buffer == 0 {
        assert_eq!(sync.recv().await, Ok(true));
    }
    sender.await.unwrap();
}

/// Go's `nonblock.go`: non-blocking sends and receives (a select with a
/// default) on unbuffered and buffered channels of several types: nothing
/// is taken from an empty channel, a non-blocking send to a rendezvous
/// channel succeeds once a receiver waits (retried until then), and a
/// buffered send with room succeeds at once.
#[test]
fn nonblock_sends_and_receives_with_else_on_several_types() {
    let rt = runtime();
    rt.block_on(async {
        for buffer in 0..2 {
            nonblock_case::<i32>(buffer, 123, 234).await;
            nonblock_case::<i64>(buffer, 123_456, 234_567).await;
            nonblock_case::<bool>(buffer, true, true).await;
            nonblock_case::<String>(buffer, "hello".into(), "hello again".into()).await;
            nonblock_case::<()>(buffer, (), ()).await;
            nonblock_case::<[u8; 0]>(buffer, [], []).await;
            nonblock_case::<[u64; 32]>(buffer, [7; 32], [9; 32]).await;
        }
    });
}

// ----- fifo.go ------------------------------------------------------------------

/// Go's `fifo.go`: a buffered channel delivers in send order; and a chain
/// of tasks, each waiting for its predecessor's token before receiving
/// from one shared rendezvous channel, receives 0, 1, 2, ... in order.
#[test]
fn fifo_buffered_and_rendezvous_channels_deliver_in_order() {
    const N: u64 = 100;
    let (tx, rx) = bounded::<u64>(N as usize);
    for i in 0..N {
        tx.try_send(i).unwrap();
    }
    for i in 0..N {
        assert_eq!(rx.try_recv(), Ok(i), "bad receive");
    }
    let rt = runtime();
    rt.block_on(async {
        let (ch_tx, ch) = channel::<u64>();
        let (start, mut token) = channel::<()>();
        let mut links = Vec::new();
        for i in 0..N {
            let (out, next) = channel::<()>();
            let (input, ch) = (std::mem::replace(&mut token, next), ch.clone());
            links.push(fibra::spawn(async move {
                input.recv().await.unwrap();
                assert_eq!(ch.recv().await, Ok(i), "out of order");
                out.send(()).await.unwrap();
            }));
        }
        start.send(()).await.unwrap();
        for i in 0..N {
            ch_tx.send(i).await.unwrap();
        }
        assert_eq!(token.recv().await, Ok(()));
        for l in links {
            l.await.unwrap();
        }
    });
}

// ----- goroutines.go ------------------------------------------------------------

/// Go's `goroutines.go`: ten thousand tasks threaded together by rendezvous
/// channels, each passing one value from its right to its left; a value
/// put in at the right end comes out at the left, and every task ends.
#[test]
fn goroutines_ten_thousand_tasks_in_a_chain() {
    const N: usize = 10_000;
    let rt = runtime();
    rt.block_on(async {
        let (leftmost_tx, leftmost) = channel::<u32>();
        let mut left = leftmost_tx;
        let mut tasks = Vec::with_capacity(N);
        for _ in 0..N {
            let (right_tx, right) = channel::<u32>();
            tasks.push(fibra::spawn(async move {
                let v = right.recv().await.unwrap();
                left.send(v + 1).await.unwrap();
            }));
            left = right_tx;
        }
        left.send(1).await.unwrap();
        assert_eq!(leftmost.recv().await, Ok(1 + N as u32));
        for t in tasks {
            t.await.unwrap();
        }
    });
}

// ----- sendstmt.go --------------------------------------------------------------

/// Go's `sendstmt.go`: a select sending on a channel that was itself
/// received from a channel of channels, without blocking; and a sent
/// expression evaluated before the send (`c <- false || true`).
#[test]
fn sendstmt_send_on_a_channel_received_from_a_channel() {
    let (cc_tx, cc) = bounded::<Sender<i32>>(1);
    let (c_tx, c) = bounded::<i32>(1);
    cc_tx.try_send(c_tx).unwrap();
    let target = cc.try_recv().unwrap();
    select_blocking! {
        r = target.send_op(2) => r.unwrap(),
        else => panic!("nonblock"),
    }
    assert_eq!(c.try_recv(), Ok(2), "bad receive");

    let (b_tx, b) = bounded::<bool>(1);
    #[allow(clippy::nonminimal_bool, clippy::overly_complex_bool_expr)]
    b_tx.try_send(false || true).unwrap();
    assert_eq!(b.try_recv(), Ok(true), "sent false");
}

// ----- zerosize.go --------------------------------------------------------------

/// Go's `zerosize.go`, extended: channels of zero-sized types — `()`,
/// `[u8; 0]` and an empty struct — of every flavour, carry their values
/// (a count is all there is) through plain operations and selects.
#[test]
fn zerosize_channels_of_zero_sized_types() {
    #[derive(Debug, PartialEq, Clone, Copy)]
    struct Empty;
    fn exercise<T: PartialEq + std::fmt::Debug + Copy + Send + 'static>(v: T) {
        let (tx, rx) = unbounded::<T>();
        for _ in 0..100_000 {
            tx.try_send(v).unwrap();
        }
        assert_eq!(rx.len(), 100_000);
        let mut n = 0;
        loop {
            select_blocking! {
                r = rx.recv_op() => { assert_eq!(r, Ok(v)); n += 1 }
                else => break,
            }
        }
        assert_eq!(n, 100_000);
        let (tx, rx) = bounded::<T>(1);
        tx.try_send(v).unwrap();
        assert!(tx.try_send(v).is_err(), "a full channel of a ZST is full");
        assert_eq!(rx.try_recv(), Ok(v));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        let (tx, rx) = channel::<T>();
        let t = std::thread::spawn(move || {
            for _ in 0..100 {
                tx.send_blocking(v).unwrap();
            }
        });
        for _ in 0..100 {
            let got = select_blocking! {
                r = rx.recv_op() => r.unwrap(),
                () = after(STALL) => panic!("stalled"),
            };
            assert_eq!(got, v);
        }
        t.join().unwrap();
        assert_eq!(rx.recv_blocking(), Err(RecvError));
    }
    exercise(());
    exercise([0u8; 0]);
    exercise(Empty);
}
