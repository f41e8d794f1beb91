//! Conservation stress for sends that lose: every send here borrows its
//! value from a slot the producer owns (`Sender::send_op_from`), in
//! `choose`, `select!` (with a timeout, or with `else`), `WaitUntil` and
//! cancelled performs. No message may be dropped anywhere: each one is
//! received exactly once, or is back in its producer's slot after the
//! choice (then sent again, or given up and counted as returned).
//!
//! Sized by `FIBRA_STRESS` (a multiplier, default 1); seeded, and
//! replayable with `FIBRA_STRESS_SEED=<seed>`.

mod common;

use common::{Ledger, Msg, Rng, channels, poll_noop, scaled};
use fibra::time::after;
use fibra::{
    Op, Receiver, SendError, Sender, WaitUntil, choose, choose_biased, seed_choice_rng, select,
};
use std::sync::Arc;
use std::time::Duration;

type Tx = Sender<Msg>;
type Rx = Receiver<Msg>;
type Sent = Result<(), SendError<Msg>>;

const WATCHDOG: Duration = Duration::from_secs(120);

/// A producer: fresh message ids, and the messages that came back from a
/// losing send (to send again).
struct Producer {
    ledger: Arc<Ledger>,
    next: u32,
    end: u32,
    base: u32,
    backlog: Vec<Msg>,
}

impl Producer {
    fn new(ledger: &Arc<Ledger>, p: u32, stride: u32) -> Self {
        Producer {
            ledger: ledger.clone(),
            next: p * stride,
            end: (p + 1) * stride,
            base: p * stride,
            backlog: Vec::new(),
        }
    }

    /// A message to send: one that came back, or a fresh one.
    fn msg(&mut self, rng: &mut Rng) -> Msg {
        if !self.backlog.is_empty() && rng.chance(50) {
            return self.backlog.swap_remove(rng.below(self.backlog.len()));
        }
        assert!(self.next < self.end, "producer ran out of ids");
        self.next += 1;
        Msg::new(self.next - 1, &self.ledger)
    }

    /// After a choice: a slot still holding its message lost; keep it (or
    /// give it up now and then, so `returned` is exercised too).
    fn settle_slot(&mut self, rng: &mut Rng, slot: Option<Msg>) {
        if let Some(m) = slot {
            if rng.chance(10) {
                m.returned();
            } else {
                self.backlog.push(m);
            }
        }
    }

    fn settle(&mut self, r: Result<(), SendError<Msg>>) {
        if let Err(SendError(m)) = r {
            m.returned();
        }
    }

    /// At the end: whatever is still with us was returned.
    fn finish(self) -> std::ops::Range<u32> {
        for m in self.backlog {
            m.returned();
        }
        self.base..self.next
    }
}

/// `n` distinct channel indices out of `k`.
fn distinct(rng: &mut Rng, k: usize, n: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..k).collect();
    (0..n)
        .map(|_| all.swap_remove(rng.below(all.len())))
        .collect()
}

/// How many slots are empty (sent): at most one per choice.
fn sent(slots: &[Option<Msg>]) -> usize {
    slots.iter().filter(|s| s.is_none()).count()
}

/// One producer step on an OS thread.
fn thread_step(rng: &mut Rng, p: &mut Producer, txs: &[Tx]) {
    let k = txs.len();
    match rng.below(100) {
        // A fair or biased choice of 2-3 sends, sometimes against a
        // timeout: one commits, the others' messages stay in their slots.
        0..40 => {
            let n = 2 + rng.below(2);
            let chans = distinct(rng, k, n);
            let mut slots: Vec<Option<Msg>> = chans.iter().map(|_| Some(p.msg(rng))).collect();
            let timeout = rng
                .chance(50)
                .then(|| Duration::from_micros(rng.below(300) as u64));
            let biased = rng.chance(30);
            let r = {
                let mut ops: Vec<fibra::BoxOp<'_, Option<Sent>>> = chans
                    .iter()
                    .zip(slots.iter_mut())
                    .map(|(&c, s)| txs[c].send_op_from(s).wrap(Some).boxed())
                    .collect();
                if let Some(d) = timeout {
                    ops.push(after(d).wrap(|()| None).boxed());
                }
                if biased {
                    choose_biased(ops).perform()
                } else {
                    choose(ops).perform()
                }
            };
            match r {
                Some(r) => {
                    assert_eq!(sent(&slots), 1 - usize::from(r.is_err()));
                    p.settle(r);
                }
                None => assert_eq!(sent(&slots), 0, "the timeout won: nothing sent"),
            }
            for s in slots {
                p.settle_slot(rng, s);
            }
        }
        // select_blocking! with `else`: the value is back in the slot
        // before the `else` body runs.
        40..60 => {
            let c = rng.below(k);
            let mut slot = Some(p.msg(rng));
            fibra::select_blocking! {
                r = txs[c].send_op_from(&mut slot) => {
                    p.settle(r);
                }
                else => assert!(slot.is_some(), "else sees the value back"),
            }
            p.settle_slot(rng, slot);
        }
        // A cancelled perform: polled once with a no-op waker (its sends
        // published), then dropped.
        60..75 => {
            let chans = distinct(rng, k, 2);
            let (mut a, mut b) = (Some(p.msg(rng)), Some(p.msg(rng)));
            {
                let mut fut = Box::pin(
                    choose((
                        txs[chans[0]].send_op_from(&mut a),
                        txs[chans[1]].send_op_from(&mut b),
                    ))
                    .into_future(),
                );
                if let std::task::Poll::Ready(r) = poll_noop(fut.as_mut()) {
                    p.settle(r);
                }
            }
            assert!(a.is_some() || b.is_some(), "at most one sent");
            p.settle_slot(rng, a);
            p.settle_slot(rng, b);
        }
        // WaitUntil over two sends, either one enough: the other's message
        // is back in its slot once `run` returns.
        _ => {
            let chans = distinct(rng, k, 2);
            let (mut a, mut b) = (Some(p.msg(rng)), Some(p.msg(rng)));
            let (ra, rb) = {
                let mut w = WaitUntil::new();
                let ca = w.add(txs[chans[0]].send_op_from(&mut a));
                let cb = w.add(txs[chans[1]].send_op_from(&mut b));
                assert!(w.run_blocking(ca.done() | cb.done()));
                (ca.take(), cb.take())
            };
            assert_eq!(usize::from(ra.is_some()) + usize::from(rb.is_some()), 1);
            for r in [ra, rb].into_iter().flatten() {
                p.settle(r);
            }
            p.settle_slot(rng, a);
            p.settle_slot(rng, b);
        }
    }
}

/// One producer step in a fibra task: `select!` against a short timeout.
async fn task_step(rng: &mut Rng, p: &mut Producer, txs: &[Tx]) {
    let chans = distinct(rng, txs.len(), 2);
    let (mut a, mut b) = (Some(p.msg(rng)), Some(p.msg(rng)));
    let d = Duration::from_micros(rng.below(300) as u64);
    select! {
        r = txs[chans[0]].send_op_from(&mut a) => p.settle(r),
        r = txs[chans[1]].send_op_from(&mut b) => p.settle(r),
        () = after(d) => assert!(a.is_some() && b.is_some(), "timeout: nothing sent"),
    }
    assert!(a.is_some() || b.is_some(), "at most one sent");
    p.settle_slot(rng, a);
    p.settle_slot(rng, b);
}

#[test]
fn stress_a_losing_send_leaves_its_value_with_the_caller() {
    let seed = common::test_seed("stress_send_from");
    common::with_watchdog("stress_send_from", seed, WATCHDOG, move || scenario(seed));
}

fn scenario(seed: u64) {
    let steps = scaled(4_000);
    let k = 4;
    let (thread_producers, task_producers) = (2u32, 2u32);
    let producers = thread_producers + task_producers;
    let stride = (steps * 4) as u32; // a step takes at most 3 fresh ids
    let ledger = Ledger::new((producers * stride) as usize);
    let (txs, rxs) = channels(k);
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();

    let mut threads = Vec::new();
    for i in 0..thread_producers {
        let (txs, ledger) = (txs.clone(), ledger.clone());
        threads.push(std::thread::spawn(move || {
            seed_choice_rng(seed ^ u64::from(i));
            let mut rng = Rng::new(seed ^ (u64::from(i) << 8));
            let mut p = Producer::new(&ledger, i, stride);
            for _ in 0..steps {
                thread_step(&mut rng, &mut p, &txs);
            }
            p.finish()
        }));
    }
    let mut tasks = Vec::new();
    for i in thread_producers..producers {
        let (txs, ledger) = (txs.clone(), ledger.clone());
        tasks.push(rt.spawn(async move {
            let mut rng = Rng::new(seed ^ (u64::from(i) << 8));
            let mut p = Producer::new(&ledger, i, stride);
            for _ in 0..steps {
                task_step(&mut rng, &mut p, &txs).await;
            }
            p.finish()
        }));
    }
    drop(txs);

    // Two consumers on OS threads, each receiving from any channel until
    // every channel is closed and drained.
    let consume = |rxs: Vec<Rx>| {
        let mut open: Vec<usize> = (0..rxs.len()).collect();
        let mut n = 0usize;
        while !open.is_empty() {
            let ops: Vec<_> = open
                .iter()
                .map(|&i| rxs[i].recv_op().wrap(move |r| (i, r)))
                .collect();
            match choose(ops).perform() {
                (_, Ok(m)) => {
                    m.received();
                    n += 1;
                }
                (i, Err(_)) => open.retain(|&j| j != i),
            }
        }
        n
    };
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let rxs = rxs.clone();
            std::thread::spawn(move || consume(rxs))
        })
        .collect();
    drop(rxs);

    let mut ranges = Vec::new();
    for t in threads {
        ranges.push(t.join().unwrap());
    }
    for t in tasks {
        ranges.push(fibra::block_on(t).unwrap());
    }
    let received: usize = consumers.into_iter().map(|c| c.join().unwrap()).sum();
    let summary = ledger
        .verify(ranges.into_iter().flatten())
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    assert_eq!(summary.received, received);
    assert_eq!(summary.dropped, 0, "no drop is allowed here");
    assert!(summary.received > 0 && summary.returned > 0, "{summary:?}");
}
