//! Conservation stress: many producers and consumers (OS threads and tokio
//! tasks), random mixes of plain sends and receives, choices over channels of
//! every flavour, `always`/`never` branches, `try_perform`, cancellation and
//! closing. Every message is unique; at the end each one was received exactly
//! once, or came back to its sender, or was dropped by the sender's own
//! cancelled or losing send op — never lost, never duplicated.
//!
//! Sized by `FIBRA_STRESS` (a multiplier, default 1); seeded, and replayable
//! with `FIBRA_STRESS_SEED=<seed>` (each test prints its seed).

mod common;

use common::{
    AllowDrop, Ledger, Msg, Rng, allow_all_drops, allow_drops, channels, poll_noop, scaled,
};
use fibra::{
    BoxOp, Op, Receiver, RecvError, SendError, Sender, TryRecvError, TrySendError, always, bounded,
    channel, choose, choose_biased, never, seed_choice_rng, unbounded,
};
use futures::FutureExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

type Tx = Sender<Msg>;
type Rx = Receiver<Msg>;

const WATCHDOG: Duration = Duration::from_secs(120);

/// Message ids owned by one producer: `base..base + stride`.
struct Ids {
    ledger: Arc<Ledger>,
    next: u32,
    end: u32,
    base: u32,
}

impl Ids {
    fn new(ledger: &Arc<Ledger>, producer: u32, stride: u32) -> Self {
        Ids {
            ledger: ledger.clone(),
            next: producer * stride,
            end: (producer + 1) * stride,
            base: producer * stride,
        }
    }

    fn msg(&mut self) -> Msg {
        assert!(self.next < self.end, "producer ran out of ids");
        self.next += 1;
        Msg::new(self.next - 1, &self.ledger)
    }

    fn used(&self) -> std::ops::Range<u32> {
        self.base..self.next
    }
}

/// Settles the outcome of a send whose value may have come back.
fn settle_send(r: Result<(), SendError<Msg>>) {
    if let Err(SendError(m)) = r {
        m.returned();
    }
}

/// Settles the outcome of a receive on channel `i`: a message is received;
/// a closed channel leaves the consumer's open set.
fn settle_recv(open: &mut Vec<usize>, i: usize, r: Result<Msg, RecvError>) {
    match r {
        Ok(m) => {
            m.received();
        }
        Err(RecvError) => open.retain(|&x| x != i),
    }
}

fn settle_try_recv(open: &mut Vec<usize>, i: usize, r: Result<Msg, TryRecvError>) -> bool {
    match r {
        Ok(m) => {
            m.received();
            true
        }
        Err(TryRecvError::Disconnected) => {
            open.retain(|&x| x != i);
            true
        }
        Err(TryRecvError::Empty) => false,
    }
}

fn pick(rng: &mut Rng, open: &[usize]) -> usize {
    open[rng.below(open.len())]
}

/// `n` distinct channel indices out of `k`.
fn distinct(rng: &mut Rng, k: usize, n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..k).collect();
    for i in 0..n {
        let j = i + rng.below(k - i);
        v.swap(i, j);
    }
    v.truncate(n);
    v
}

// ----- producers ------------------------------------------------------------

/// One producer step on an OS thread.
fn thread_send_step(rng: &mut Rng, ids: &mut Ids, txs: &[Tx]) {
    let k = txs.len();
    let c = rng.below(k);
    match rng.below(100) {
        // plain blocking send
        0..25 => settle_send(txs[c].send_blocking(ids.msg())),
        // a fair or biased choice of sends, each branch with its own message
        25..45 => {
            let n = 2 + rng.below(2);
            let chans = distinct(rng, k, n);
            let msgs: Vec<Msg> = chans.iter().map(|_| ids.msg()).collect();
            let allowed: Vec<u32> = msgs.iter().map(|m| m.id).collect();
            let mut ops: Vec<BoxOp<'_, Result<(), SendError<Msg>>>> = chans
                .iter()
                .zip(msgs)
                .map(|(&c, m)| txs[c].send_op(m).boxed())
                .collect();
            if rng.chance(30) {
                ops.push(never().boxed());
            }
            let biased = rng.chance(30);
            allow_drops(&allowed, || {
                let op = if biased {
                    choose_biased(ops)
                } else {
                    choose(ops)
                };
                settle_send(op.perform());
            });
        }
        // a send raced against `always`: the "timeout" may win
        45..60 => {
            let m = ids.msg();
            let id = [m.id];
            let send = txs[c].send_op(m).wrap(Some);
            allow_drops(&id, || {
                let r = if rng.chance(50) {
                    choose_biased((send, always(None))).perform()
                } else {
                    choose((send, always(None))).perform()
                };
                if let Some(r) = r {
                    settle_send(r);
                }
            });
        }
        // try_send; on Full, give up or resend the value that came back
        60..75 => match txs[c].try_send(ids.msg()) {
            Ok(()) => {}
            Err(TrySendError::Disconnected(m)) => {
                m.returned();
            }
            Err(TrySendError::Full(m)) => {
                if rng.chance(50) {
                    m.returned();
                } else {
                    settle_send(txs[rng.below(k)].send_blocking(m));
                }
            }
        },
        // try_perform; the op comes back with the value inside
        75..85 => match txs[c].send_op(ids.msg()).try_perform() {
            Ok(r) => settle_send(r),
            Err(op) => {
                let m = op.into_value();
                settle_send(txs[rng.below(k)].send_blocking(m));
            }
        },
        // cancellation: poll a send a few times with a no-op waker, then drop
        _ => {
            let m = ids.msg();
            let mut fut = Box::pin(AllowDrop::new(vec![m.id], txs[c].send(m)));
            for _ in 0..1 + rng.below(3) {
                if let Poll::Ready(r) = poll_noop(fut.as_mut()) {
                    settle_send(r);
                    break;
                }
                std::thread::yield_now();
            }
        }
    }
}

/// One producer step in a tokio task.
async fn task_send_step(rng: &mut Rng, ids: &mut Ids, txs: &[Tx]) {
    let k = txs.len();
    let c = rng.below(k);
    match rng.below(100) {
        0..25 => settle_send(txs[c].send(ids.msg()).await),
        25..45 => {
            let n = 2 + rng.below(2);
            let chans = distinct(rng, k, n);
            let msgs: Vec<Msg> = chans.iter().map(|_| ids.msg()).collect();
            let allowed: Vec<u32> = msgs.iter().map(|m| m.id).collect();
            let ops: Vec<_> = chans
                .iter()
                .zip(msgs)
                .map(|(&c, m)| txs[c].send_op(m))
                .collect();
            let op = if rng.chance(30) {
                choose_biased(ops)
            } else {
                choose(ops)
            };
            settle_send(AllowDrop::new(allowed, op.into_future()).await);
        }
        45..60 => {
            let m = ids.msg();
            let id = vec![m.id];
            let op = choose((txs[c].send_op(m).wrap(Some), always(None)));
            if let Some(r) = AllowDrop::new(id, op.into_future()).await {
                settle_send(r);
            }
        }
        60..70 => match txs[c].try_send(ids.msg()) {
            Ok(()) => {}
            Err(TrySendError::Disconnected(m)) => {
                m.returned();
            }
            Err(TrySendError::Full(m)) => settle_send(txs[rng.below(k)].send(m).await),
        },
        // cancelled by a select! against yield_now
        70..80 => {
            let m = ids.msg();
            let send = AllowDrop::new(vec![m.id], txs[c].send(m));
            tokio::select! {
                r = send => settle_send(r),
                _ = tokio::task::yield_now() => {}
            }
        }
        // cancelled by a timeout
        80..90 => {
            let m = ids.msg();
            let send = AllowDrop::new(vec![m.id], txs[c].send(m));
            let d = Duration::from_micros(rng.below(200) as u64);
            if let Ok(r) = tokio::time::timeout(d, send).await {
                settle_send(r);
            }
        }
        // polled once, then dropped
        _ => {
            let m = ids.msg();
            if let Some(r) = AllowDrop::new(vec![m.id], txs[c].send(m)).now_or_never() {
                settle_send(r);
            }
        }
    }
}

// ----- consumers ------------------------------------------------------------

/// One consumer step on an OS thread; `tick` delivers a message every so
/// often (a timeout for threads).
fn thread_recv_step(rng: &mut Rng, open: &mut Vec<usize>, rxs: &[Rx], tick: &Receiver<()>) {
    let c = pick(rng, open);
    match rng.below(100) {
        // blocking choice over every open channel
        0..35 => {
            let got = if rng.chance(50) {
                let ops: Vec<_> = open
                    .iter()
                    .map(|&i| rxs[i].recv_op().wrap(move |r| (i, r)))
                    .collect();
                choose(ops).perform()
            } else {
                let mut ops: Vec<BoxOp<'_, (usize, Result<Msg, RecvError>)>> = open
                    .iter()
                    .map(|&i| rxs[i].recv_op().wrap(move |r| (i, r)).boxed())
                    .collect();
                ops.push(never().boxed());
                choose(ops).perform()
            };
            settle_recv(open, got.0, got.1);
        }
        // one channel, or a timeout tick
        35..50 => {
            let got =
                choose((rxs[c].recv_op().wrap(Some), tick.recv_op().wrap(|_| None))).perform();
            if let Some(r) = got {
                settle_recv(open, c, r);
            }
        }
        50..65 => {
            if !settle_try_recv(open, c, rxs[c].try_recv()) {
                std::thread::yield_now();
            }
        }
        65..75 => match rxs[c].recv_op().try_perform() {
            Ok(r) => settle_recv(open, c, r),
            Err(_op) => std::thread::yield_now(),
        },
        75..85 => {
            if let Some(r) = choose_biased((rxs[c].recv_op().wrap(Some), always(None))).perform() {
                settle_recv(open, c, r);
            } else {
                std::thread::yield_now();
            }
        }
        // cancellation: a receive (or a choice of receives) polled a few
        // times, then dropped; a value committed meanwhile must come back
        _ => {
            let polls = 1 + rng.below(3);
            if rng.chance(50) {
                let mut fut = Box::pin(rxs[c].recv());
                for _ in 0..polls {
                    if let Poll::Ready(r) = poll_noop(fut.as_mut()) {
                        settle_recv(open, c, r);
                        break;
                    }
                    std::thread::yield_now();
                }
            } else {
                let ops: Vec<_> = open
                    .iter()
                    .map(|&i| rxs[i].recv_op().wrap(move |r| (i, r)))
                    .collect();
                let mut fut = Box::pin(choose(ops).into_future());
                for _ in 0..polls {
                    if let Poll::Ready((i, r)) = poll_noop(fut.as_mut()) {
                        drop(fut);
                        settle_recv(open, i, r);
                        break;
                    }
                    std::thread::yield_now();
                }
            }
        }
    }
}

/// One consumer step in a tokio task.
async fn task_recv_step(rng: &mut Rng, open: &mut Vec<usize>, rxs: &[Rx]) {
    let c = pick(rng, open);
    match rng.below(100) {
        0..35 => {
            let ops: Vec<_> = open
                .iter()
                .map(|&i| rxs[i].recv_op().wrap(move |r| (i, r)))
                .collect();
            let (i, r) = choose(ops).await;
            settle_recv(open, i, r);
        }
        35..50 => {
            let d = Duration::from_micros(rng.below(300) as u64);
            if let Ok(r) = tokio::time::timeout(d, rxs[c].recv()).await {
                settle_recv(open, c, r);
            }
        }
        50..65 => {
            tokio::select! {
                r = rxs[c].recv() => settle_recv(open, c, r),
                _ = tokio::task::yield_now() => {}
            }
        }
        65..75 => {
            if !settle_try_recv(open, c, rxs[c].try_recv()) {
                tokio::task::yield_now().await;
            }
        }
        75..85 => {
            if let Some(r) = choose((rxs[c].recv_op().wrap(Some), always(None))).await {
                settle_recv(open, c, r);
            } else {
                tokio::task::yield_now().await;
            }
        }
        _ => {
            if let Some(r) = rxs[c].recv().now_or_never() {
                settle_recv(open, c, r);
            } else {
                tokio::task::yield_now().await;
            }
        }
    }
}

// ----- the scenarios --------------------------------------------------------

/// Sends a tick on `tx` every ~100 µs to whoever waits for one, until `stop`.
fn ticker(tx: Sender<()>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let _ = tx.try_send(());
            std::thread::sleep(Duration::from_micros(100));
        }
    })
}

#[test]
fn stress_every_message_is_received_once_or_returned_with_threads_tasks_choices_and_cancels() {
    let seed = common::test_seed("stress_mixed");
    common::with_watchdog("stress_mixed", seed, WATCHDOG, move || mixed_scenario(seed));
}

fn mixed_scenario(seed: u64) {
    let steps = scaled(30_000);
    let k = 6;
    let (thread_producers, task_producers) = (2u32, 2u32);
    let (thread_consumers, task_consumers) = (2u64, 2u64);
    let producers = thread_producers + task_producers;
    let stride = (steps * 4) as u32; // a step sends at most 3 messages
    let ledger = Ledger::new((producers * stride) as usize);
    let (txs, rxs) = channels(k);
    let rt = common::tokio_mt();
    let stop = Arc::new(AtomicBool::new(false));
    let (tick_tx, tick_rx) = channel::<()>();
    let ticker = ticker(tick_tx, stop.clone());
    let progress = Arc::new(AtomicUsize::new(0));

    let mut thread_prods = Vec::new();
    for p in 0..thread_producers {
        let (txs, ledger, progress) = (txs.clone(), ledger.clone(), progress.clone());
        thread_prods.push(std::thread::spawn(move || {
            seed_choice_rng(seed ^ u64::from(p));
            let mut rng = Rng::new(seed ^ (u64::from(p) << 8));
            let mut ids = Ids::new(&ledger, p, stride);
            for _ in 0..steps {
                thread_send_step(&mut rng, &mut ids, &txs);
                progress.fetch_add(1, Ordering::Relaxed);
            }
            ids.used()
        }));
    }
    let mut task_prods = Vec::new();
    for p in thread_producers..producers {
        let (txs, ledger, progress) = (txs.clone(), ledger.clone(), progress.clone());
        task_prods.push(rt.spawn(async move {
            let mut rng = Rng::new(seed ^ (u64::from(p) << 8));
            let mut ids = Ids::new(&ledger, p, stride);
            for _ in 0..steps {
                task_send_step(&mut rng, &mut ids, &txs).await;
                progress.fetch_add(1, Ordering::Relaxed);
            }
            ids.used()
        }));
    }
    drop(txs);

    let mut thread_cons = Vec::new();
    for c in 0..thread_consumers {
        let (rxs, tick) = (rxs.clone(), tick_rx.clone());
        thread_cons.push(std::thread::spawn(move || {
            seed_choice_rng(seed ^ (100 + c));
            let mut rng = Rng::new(seed ^ ((100 + c) << 8));
            let mut open: Vec<usize> = (0..rxs.len()).collect();
            while !open.is_empty() {
                thread_recv_step(&mut rng, &mut open, &rxs, &tick);
            }
        }));
    }
    let mut task_cons = Vec::new();
    for c in 0..task_consumers {
        let rxs = rxs.clone();
        task_cons.push(rt.spawn(async move {
            let mut rng = Rng::new(seed ^ ((200 + c) << 8));
            let mut open: Vec<usize> = (0..rxs.len()).collect();
            while !open.is_empty() {
                task_recv_step(&mut rng, &mut open, &rxs).await;
            }
        }));
    }
    drop(rxs);
    drop(tick_rx);

    let mut used = Vec::new();
    for t in thread_prods {
        used.push(t.join().unwrap());
    }
    rt.block_on(async {
        for t in task_prods {
            used.push(t.await.unwrap());
        }
        for t in task_cons {
            t.await.unwrap();
        }
    });
    for t in thread_cons {
        t.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    ticker.join().unwrap();
    assert_eq!(progress.load(Ordering::Relaxed), steps * producers as usize);

    let summary = ledger
        .verify(used.into_iter().flatten())
        .unwrap_or_else(|e| panic!("seed {seed} (FIBRA_STRESS_SEED={seed}): {e}"));
    eprintln!("stress_mixed: {summary:?}");
    assert!(
        summary.received > 0 && summary.dropped > 0 && summary.returned > 0,
        "{summary:?}"
    );
}

/// Threads whose every op is a choice between sending on one channel and
/// receiving on another (plus a timeout tick), over small buffers: the pattern
/// in which two performs each commit on behalf of the other at once.
#[test]
fn stress_choices_that_both_send_and_receive_conserve_and_make_progress() {
    let seed = common::test_seed("stress_cross");
    common::with_watchdog("stress_cross", seed, WATCHDOG, move || cross_scenario(seed));
}

fn cross_scenario(seed: u64) {
    let steps = scaled(40_000);
    let actors = 4u32;
    let stride = steps as u32;
    let ledger = Ledger::new((actors * stride) as usize);
    let (txs, rxs): (Vec<Tx>, Vec<Rx>) = (0..4)
        .map(|i| {
            if i == 3 {
                bounded::<Msg>(2)
            } else {
                bounded(1)
            }
        })
        .unzip();
    let stop = Arc::new(AtomicBool::new(false));
    let (tick_tx, tick_rx) = channel::<()>();
    let ticker = ticker(tick_tx, stop.clone());
    let outcomes = Arc::new([
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    ]);
    let handles: Vec<_> = (0..actors)
        .map(|a| {
            let (txs, rxs, tick) = (txs.clone(), rxs.clone(), tick_rx.clone());
            let (ledger, outcomes) = (ledger.clone(), outcomes.clone());
            std::thread::spawn(move || {
                seed_choice_rng(seed ^ u64::from(a));
                let mut rng = Rng::new(seed ^ (u64::from(a) << 8));
                let mut ids = Ids::new(&ledger, a, stride);
                for _ in 0..steps {
                    let (s, r) = (rng.below(txs.len()), rng.below(rxs.len()));
                    let m = ids.msg();
                    let id = [m.id];
                    let outcome = allow_drops(&id, || {
                        choose((
                            txs[s].send_op(m).wrap(|r| {
                                settle_send(r);
                                0
                            }),
                            rxs[r].recv_op().wrap(|r| {
                                r.unwrap().received();
                                1
                            }),
                            tick.recv_op().wrap(|_| 2),
                        ))
                        .perform()
                    });
                    outcomes[outcome].fetch_add(1, Ordering::Relaxed);
                }
                ids.used()
            })
        })
        .collect();
    drop(txs);
    drop(tick_rx);
    let used: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    stop.store(true, Ordering::Relaxed);
    ticker.join().unwrap();
    // Drain what is left in the buffers.
    for rx in &rxs {
        while let Ok(m) = rx.try_recv() {
            m.received();
        }
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Disconnected);
    }
    let summary = ledger
        .verify(used.into_iter().flatten())
        .unwrap_or_else(|e| panic!("seed {seed} (FIBRA_STRESS_SEED={seed}): {e}"));
    let outcomes: Vec<_> = outcomes.iter().map(|o| o.load(Ordering::Relaxed)).collect();
    eprintln!("stress_cross: {summary:?}, outcomes (sent, received, tick) {outcomes:?}");
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

/// Rounds in which channels close under load: consumers give up early (so
/// blocked senders get their values back), or producers finish first (so
/// blocked receivers see the close). Producers also cancel sends.
#[test]
fn stress_closing_under_load_returns_or_delivers_every_message() {
    let seed = common::test_seed("stress_close");
    common::with_watchdog("stress_close", seed, WATCHDOG, move || close_scenario(seed));
}

fn close_scenario(seed: u64) {
    let rounds = scaled(300);
    let rt = common::tokio_mt();
    let mut rng = Rng::new(seed);
    let mut total = common::Summary::default();
    for round in 0..rounds {
        let round_seed = rng.next_u64();
        let s = close_round(&rt, round_seed).unwrap_or_else(|e| {
            panic!("seed {seed}, round {round} (FIBRA_STRESS_SEED={seed}): {e}")
        });
        total.received += s.received;
        total.returned += s.returned;
        total.dropped += s.dropped;
    }
    eprintln!("stress_close: {total:?}");
    assert!(total.received > 0 && total.returned > 0, "{total:?}");
}

fn close_round(rt: &tokio::runtime::Runtime, seed: u64) -> Result<common::Summary, String> {
    let mut rng = Rng::new(seed);
    let (tx, rx) = match rng.below(4) {
        0 => channel::<Msg>(),
        1 => bounded(1),
        2 => bounded(3),
        _ => unbounded(),
    };
    let per = 50 + rng.below(150) as u32;
    let producers = 3u32;
    let ledger = Ledger::new((producers * per) as usize);
    // Consumers stop after this many messages (may be more than are sent).
    let quota = rng.below((producers * per) as usize * 3 / 2) / 2;
    let mut threads = Vec::new();
    for p in 0..2 {
        let (tx, ledger) = (tx.clone(), ledger.clone());
        let mut rng = Rng::new(seed ^ (p + 1));
        threads.push(std::thread::spawn(move || {
            let mut ids = Ids::new(&ledger, p as u32, per);
            for _ in 0..per {
                let m = ids.msg();
                if rng.chance(20) {
                    let mut fut = Box::pin(AllowDrop::new(vec![m.id], tx.send(m)));
                    if let Poll::Ready(r) = poll_noop(fut.as_mut()) {
                        settle_send(r);
                    }
                } else if let Err(SendError(m)) = tx.send_blocking(m) {
                    m.returned();
                }
            }
            ids.used()
        }));
    }
    let task_prod = {
        let (tx, ledger) = (tx.clone(), ledger.clone());
        let mut rng = Rng::new(seed ^ 3);
        rt.spawn(async move {
            let mut ids = Ids::new(&ledger, 2, per);
            for _ in 0..per {
                let m = ids.msg();
                if rng.chance(20) {
                    let send = AllowDrop::new(vec![m.id], tx.send(m));
                    tokio::select! {
                        r = send => settle_send(r),
                        _ = tokio::task::yield_now() => {}
                    }
                } else {
                    settle_send(tx.send(m).await);
                }
            }
            ids.used()
        })
    };
    drop(tx);
    let taken = Arc::new(AtomicUsize::new(0));
    let thread_cons = {
        let (rx, taken) = (rx.clone(), taken.clone());
        std::thread::spawn(move || {
            while taken.fetch_add(1, Ordering::SeqCst) < quota {
                match rx.recv_blocking() {
                    Ok(m) => {
                        m.received();
                    }
                    Err(RecvError) => return,
                }
            }
        })
    };
    let task_cons = {
        let (rx, taken) = (rx.clone(), taken.clone());
        rt.spawn(async move {
            while taken.fetch_add(1, Ordering::SeqCst) < quota {
                let r = tokio::select! {
                    r = rx.recv() => r,
                    _ = tokio::task::yield_now() => continue,
                };
                match r {
                    Ok(m) => {
                        m.received();
                    }
                    Err(RecvError) => return,
                }
            }
        })
    };
    thread_cons.join().unwrap();
    rt.block_on(task_cons).unwrap();
    // The consumers are gone. Take what is buffered, then drop the last
    // receiver: blocked and later senders get their messages back; anything
    // buffered in between is dropped by the close, as documented.
    while let Ok(m) = rx.try_recv() {
        m.received();
    }
    allow_all_drops(|| drop(rx));
    let mut used: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    used.push(rt.block_on(task_prod).unwrap());
    ledger.verify(used.into_iter().flatten())
}
