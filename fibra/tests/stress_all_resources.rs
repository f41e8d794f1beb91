//! Conservation stress mixing every resource kind under random
//! cancellation. Producers put numbered messages into channels of all three
//! kinds (rendezvous, bounded, unbounded), into the consumers' mailboxes and
//! into an `MVar`, and now and then post a `Notify` and fill an `IVar`.
//! Consumers loop over random mixes of *every* resource's op: receives from
//! the channels, their mailbox (plain and selective) and the `MVar`,
//! semaphore acquires, mutex locks, notifications, `IVar` reads, joins of
//! short tasks they spawned, and short timers — in `select!`/`select_biased!`
//! (with guards and `else`), `choose`/`choose_biased` over run-time sets,
//! `time::timeout`, `try_perform`, `WaitUntil` statements over 2–4 clauses
//! and `choose_all`, and cancelled at random: dropped after one poll, raced
//! against a sleep in a foreign `select`, or ended by a timer clause.
//!
//! Every message goes through the ledger (tests/common): at the end each was
//! received exactly once (by a consumer, or drained from the resource it
//! was still in) or dropped by its own producer's cancelled send op —
//! never lost, never duplicated. Besides the messages:
//! * the semaphore never has more holders than permits, and has all its
//!   permits back at the end;
//! * the mutex is never held twice, and its counter (incremented under the
//!   lock) equals the number of successful locks;
//! * notifications are posted one at a time (a new one only after the last
//!   was received), so none may be lost or invented: received + (the one
//!   stored, if outstanding) = posted;
//! * an `IVar` read yields exactly what was written;
//! * every spawned task's output (a ledger message) is joined exactly once.
//!
//! A watchdog reports a stall (a lost wake-up, a lost permit or lock)
//! instead of hanging. Sized by `FIBRA_STRESS` (a multiplier, default 1);
//! seeded, and replayable with `FIBRA_STRESS_SEED=<seed>` (each test prints
//! its seed).

mod common;

use common::{
    AllowDrop, Ledger, Msg, Rng, allow_drops, poll_noop, scaled, test_seed, with_progress_watchdog,
};
use fibra::time::{after, sleep, timeout};
use fibra::{
    AcquireError, Addr, BoxOp, Handle, IVar, JoinError, JoinHandle, MVar, Mailbox, Mutex,
    MutexGuard, Notify, Op, Perform, Permit, Receiver, RecvError, Runtime, Semaphore,
    SendTimeoutError, Sender, TryRecvError, TrySendError, WaitUntil, choose, choose_all,
    choose_biased,
};
use futures::future::{Either, select};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::task::Poll;
use std::time::{Duration, Instant};

/// Permits of the shared semaphore (fewer than consumers: acquires wait).
const PERMITS: usize = 2;
/// Producers stay at most about this many messages ahead of the consumers,
/// so that resources often run dry and waits (and their cancellation) hit
/// blocked ops, not only ready ones.
const LEAD: u64 = 16;
/// How long a producer waits at most for the consumers to catch up.
const PACING: Duration = Duration::from_millis(20);
/// The `IVar`s, filled one by one as production advances.
const IVARS: usize = 6;
/// Ids reserved per consumer for its tasks' outputs.
const MAX_TASKS: u32 = 1 << 14;
/// At most this many unjoined tasks per consumer.
const TASKS_OUT: usize = 4;
/// How long nothing may happen before a run counts as stuck.
const STALL: Duration = Duration::from_secs(10);

/// What happened, for the statistics (and to check that every kind did).
#[derive(Clone, Copy, Debug)]
enum K {
    Chan,
    Mailbox,
    MVar,
    Permit,
    Lock,
    Notified,
    IVar,
    Join,
    Timer,
    Elapsed,
    Cancelled,
    TryFailed,
    WaitUntil,
    ChooseAll,
    Select,
    Drained,
}

const KINDS: usize = K::Drained as usize + 1;

/// Everything producers and consumers share.
struct Shared {
    ledger: Arc<Ledger>,
    /// Rendezvous, bounded(2), unbounded.
    tx: [Sender<Msg>; 3],
    rx: [Receiver<Msg>; 3],
    /// One mailbox per consumer (kept open: the addresses live here).
    addrs: Vec<Addr<Msg>>,
    mvar: MVar<Msg>,
    sem: Semaphore,
    holders: AtomicUsize,
    mutex: Mutex<u64>,
    in_lock: AtomicBool,
    locks: AtomicU64,
    notify: Notify,
    /// 1 while a posted notification has not been received.
    notify_out: AtomicUsize,
    notify_posted: AtomicU64,
    notify_got: AtomicU64,
    ivars: Vec<IVar<usize>>,
    /// Filled when the producers are done: consumers stop.
    stop: IVar<()>,
    /// Messages whose send committed, and messages consumers received.
    sent: AtomicU64,
    received: AtomicU64,
    /// Messages the pacing no longer waits for.
    written_off: AtomicU64,
    /// Every committed send and every message received: the watchdog's
    /// pulse (timers and cancelled waits do not count as progress).
    steps: AtomicUsize,
    /// First id of consumer tasks' outputs.
    task_base: u32,
    stats: [AtomicU64; KINDS],
}

impl Shared {
    /// The shared state and one mailbox per consumer (alternately bounded).
    fn new(
        ledger: Arc<Ledger>,
        consumers: usize,
        task_base: u32,
    ) -> (Arc<Shared>, Vec<Mailbox<Msg>>) {
        let (addrs, mbs): (Vec<_>, Vec<_>) = (0..consumers)
            .map(|c| {
                if c % 2 == 0 {
                    fibra::bounded_mailbox(2)
                } else {
                    fibra::mailbox()
                }
            })
            .unzip();
        let (t0, r0) = fibra::channel();
        let (t1, r1) = fibra::bounded(2);
        let (t2, r2) = fibra::unbounded();
        let sh = Shared {
            ledger,
            tx: [t0, t1, t2],
            rx: [r0, r1, r2],
            addrs,
            mvar: MVar::empty(),
            sem: Semaphore::new(PERMITS),
            holders: AtomicUsize::new(0),
            mutex: Mutex::new(0),
            in_lock: AtomicBool::new(false),
            locks: AtomicU64::new(0),
            notify: Notify::new(),
            notify_out: AtomicUsize::new(0),
            notify_posted: AtomicU64::new(0),
            notify_got: AtomicU64::new(0),
            ivars: (0..IVARS).map(|_| IVar::new()).collect(),
            stop: IVar::new(),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
            written_off: AtomicU64::new(0),
            steps: AtomicUsize::new(0),
            task_base,
            stats: std::array::from_fn(|_| AtomicU64::new(0)),
        };
        (Arc::new(sh), mbs)
    }

    fn count(&self, k: K) {
        self.stats[k as usize].fetch_add(1, SeqCst);
    }

    fn stat(&self, k: K) -> u64 {
        self.stats[k as usize].load(SeqCst)
    }

    fn got(&self, m: Msg, k: K) {
        m.received();
        self.received.fetch_add(1, SeqCst);
        self.steps.fetch_add(1, SeqCst);
        self.count(k);
    }

    fn too_far_ahead(&self) -> bool {
        self.sent.load(SeqCst) > self.received.load(SeqCst) + self.written_off.load(SeqCst) + LEAD
    }

    /// After waiting `PACING` in vain: let the producers go on (messages
    /// lost by a bug must show in the ledger, not throttle the run).
    fn write_off(&self) {
        let (sent, received) = (self.sent.load(SeqCst), self.received.load(SeqCst));
        self.written_off
            .fetch_max(sent.saturating_sub(received + LEAD), SeqCst);
    }

    /// Posts a notification if none is outstanding.
    fn maybe_notify(&self) {
        if self
            .notify_out
            .compare_exchange(0, 1, SeqCst, SeqCst)
            .is_ok()
        {
            self.notify_posted.fetch_add(1, SeqCst);
            self.notify.notify_one();
        }
    }
}

/// A short duration: zero (ready at once, racing the other clauses) or up
/// to 1.5 ms.
fn short(rng: &mut Rng) -> Duration {
    if rng.chance(30) {
        Duration::ZERO
    } else {
        Duration::from_micros(rng.below(1_500) as u64)
    }
}

/// What one committed clause yields.
enum Ev<'a> {
    Chan(Result<Msg, RecvError>),
    Mail(Option<Msg>),
    Take(Msg),
    Permit(Result<Permit<'a>, AcquireError>),
    Lock(MutexGuard<'a, u64>),
    Notified,
    IVar(usize, usize),
    Joined(usize, Result<Msg, JoinError>),
    Timer,
    Stop,
}

/// A permit or the lock, held by a consumer for a moment.
enum Held<'a> {
    Permit(Permit<'a>),
    Lock(MutexGuard<'a, u64>),
}

/// A consumer's bookkeeping for one round's events.
#[derive(Default)]
struct Round<'a> {
    held: Vec<Held<'a>>,
    joined: Vec<usize>,
    stop: bool,
}

impl<'a> Round<'a> {
    /// Accounts for one committed clause.
    fn on(&mut self, sh: &'a Shared, ev: Ev<'a>) {
        match ev {
            Ev::Chan(r) => sh.got(r.expect("a channel disconnected"), K::Chan),
            Ev::Mail(m) => sh.got(m.expect("a mailbox closed"), K::Mailbox),
            Ev::Take(m) => sh.got(m, K::MVar),
            Ev::Permit(p) => {
                let p = p.expect("the semaphore closed");
                let n = sh.holders.fetch_add(1, SeqCst) + 1;
                assert!(n <= PERMITS, "{n} holders of {PERMITS} permits");
                sh.count(K::Permit);
                self.held.push(Held::Permit(p));
            }
            Ev::Lock(mut g) => {
                assert!(!sh.in_lock.swap(true, SeqCst), "the mutex held twice");
                *g += 1;
                sh.locks.fetch_add(1, SeqCst);
                sh.count(K::Lock);
                self.held.push(Held::Lock(g));
            }
            Ev::Notified => {
                let out = sh.notify_out.fetch_sub(1, SeqCst);
                assert_eq!(out, 1, "a notification nobody posted (or received twice)");
                sh.notify_got.fetch_add(1, SeqCst);
                sh.count(K::Notified);
            }
            Ev::IVar(k, v) => {
                assert_eq!(v, k, "IVar {k} yielded {v}");
                sh.count(K::IVar);
            }
            Ev::Joined(i, r) => {
                let m = r.unwrap_or_else(|e| panic!("a task failed: {e:?}"));
                sh.got(m, K::Join);
                self.joined.push(i);
            }
            Ev::Timer => sh.count(K::Timer),
            Ev::Stop => self.stop = true,
        }
    }

    /// Gives back what is held (a permit sometimes forgotten and released
    /// by hand), forgets joined handles; returns whether to stop.
    fn end(self, sh: &Shared, joins: &mut Vec<JoinHandle<Msg>>, rng: &mut Rng) -> bool {
        for h in self.held {
            match h {
                Held::Permit(p) => {
                    sh.holders.fetch_sub(1, SeqCst);
                    if rng.chance(20) {
                        p.forget();
                        sh.sem.release(1);
                    }
                }
                Held::Lock(g) => {
                    sh.in_lock.store(false, SeqCst);
                    drop(g);
                }
            }
        }
        let mut joined = self.joined;
        joined.sort_unstable();
        for i in joined.into_iter().rev() {
            joins.swap_remove(i);
        }
        self.stop
    }
}

/// A random subset of every resource's op (each wrapped into an `Ev`), plus
/// a timer if `timer` (or if nothing else was picked).
fn candidates<'a: 'b, 'b>(
    sh: &'a Shared,
    mb: &'b mut Mailbox<Msg>,
    joins: &'b [JoinHandle<Msg>],
    rng: &mut Rng,
    timer: bool,
) -> Vec<BoxOp<'b, Ev<'a>>> {
    let mut ops: Vec<BoxOp<'b, Ev<'a>>> = Vec::new();
    for rx in &sh.rx {
        if rng.chance(50) {
            ops.push(rx.recv_op().wrap(Ev::Chan).boxed());
        }
    }
    if rng.chance(50) {
        if rng.chance(30) {
            ops.push(
                mb.recv_matching_op(|m: &Msg| m.id % 3 == 0)
                    .wrap(Ev::Mail)
                    .boxed(),
            );
        } else {
            ops.push(mb.recv_op().wrap(Ev::Mail).boxed());
        }
    }
    if rng.chance(50) {
        ops.push(sh.mvar.take_op().wrap(Ev::Take).boxed());
    }
    if rng.chance(30) {
        ops.push(sh.sem.acquire_op().wrap(Ev::Permit).boxed());
    }
    if rng.chance(30) {
        ops.push(sh.mutex.lock_op().wrap(Ev::Lock).boxed());
    }
    if rng.chance(30) {
        ops.push(sh.notify.notified_op().wrap(|()| Ev::Notified).boxed());
    }
    if rng.chance(10) {
        let k = rng.below(IVARS);
        ops.push(sh.ivars[k].get_op().wrap(move |v| Ev::IVar(k, v)).boxed());
    }
    if !joins.is_empty() && rng.chance(50) {
        let i = rng.below(joins.len());
        ops.push(joins[i].join_op().wrap(move |r| Ev::Joined(i, r)).boxed());
    }
    if rng.chance(10) {
        ops.push(sh.stop.get_op().wrap(|()| Ev::Stop).boxed());
    }
    if timer || ops.is_empty() {
        ops.push(after(short(rng)).wrap(|()| Ev::Timer).boxed());
    }
    // Shuffle, so that biased choices favour different resources.
    for i in (1..ops.len()).rev() {
        ops.swap(i, rng.below(i + 1));
    }
    ops
}

/// Each op under its own short timeout (a timed-out clause yields
/// `Ev::Timer`), so that waiting for *all* of them ends.
fn timed<'a: 'b, 'b>(ops: Vec<BoxOp<'b, Ev<'a>>>, rng: &mut Rng) -> Vec<BoxOp<'b, Ev<'a>>> {
    ops.into_iter()
        .map(|op| {
            timeout(op, short(rng))
                .wrap(|r| r.unwrap_or(Ev::Timer))
                .boxed()
        })
        .collect()
}

/// 2–4 clauses for a `WaitUntil`, and a random and/or predicate over them.
fn wait_until<'a: 'b, 'b>(
    mut ops: Vec<BoxOp<'b, Ev<'a>>>,
    rng: &mut Rng,
) -> (
    WaitUntil<'b>,
    Vec<fibra::select::Clause<Ev<'a>>>,
    fibra::select::Pred,
) {
    while ops.len() < 2 {
        ops.push(after(short(rng)).wrap(|()| Ev::Timer).boxed());
    }
    ops.truncate(2 + rng.below(3));
    let mut w = WaitUntil::new();
    let clauses: Vec<_> = ops.into_iter().map(|op| w.add(op)).collect();
    let pred = if clauses.len() == 4 && rng.chance(50) {
        // (A and B) or (C and D), or (A or B) and (C or D)
        let [a, b, c, d] = [0, 1, 2, 3].map(|i| clauses[i].done());
        if rng.chance(50) {
            (a & b) | (c & d)
        } else {
            (a | b) & (c | d)
        }
    } else {
        let mut p = clauses[0].done();
        for c in &clauses[1..] {
            p = if rng.chance(50) {
                p | c.done()
            } else {
                p & c.done()
            };
        }
        p
    };
    (w, clauses, pred)
}

/// Every kind of clause in one `select!`-family statement, each enabled by
/// its guard; the last bracket holds an optional `else`.
macro_rules! select_every_kind {
    ($mac:ident, $sh:expr, $mb:expr, $joins:expr, $g:expr, $k:expr, $ji:expr, $d:expr,
     [$($else:tt)*]) => {
        fibra::$mac! {
            r = $sh.rx[0].recv_op(), if $g[0] => Ev::Chan(r),
            r = $sh.rx[1].recv_op(), if $g[1] => Ev::Chan(r),
            r = $sh.rx[2].recv_op(), if $g[2] => Ev::Chan(r),
            m = $mb.recv_op(), if $g[3] => Ev::Mail(m),
            m = $sh.mvar.take_op(), if $g[4] => Ev::Take(m),
            p = $sh.sem.acquire_op(), if $g[5] => Ev::Permit(p),
            l = $sh.mutex.lock_op(), if $g[6] => Ev::Lock(l),
            () = $sh.notify.notified_op(), if $g[7] => Ev::Notified,
            v = $sh.ivars[$k].get_op(), if $g[8] => Ev::IVar($k, v),
            r = $joins[$ji].join_op(), if $g[9] && !$joins.is_empty() => Ev::Joined($ji, r),
            () = $sh.stop.get_op(), if $g[10] => Ev::Stop,
            () = after($d), if $g[11] => Ev::Timer,
            $($else)*
        }
    };
}

/// Random guards for `select_every_kind!`: the timer (last) is on unless
/// the statement has an `else`.
fn guards(rng: &mut Rng, with_else: bool) -> [bool; 12] {
    let mut g: [bool; 12] = std::array::from_fn(|i| match i {
        8 | 10 => rng.chance(15),
        _ => rng.chance(50),
    });
    g[11] = !with_else || rng.chance(50);
    g
}

/// A consumer task: loops over random rounds until told to stop, then joins
/// its remaining tasks. Returns its mailbox and how many tasks it spawned.
async fn consume_async(
    sh: Arc<Shared>,
    mut mb: Mailbox<Msg>,
    c: usize,
    seed: u64,
) -> (Mailbox<Msg>, u32) {
    let sh = &*sh;
    let mut rng = Rng::new(seed);
    let mut joins: Vec<JoinHandle<Msg>> = Vec::new();
    let base = sh.task_base + c as u32 * MAX_TASKS;
    let mut spawned = 0;
    loop {
        if joins.len() < TASKS_OUT && spawned < MAX_TASKS && rng.chance(15) {
            let (ledger, id, d) = (sh.ledger.clone(), base + spawned, short(&mut rng));
            let nap = rng.below(3);
            joins.push(fibra::spawn(async move {
                match nap {
                    0 => sleep(d).await,
                    1 => fibra::yield_now().await,
                    _ => {}
                }
                Msg::new(id, &ledger)
            }));
            spawned += 1;
        }
        let mut round = Round::default();
        match rng.below(100) {
            0..18 => {
                let with_else = rng.chance(25);
                let g = guards(&mut rng, with_else);
                let (k, d) = (rng.below(IVARS), short(&mut rng));
                let ji = if joins.is_empty() {
                    0
                } else {
                    rng.below(joins.len())
                };
                let ev = match (with_else, rng.chance(50)) {
                    (true, _) => {
                        select_every_kind!(select, sh, mb, joins, g, k, ji, d, [else => Ev::Timer,])
                    }
                    (false, true) => select_every_kind!(select, sh, mb, joins, g, k, ji, d, []),
                    (false, false) => {
                        select_every_kind!(select_biased, sh, mb, joins, g, k, ji, d, [])
                    }
                };
                sh.count(K::Select);
                round.on(sh, ev);
            }
            18..32 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, true);
                let ev = if rng.chance(70) {
                    choose(ops).await
                } else {
                    choose_biased(ops).await
                };
                round.on(sh, ev);
            }
            32..42 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                match timeout(choose(ops), short(&mut rng)).await {
                    Ok(ev) => round.on(sh, ev),
                    Err(_) => sh.count(K::Elapsed),
                }
            }
            // Dropped mid-wait when the sleep wins (a foreign select).
            42..52 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                let d = short(&mut rng);
                match select(pin!(Perform::new(choose(ops))), pin!(sleep(d))).await {
                    Either::Left((ev, _)) => round.on(sh, ev),
                    Either::Right(_) => sh.count(K::Cancelled),
                }
            }
            // Polled once, dropped if pending.
            52..60 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                let r = {
                    let mut f = pin!(Perform::new(choose(ops)));
                    futures::poll!(f.as_mut())
                };
                match r {
                    Poll::Ready(ev) => round.on(sh, ev),
                    Poll::Pending => sh.count(K::Cancelled),
                }
            }
            60..72 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                match choose(ops).try_perform() {
                    Ok(ev) => round.on(sh, ev),
                    Err(_) => sh.count(K::TryFailed),
                }
            }
            72..90 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                let ops = if rng.chance(40) {
                    timed(ops, &mut rng)
                } else {
                    ops
                };
                let (w, clauses, pred) = wait_until(ops, &mut rng);
                // Run to the end (timed clauses always get there), or
                // dropped when the sleep wins.
                let d = Duration::from_micros(rng.below(3_000) as u64);
                match select(pin!(w.run(pred)), pin!(sleep(d))).await {
                    Either::Left((held, _)) => {
                        assert!(held, "a satisfiable predicate gave up");
                        sh.count(K::WaitUntil);
                    }
                    Either::Right(_) => sh.count(K::Cancelled),
                }
                for cl in clauses {
                    if let Some(ev) = cl.take() {
                        round.on(sh, ev);
                    }
                }
            }
            90..96 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                let mut ops = timed(ops, &mut rng);
                ops.truncate(3);
                for ev in choose_all(ops).await {
                    round.on(sh, ev);
                }
                sh.count(K::ChooseAll);
            }
            _ => fibra::yield_now().await,
        }
        if !round.held.is_empty() && rng.chance(30) {
            // Hold across a scheduling point.
            fibra::yield_now().await;
        }
        if round.end(sh, &mut joins, &mut rng) || sh.stop.is_full() {
            break;
        }
    }
    for h in joins {
        sh.got(h.await.expect("a task failed"), K::Join);
    }
    (mb, spawned)
}

/// A consumer on an OS thread: `select_blocking!`, `perform`,
/// `run_blocking`; joins tasks spawned on `spawner` if given.
fn consume_blocking(
    sh: Arc<Shared>,
    mut mb: Mailbox<Msg>,
    c: usize,
    seed: u64,
    spawner: Option<Handle>,
) -> (Mailbox<Msg>, u32) {
    let sh = &*sh;
    let mut rng = Rng::new(seed);
    let mut joins: Vec<JoinHandle<Msg>> = Vec::new();
    let base = sh.task_base + c as u32 * MAX_TASKS;
    let mut spawned = 0;
    loop {
        if let Some(h) = &spawner
            && joins.len() < TASKS_OUT
            && spawned < MAX_TASKS
            && rng.chance(15)
        {
            let (ledger, id) = (sh.ledger.clone(), base + spawned);
            let nap = rng.chance(50);
            joins.push(h.spawn(async move {
                if nap {
                    fibra::yield_now().await;
                }
                Msg::new(id, &ledger)
            }));
            spawned += 1;
        }
        let mut round = Round::default();
        match rng.below(100) {
            0..20 => {
                let with_else = rng.chance(25);
                let g = guards(&mut rng, with_else);
                let (k, d) = (rng.below(IVARS), short(&mut rng));
                let ji = if joins.is_empty() {
                    0
                } else {
                    rng.below(joins.len())
                };
                let ev = match (with_else, rng.chance(50)) {
                    (true, _) => select_every_kind!(
                        select_blocking, sh, mb, joins, g, k, ji, d, [else => Ev::Timer,]
                    ),
                    (false, true) => {
                        select_every_kind!(select_blocking, sh, mb, joins, g, k, ji, d, [])
                    }
                    (false, false) => {
                        select_every_kind!(select_biased_blocking, sh, mb, joins, g, k, ji, d, [])
                    }
                };
                sh.count(K::Select);
                round.on(sh, ev);
            }
            20..35 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, true);
                let ev = if rng.chance(70) {
                    choose(ops).perform()
                } else {
                    choose_biased(ops).perform()
                };
                round.on(sh, ev);
            }
            35..45 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                match timeout(choose(ops), short(&mut rng)).perform() {
                    Ok(ev) => round.on(sh, ev),
                    Err(_) => sh.count(K::Elapsed),
                }
            }
            // Dropped mid-wait when the sleep wins (a foreign select).
            45..53 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                let d = short(&mut rng);
                let (f, s) = (pin!(Perform::new(choose(ops))), pin!(sleep(d)));
                match fibra::block_on(select(f, s)) {
                    Either::Left((ev, _)) => round.on(sh, ev),
                    Either::Right(_) => sh.count(K::Cancelled),
                }
            }
            // Polled once (or a few times), dropped if pending.
            53..63 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                let mut f = pin!(Perform::new(choose(ops)));
                let mut r = Poll::Pending;
                for _ in 0..1 + rng.below(3) {
                    r = poll_noop(f.as_mut());
                    if r.is_ready() {
                        break;
                    }
                    std::thread::yield_now();
                }
                match r {
                    Poll::Ready(ev) => round.on(sh, ev),
                    Poll::Pending => sh.count(K::Cancelled),
                }
            }
            63..75 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                match choose(ops).try_perform() {
                    Ok(ev) => round.on(sh, ev),
                    Err(_) => sh.count(K::TryFailed),
                }
            }
            75..92 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                if rng.chance(50) {
                    // Timed clauses: any predicate is reached.
                    let (w, clauses, pred) = wait_until(timed(ops, &mut rng), &mut rng);
                    assert!(w.run_blocking(pred), "a satisfiable predicate gave up");
                    sh.count(K::WaitUntil);
                    for cl in clauses {
                        if let Some(ev) = cl.take() {
                            round.on(sh, ev);
                        }
                    }
                } else {
                    // Untimed clauses, or'ed with a timer clause.
                    let (mut w, mut clauses, pred) = wait_until(ops, &mut rng);
                    let t = w.add(after(short(&mut rng)).wrap(|()| Ev::Timer));
                    let pred = pred | t.done();
                    assert!(w.run_blocking(pred), "a satisfiable predicate gave up");
                    sh.count(K::WaitUntil);
                    clauses.push(t);
                    for cl in clauses {
                        if let Some(ev) = cl.take() {
                            round.on(sh, ev);
                        }
                    }
                }
            }
            92..96 => {
                let ops = candidates(sh, &mut mb, &joins, &mut rng, false);
                let mut ops = timed(ops, &mut rng);
                ops.truncate(3);
                for ev in choose_all(ops).perform() {
                    round.on(sh, ev);
                }
                sh.count(K::ChooseAll);
            }
            _ => std::thread::yield_now(),
        }
        if !round.held.is_empty() && rng.chance(20) {
            std::thread::yield_now();
        }
        if round.end(sh, &mut joins, &mut rng) || sh.stop.is_full() {
            break;
        }
    }
    for h in joins {
        sh.got(h.join_op().perform().expect("a task failed"), K::Join);
    }
    (mb, spawned)
}

/// The outcome of one attempt to send a message.
enum Sent {
    /// It was sent.
    Yes,
    /// It was sent, or dropped by its cancelled send op.
    Maybe,
    /// Not sent; here it is back.
    Back(Msg),
}

/// Where a message goes: a channel (0–2), a mailbox (3), the `MVar` (4).
fn dest(rng: &mut Rng) -> usize {
    rng.below(5)
}

/// One attempt to send `m` from an OS thread.
fn send_blocking_once(sh: &Shared, m: Msg, rng: &mut Rng) -> Sent {
    let (id, d, how) = (m.id, short(rng), rng.below(5));
    // A send op that loses its choice, or whose perform is dropped, may
    // drop the message.
    let cancellable = |f: &mut dyn FnMut() -> bool| {
        if allow_drops(&[id], f) {
            Sent::Yes
        } else {
            Sent::Maybe
        }
    };
    match dest(rng) {
        ch @ 0..3 => {
            let tx = &sh.tx[ch];
            let mut m = Some(m);
            match how {
                0 => {
                    tx.send_blocking(m.take().unwrap()).expect("disconnected");
                    Sent::Yes
                }
                1 => match tx.send_op(m.take().unwrap()).try_perform() {
                    Ok(r) => r.map(|()| Sent::Yes).expect("disconnected"),
                    Err(op) => Sent::Back(op.into_value()),
                },
                2 => match tx.send_timeout_blocking(m.take().unwrap(), d) {
                    Ok(()) => Sent::Yes,
                    Err(SendTimeoutError::Timeout(m)) => Sent::Back(m),
                    Err(e) => panic!("{e:?}"),
                },
                3 => cancellable(&mut || {
                    choose((
                        tx.send_op(m.take().unwrap()).wrap(|r| r.is_ok()),
                        after(d).wrap(|()| false),
                    ))
                    .perform()
                }),
                _ => cancellable(&mut || {
                    let mut f = pin!(Perform::new(tx.send_op(m.take().unwrap())));
                    poll_noop(f.as_mut()).is_ready()
                }),
            }
        }
        3 => {
            let addr = &sh.addrs[rng.below(sh.addrs.len())];
            let mut m = Some(m);
            match how {
                0 => match addr.send(m.take().unwrap()) {
                    Ok(()) => Sent::Yes,
                    Err(TrySendError::Full(m)) => Sent::Back(m),
                    Err(e) => panic!("{e:?}"),
                },
                1 => {
                    addr.send_op(m.take().unwrap()).perform().expect("closed");
                    Sent::Yes
                }
                2 => match addr.send_op(m.take().unwrap()).try_perform() {
                    Ok(r) => r.map(|()| Sent::Yes).expect("closed"),
                    Err(op) => Sent::Back(op.into_value()),
                },
                3 => cancellable(&mut || {
                    choose((
                        addr.send_op(m.take().unwrap()).wrap(|r| r.is_ok()),
                        after(d).wrap(|()| false),
                    ))
                    .perform()
                }),
                _ => cancellable(&mut || {
                    let mut f = pin!(Perform::new(addr.send_op(m.take().unwrap())));
                    poll_noop(f.as_mut()).is_ready()
                }),
            }
        }
        _ => {
            let mut m = Some(m);
            match how {
                0 => {
                    sh.mvar.put_blocking(m.take().unwrap());
                    Sent::Yes
                }
                1 => match sh.mvar.try_put(m.take().unwrap()) {
                    Ok(()) => Sent::Yes,
                    Err(m) => Sent::Back(m),
                },
                2 => match sh.mvar.put_op(m.take().unwrap()).try_perform() {
                    Ok(()) => Sent::Yes,
                    Err(op) => Sent::Back(op.into_value()),
                },
                3 => cancellable(&mut || {
                    choose((
                        sh.mvar.put_op(m.take().unwrap()).wrap(|()| true),
                        after(d).wrap(|()| false),
                    ))
                    .perform()
                }),
                _ => cancellable(&mut || {
                    let mut f = pin!(Perform::new(sh.mvar.put_op(m.take().unwrap())));
                    poll_noop(f.as_mut()).is_ready()
                }),
            }
        }
    }
}

/// One attempt to send `m` from a task.
async fn send_async_once(sh: &Shared, m: Msg, rng: &mut Rng) -> Sent {
    let (id, d, how) = (m.id, short(rng), rng.below(5));
    let sent = |yes: bool| if yes { Sent::Yes } else { Sent::Maybe };
    match dest(rng) {
        ch @ 0..3 => {
            let tx = &sh.tx[ch];
            match how {
                0 => {
                    tx.send(m).await.expect("disconnected");
                    Sent::Yes
                }
                1 => match tx.send_timeout(m, d).await {
                    Ok(()) => Sent::Yes,
                    Err(SendTimeoutError::Timeout(m)) => Sent::Back(m),
                    Err(e) => panic!("{e:?}"),
                },
                2 => sent(
                    AllowDrop::new(
                        vec![id],
                        choose((tx.send_op(m).wrap(|r| r.is_ok()), after(d).wrap(|()| false)))
                            .into_future(),
                    )
                    .await,
                ),
                3 => {
                    // Dropped mid-wait when the sleep wins.
                    let send = AllowDrop::new(vec![id], tx.send(m));
                    sent(matches!(
                        select(pin!(send), pin!(sleep(d))).await,
                        Either::Left(_)
                    ))
                }
                _ => {
                    let mut send = pin!(AllowDrop::new(vec![id], tx.send(m)));
                    sent(futures::poll!(send.as_mut()).is_ready())
                }
            }
        }
        3 => {
            let addr = &sh.addrs[rng.below(sh.addrs.len())];
            match how {
                0 => match addr.send(m) {
                    Ok(()) => Sent::Yes,
                    Err(TrySendError::Full(m)) => Sent::Back(m),
                    Err(e) => panic!("{e:?}"),
                },
                1 => {
                    addr.send_op(m).await.expect("closed");
                    Sent::Yes
                }
                2 => sent(
                    AllowDrop::new(
                        vec![id],
                        choose((
                            addr.send_op(m).wrap(|r| r.is_ok()),
                            after(d).wrap(|()| false),
                        ))
                        .into_future(),
                    )
                    .await,
                ),
                _ => {
                    let send = AllowDrop::new(vec![id], addr.send_op(m).into_future());
                    sent(matches!(
                        select(pin!(send), pin!(sleep(d))).await,
                        Either::Left(_)
                    ))
                }
            }
        }
        _ => match how {
            0 => {
                sh.mvar.put(m).await;
                Sent::Yes
            }
            1 | 2 => match sh.mvar.put_timeout(m, d).await {
                Ok(()) => Sent::Yes,
                Err(m) => Sent::Back(m),
            },
            3 => sent(
                AllowDrop::new(
                    vec![id],
                    choose((sh.mvar.put_op(m).wrap(|()| true), after(d).wrap(|()| false)))
                        .into_future(),
                )
                .await,
            ),
            _ => {
                let mut put = pin!(AllowDrop::new(vec![id], sh.mvar.put(m)));
                sent(futures::poll!(put.as_mut()).is_ready())
            }
        },
    }
}

/// After the `i`-th of `per` messages: bookkeeping, notifications, `IVar`s.
fn after_send(sh: &Shared, p: usize, i: usize, per: usize, outcome: &Sent, rng: &mut Rng) {
    if let Sent::Yes = outcome {
        sh.sent.fetch_add(1, SeqCst);
        sh.steps.fetch_add(1, SeqCst);
    }
    if rng.chance(8) {
        sh.maybe_notify();
    }
    if p == 0 {
        // IVar k is written when production passes k/IVARS (all by the end).
        let k = (i + 1) * IVARS / per;
        for (j, v) in sh.ivars.iter().enumerate().take(k) {
            let _ = v.put(j);
        }
    }
}

/// Ids of producer `p`'s messages.
fn ids(p: usize, per: usize) -> std::ops::Range<u32> {
    (p * per) as u32..((p + 1) * per) as u32
}

fn produce_blocking(sh: Arc<Shared>, p: usize, per: usize, seed: u64) {
    let sh = &*sh;
    let mut rng = Rng::new(seed);
    for (i, id) in ids(p, per).enumerate() {
        let mut m = Msg::new(id, &sh.ledger);
        let outcome = loop {
            match send_blocking_once(sh, m, &mut rng) {
                Sent::Back(back) => {
                    assert_eq!(back.id, id, "a different message came back");
                    m = back;
                    if rng.chance(30) {
                        std::thread::yield_now();
                    }
                }
                done => break done,
            }
        };
        after_send(sh, p, i, per, &outcome, &mut rng);
        let since = Instant::now();
        while sh.too_far_ahead() {
            if since.elapsed() > PACING {
                sh.write_off();
            }
            std::thread::sleep(Duration::from_micros(20));
        }
        if rng.chance(5) {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

async fn produce_async(sh: Arc<Shared>, p: usize, per: usize, seed: u64) {
    let sh = &*sh;
    let mut rng = Rng::new(seed);
    for (i, id) in ids(p, per).enumerate() {
        let mut m = Msg::new(id, &sh.ledger);
        let outcome = loop {
            match send_async_once(sh, m, &mut rng).await {
                Sent::Back(back) => {
                    assert_eq!(back.id, id, "a different message came back");
                    m = back;
                    fibra::yield_now().await;
                }
                done => break done,
            }
        };
        after_send(sh, p, i, per, &outcome, &mut rng);
        let since = Instant::now();
        while sh.too_far_ahead() {
            if since.elapsed() > PACING {
                sh.write_off();
            }
            fibra::yield_now().await;
        }
        if rng.chance(3) {
            sleep(Duration::from_micros(200)).await;
        }
    }
}

/// A producer or consumer, on an OS thread or a runtime task.
enum Worker<T> {
    Thread(std::thread::JoinHandle<T>),
    Task(JoinHandle<T>),
}

impl<T> Worker<T> {
    fn is_finished(&self) -> bool {
        match self {
            Worker::Thread(t) => t.is_finished(),
            Worker::Task(t) => t.is_finished(),
        }
    }

    fn join(self) -> T {
        match self {
            Worker::Thread(t) => t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            Worker::Task(t) => match fibra::block_on(t) {
                Ok(out) => out,
                Err(JoinError::Panicked(p)) => std::panic::resume_unwind(p),
                Err(e) => panic!("a task was cancelled: {e:?}"),
            },
        }
    }
}

/// Waits until every worker finished, feeding the watchdog; a worker of
/// `watch` that ends early (a panic) ends the wait at once.
fn wait_all<A, B>(
    sh: &Shared,
    progress: &AtomicUsize,
    all: &[Worker<A>],
    watch: &[Worker<B>],
) -> bool {
    loop {
        progress.store(sh.steps.load(SeqCst), SeqCst);
        if all.iter().all(Worker::is_finished) {
            return true;
        }
        if watch.iter().any(Worker::is_finished) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[derive(Clone, Copy, Debug)]
struct Setup {
    /// Runtime workers (0: no runtime at all, everything on OS threads).
    workers: usize,
    consumer_tasks: usize,
    consumer_threads: usize,
    producer_tasks: usize,
    producer_threads: usize,
    per: usize,
}

fn run(name: &'static str, setup: Setup) {
    let seed = test_seed(name);
    let start = Instant::now();
    with_progress_watchdog(name, Some(seed), STALL, move |progress| {
        run_inner(setup, seed, progress);
    });
    eprintln!("{name}: took {:?}", start.elapsed());
}

fn run_inner(setup: Setup, seed: u64, progress: &AtomicUsize) {
    let Setup {
        workers,
        consumer_tasks,
        consumer_threads,
        producer_tasks,
        producer_threads,
        per,
    } = setup;
    let rt = (workers > 0).then(|| Runtime::builder().workers(workers).build().unwrap());
    assert!(rt.is_some() || consumer_tasks + producer_tasks == 0);
    let (consumers, producers) = (
        consumer_tasks + consumer_threads,
        producer_tasks + producer_threads,
    );
    let task_base = (producers * per) as u32;
    let ledger = Ledger::new(task_base as usize + consumers * MAX_TASKS as usize);
    let (sh, mailboxes) = Shared::new(ledger.clone(), consumers, task_base);
    let sub_seed = |k: u64| seed ^ (k + 1).wrapping_mul(0x9E37_79B9);

    let cons: Vec<Worker<(Mailbox<Msg>, u32)>> = mailboxes
        .into_iter()
        .enumerate()
        .map(|(c, mb)| {
            let (sh, s) = (sh.clone(), sub_seed(c as u64));
            match &rt {
                Some(rt) if c < consumer_tasks => {
                    Worker::Task(rt.spawn(consume_async(sh, mb, c, s)))
                }
                _ => {
                    let h = rt.as_ref().map(Runtime::handle);
                    Worker::Thread(std::thread::spawn(move || {
                        consume_blocking(sh, mb, c, s, h)
                    }))
                }
            }
        })
        .collect();
    let prods: Vec<Worker<()>> = (0..producers)
        .map(|p| {
            let (sh, s) = (sh.clone(), sub_seed(100 + p as u64));
            match &rt {
                Some(rt) if p < producer_tasks => {
                    Worker::Task(rt.spawn(produce_async(sh, p, per, s)))
                }
                _ => Worker::Thread(std::thread::spawn(move || produce_blocking(sh, p, per, s))),
            }
        })
        .collect();

    if !wait_all(&sh, progress, &prods, &cons) {
        // A consumer ended before the producers: it failed; report it.
        let early = cons.into_iter().find(Worker::is_finished).unwrap();
        early.join();
        panic!("a consumer stopped before it was told to");
    }
    prods.into_iter().for_each(Worker::join);
    let produced = sh.sent.load(SeqCst);
    sh.stop.put(()).unwrap();
    wait_all::<_, ()>(&sh, progress, &cons, &[]);
    let mut spawned = Vec::new();
    let mut mailboxes = Vec::new();
    for w in cons {
        let (mb, n) = w.join();
        mailboxes.push(mb);
        spawned.push(n);
    }

    // Drain what is still in the resources.
    for rx in &sh.rx {
        loop {
            match rx.try_recv() {
                Ok(m) => sh.got(m, K::Drained),
                Err(TryRecvError::Empty) => break,
                Err(e) => panic!("{e:?}"),
            }
        }
    }
    for mb in &mut mailboxes {
        while let Ok(m) = mb.try_recv() {
            sh.got(m, K::Drained);
        }
    }
    if let Some(m) = sh.mvar.try_take() {
        sh.got(m, K::Drained);
    }
    assert!(sh.mvar.try_take().is_none(), "the MVar held two values");

    // Every message: received once, or dropped by its cancelled send.
    let task_ids = spawned
        .iter()
        .enumerate()
        .flat_map(|(c, &n)| (0..n).map(move |i| task_base + c as u32 * MAX_TASKS + i));
    let summary = match ledger.verify((0..task_base).chain(task_ids)) {
        Ok(s) => s,
        Err(e) => panic!("seed {seed}: {e}"),
    };
    let received = sh.received.load(SeqCst);
    assert_eq!(
        summary.received as u64, received,
        "the ledger and the count disagree"
    );
    assert!(
        received >= produced,
        "{produced} sends committed but only {received} messages received"
    );

    // Permits all back, never over-held.
    assert_eq!(sh.holders.load(SeqCst), 0);
    eprintln!("pacing wrote off {}", sh.written_off.load(SeqCst));
    assert_eq!(
        sh.sem.available_permits(),
        PERMITS,
        "semaphore permits leaked or invented"
    );
    // The mutex: free, and its counter matches the locks.
    assert!(!sh.in_lock.load(SeqCst));
    let counter = *sh.mutex.try_lock().expect("the mutex is still held");
    assert_eq!(
        counter,
        sh.locks.load(SeqCst),
        "mutex counter vs. successful locks"
    );
    // Notifications: none lost, none invented.
    let (posted, got) = (sh.notify_posted.load(SeqCst), sh.notify_got.load(SeqCst));
    let stored = sh.notify.notified_op().try_perform().is_ok();
    if sh.notify_out.load(SeqCst) == 1 {
        assert!(
            stored,
            "an outstanding notification was lost ({got} of {posted} received)"
        );
        assert_eq!(got + 1, posted);
    } else {
        assert!(!stored, "a notification stored that nobody posted");
        assert_eq!(got, posted);
    }

    let stats: Vec<String> = (0..KINDS)
        .map(|k| format!("{:?} {}", kind(k), sh.stats[k].load(SeqCst)))
        .collect();
    eprintln!(
        "seed {seed}: {} messages received, {} dropped by cancelled sends, {} tasks; {}",
        summary.received,
        summary.dropped,
        spawned.iter().sum::<u32>(),
        stats.join(", ")
    );
    // Every kind of event happened (else the test tests less than it says).
    let mut expected = vec![
        K::Chan,
        K::Mailbox,
        K::MVar,
        K::Permit,
        K::Lock,
        K::Notified,
        K::IVar,
        K::Timer,
        K::Cancelled,
        K::TryFailed,
        K::WaitUntil,
        K::ChooseAll,
        K::Select,
    ];
    if rt.is_some() {
        expected.push(K::Join);
    }
    for k in expected {
        assert!(sh.stat(k) > 0, "no {k:?} event in the whole run");
    }
    drop(rt);
}

fn kind(k: usize) -> K {
    [
        K::Chan,
        K::Mailbox,
        K::MVar,
        K::Permit,
        K::Lock,
        K::Notified,
        K::IVar,
        K::Join,
        K::Timer,
        K::Elapsed,
        K::Cancelled,
        K::TryFailed,
        K::WaitUntil,
        K::ChooseAll,
        K::Select,
        K::Drained,
    ][k]
}

/// Everything on OS threads: `select_blocking!`, `perform`, `try_perform`,
/// `run_blocking`, foreign `select` in `block_on`, polled-once drops.
#[test]
fn every_value_is_counted_once_across_all_resources_on_os_threads() {
    run(
        "all resources (OS threads)",
        Setup {
            workers: 0,
            consumer_tasks: 0,
            consumer_threads: 3,
            producer_tasks: 0,
            producer_threads: 3,
            per: scaled(24_000),
        },
    );
}

/// A 2-worker runtime: consumer and producer tasks (`select!`, `.await`,
/// `WaitUntil`, `choose_all`, joins of short tasks) plus consumers and
/// producers on OS threads.
#[test]
fn every_value_is_counted_once_across_all_resources_on_the_runtime() {
    run(
        "all resources (runtime + threads)",
        Setup {
            workers: 2,
            consumer_tasks: 3,
            consumer_threads: 1,
            producer_tasks: 2,
            producer_threads: 2,
            per: scaled(18_000),
        },
    );
}
