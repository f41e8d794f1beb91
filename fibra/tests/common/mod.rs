//! Helpers shared by the integration tests: manual polling, wake counting,
//! a seeded generator, stress sizing, a watchdog, and a ledger that accounts
//! for every message (received, returned, or dropped where that is allowed).
#![allow(dead_code)]

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// Polls `fut` once with a waker that does nothing.
pub fn poll_noop<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// Polls `fut` once with `waker`.
pub fn poll_with<F: Future + ?Sized>(fut: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(waker))
}

/// A waker that counts its wake-ups.
#[derive(Default)]
pub struct WakeCounter(AtomicUsize);

impl WakeCounter {
    pub fn new() -> (Waker, Arc<WakeCounter>) {
        let c = Arc::new(WakeCounter::default());
        (Waker::from(c.clone()), c)
    }

    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Wake for WakeCounter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The stress multiplier from `FIBRA_STRESS` (default 1.0).
pub fn stress_factor() -> f64 {
    std::env::var("FIBRA_STRESS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|f| *f > 0.0)
        .unwrap_or(1.0)
}

/// `base` scaled by the stress multiplier, at least 1.
pub fn scaled(base: usize) -> usize {
    ((base as f64) * stress_factor()).round().max(1.0) as usize
}

/// The seed of a randomized test: `FIBRA_STRESS_SEED` if set (to replay a
/// failure), else fresh from the clock. Printed so a failure can be replayed.
pub fn test_seed(test: &str) -> u64 {
    let seed = std::env::var("FIBRA_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            t.as_nanos() as u64 ^ (std::process::id() as u64).rotate_left(32)
        });
    eprintln!("{test}: seed {seed} (replay with FIBRA_STRESS_SEED={seed})");
    seed
}

/// A tiny xorshift64* generator, so randomized tests replay from a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // splitmix the seed so nearby seeds give unrelated streams
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }
}

/// Runs `f` on a fresh thread and fails the test if it takes longer than
/// `limit` (a hang or a livelock), naming the seed.
pub fn with_watchdog<R: Send + 'static>(
    what: &str,
    seed: u64,
    limit: Duration,
    f: impl FnOnce() -> R + Send + 'static,
) -> R {
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let out = f();
        let _ = tx.send(());
        out
    });
    match rx.recv_timeout(limit) {
        Ok(()) => worker.join().unwrap(),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Ok(out) => out,
            Err(p) => {
                eprintln!("{what}: FAILED with seed {seed} (FIBRA_STRESS_SEED={seed})");
                std::panic::resume_unwind(p)
            }
        },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!(
            "{what}: no progress after {limit:?} (hang or livelock); seed {seed} \
             (replay with FIBRA_STRESS_SEED={seed})"
        ),
    }
}

/// Runs `f` on a fresh thread, which counts its progress in the counter it is
/// given; fails the test if the count stops moving for `stall` (a hang or a
/// livelock), naming the seed and the count reached.
pub fn with_progress_watchdog(
    what: &str,
    seed: Option<u64>,
    stall: Duration,
    f: impl FnOnce(&AtomicUsize) + Send + 'static,
) {
    let progress = Arc::new(AtomicUsize::new(0));
    let worker = {
        let progress = progress.clone();
        std::thread::spawn(move || f(&progress))
    };
    let mut last = (0, std::time::Instant::now());
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
        let now = progress.load(Ordering::SeqCst);
        if now != last.0 {
            last = (now, std::time::Instant::now());
        } else if last.1.elapsed() > stall {
            let seed = seed.map_or(String::new(), |s| {
                format!("; seed {s} (replay with FIBRA_STRESS_SEED={s})")
            });
            panic!("{what}: stuck for {stall:?} at step {now} (hang or livelock){seed}");
        }
    }
    if let Err(p) = worker.join() {
        if let Some(seed) = seed {
            eprintln!("{what}: FAILED with seed {seed} (FIBRA_STRESS_SEED={seed})");
        }
        std::panic::resume_unwind(p);
    }
}

// ---------------------------------------------------------------------------
// The ledger: every message's fate.
// ---------------------------------------------------------------------------

const RECEIVED: u32 = 1;
const RETURNED: u32 = 1 << 8;
const DROPPED_OK: u32 = 1 << 16;
const DROPPED_BAD: u32 = 1 << 24;

thread_local! {
    /// Ids of messages this thread may drop right now (they are in a send op
    /// that is being dropped or that lost a choice), and whether any drop is
    /// allowed (the last receiver closing a channel with values buffered).
    static ALLOWED: RefCell<(Vec<u32>, usize)> = const { RefCell::new((Vec::new(), 0)) };
}

/// Runs `f`, during which dropping any of the messages `ids` on this thread is
/// legitimate (they belong to send ops being dropped or losing a choice).
pub fn allow_drops<R>(ids: &[u32], f: impl FnOnce() -> R) -> R {
    ALLOWED.with(|a| a.borrow_mut().0.extend_from_slice(ids));
    struct Reset(usize);
    impl Drop for Reset {
        fn drop(&mut self) {
            ALLOWED.with(|a| {
                let mut a = a.borrow_mut();
                let n = a.0.len() - self.0;
                a.0.truncate(n);
            });
        }
    }
    let _reset = Reset(ids.len());
    f()
}

/// Runs `f`, during which any message may be dropped on this thread
/// (closing a channel drops what it buffers).
pub fn allow_all_drops<R>(f: impl FnOnce() -> R) -> R {
    ALLOWED.with(|a| a.borrow_mut().1 += 1);
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            ALLOWED.with(|a| a.borrow_mut().1 -= 1);
        }
    }
    let _reset = Reset;
    f()
}

fn drop_allowed(id: u32) -> bool {
    ALLOWED
        .try_with(|a| {
            let a = a.borrow();
            a.1 > 0 || a.0.contains(&id)
        })
        .unwrap_or(false)
}

/// Per message id, how often each fate happened (each must end up exactly
/// once in exactly one fate, and never "dropped where it must not be").
pub struct Ledger {
    fates: Vec<AtomicU32>,
}

impl Ledger {
    pub fn new(capacity: usize) -> Arc<Ledger> {
        Arc::new(Ledger {
            fates: (0..capacity).map(|_| AtomicU32::new(0)).collect(),
        })
    }

    pub fn capacity(&self) -> usize {
        self.fates.len()
    }

    fn mark(&self, id: u32, fate: u32) {
        self.fates[id as usize].fetch_add(fate, Ordering::SeqCst);
    }

    /// Checks every id in `ids`: exactly one fate, once. Returns a
    /// description of what went wrong.
    pub fn verify(&self, ids: impl IntoIterator<Item = u32>) -> Result<Summary, String> {
        let mut s = Summary::default();
        let mut problems = Vec::new();
        for id in ids {
            let v = self.fates[id as usize].load(Ordering::SeqCst);
            let (recv, ret, dok, dbad) = (v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24);
            s.received += recv as usize;
            s.returned += ret as usize;
            s.dropped += dok as usize;
            let total = recv + ret + dok + dbad;
            let what = if dbad > 0 {
                Some("dropped by someone who must not drop it (lost)")
            } else if total == 0 {
                Some("never received, returned or dropped (lost or leaked)")
            } else if total > 1 {
                Some("accounted more than once (duplicated)")
            } else {
                None
            };
            if let Some(what) = what {
                s.bad += 1;
                if problems.len() < 10 {
                    problems.push(format!(
                        "message {id}: {what} [received {recv}, returned {ret}, \
                         dropped(allowed) {dok}, dropped(not allowed) {dbad}]"
                    ));
                }
            }
        }
        if s.bad == 0 {
            Ok(s)
        } else {
            Err(format!(
                "{} bad messages ({s:?}):\n{}",
                s.bad,
                problems.join("\n")
            ))
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    pub received: usize,
    pub returned: usize,
    pub dropped: usize,
    pub bad: usize,
}

/// A unique message whose fate the ledger records.
pub struct Msg {
    pub id: u32,
    ledger: Arc<Ledger>,
    live: bool,
}

impl Msg {
    pub fn new(id: u32, ledger: &Arc<Ledger>) -> Msg {
        assert!((id as usize) < ledger.capacity(), "ledger too small");
        Msg {
            id,
            ledger: ledger.clone(),
            live: true,
        }
    }

    /// A consumer got it.
    pub fn received(mut self) -> u32 {
        self.live = false;
        self.ledger.mark(self.id, RECEIVED);
        self.id
    }

    /// It came back to its sender, who gives up on it.
    pub fn returned(mut self) -> u32 {
        self.live = false;
        self.ledger.mark(self.id, RETURNED);
        self.id
    }
}

impl Drop for Msg {
    fn drop(&mut self) {
        if self.live {
            let fate = if drop_allowed(self.id) {
                DROPPED_OK
            } else {
                DROPPED_BAD
            };
            self.ledger.mark(self.id, fate);
        }
    }
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Msg({})", self.id)
    }
}

/// A future whose drop (and polls) may drop the messages `ids`: wrap a send
/// (or a choice with sends) that may be cancelled or lose.
pub struct AllowDrop<F> {
    ids: Vec<u32>,
    fut: Option<Pin<Box<F>>>,
}

impl<F> AllowDrop<F> {
    pub fn new(ids: Vec<u32>, fut: F) -> Self {
        AllowDrop {
            ids,
            fut: Some(Box::pin(fut)),
        }
    }
}

impl<F: Future> Future for AllowDrop<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let fut = this.fut.as_mut().expect("polled after drop");
        let out = allow_drops(&this.ids, || fut.as_mut().poll(cx));
        if out.is_ready() {
            // The losing branches' values go with the future.
            let f = this.fut.take();
            allow_drops(&this.ids, || drop(f));
        }
        out
    }
}

impl<F> Drop for AllowDrop<F> {
    fn drop(&mut self) {
        let f = self.fut.take();
        allow_drops(&self.ids, || drop(f));
    }
}

/// A value that counts its drops, for leak and double-drop checks.
pub struct DropCount {
    pub value: u64,
    drops: Arc<AtomicUsize>,
}

impl DropCount {
    pub fn new(value: u64, drops: &Arc<AtomicUsize>) -> Self {
        DropCount {
            value,
            drops: drops.clone(),
        }
    }
}

impl Drop for DropCount {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for DropCount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DropCount({})", self.value)
    }
}

/// A multi-thread tokio runtime with two workers and timers.
pub fn tokio_mt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
}

/// A current-thread tokio runtime with timers.
pub fn tokio_ct() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Checks that `got` holds each of `0..n` exactly once.
pub fn assert_exactly_once(mut got: Vec<u64>, n: u64) {
    got.sort_unstable();
    let len = got.len();
    got.dedup();
    assert_eq!(got.len(), len, "some values were received twice");
    assert_eq!(got.len() as u64, n, "some values were lost");
    assert!(got.iter().copied().eq(0..n), "unexpected values received");
}

// ---------------------------------------------------------------------------
// Scenarios shared by the three channel flavours.
// ---------------------------------------------------------------------------

/// A channel constructor, to run a scenario on each flavour.
pub type MakeChan = fn() -> (fibra::Sender<u64>, fibra::Receiver<u64>);

/// `producers` OS threads each send `per` values (`p * per + seq`) with
/// `send_blocking`; `consumers` OS threads receive with `recv_blocking` until
/// the channel closes. Every value arrives exactly once, and each consumer
/// sees each producer's values in the order they were sent.
pub fn mpmc_os_threads(make: MakeChan, producers: u64, consumers: usize, per: u64) {
    let (tx, rx) = make();
    let prod: Vec<_> = (0..producers)
        .map(|p| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for s in 0..per {
                    tx.send_blocking(p * per + s).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let cons: Vec<_> = (0..consumers)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while let Ok(v) = rx.recv_blocking() {
                    got.push(v);
                }
                got
            })
        })
        .collect();
    drop(rx);
    for p in prod {
        p.join().unwrap();
    }
    let mut all = Vec::new();
    for c in cons {
        let got = c.join().unwrap();
        let mut last = vec![None::<u64>; producers as usize];
        for &v in &got {
            let p = (v / per) as usize;
            assert!(
                last[p].is_none_or(|l| l < v),
                "a consumer saw producer {p}'s values out of order"
            );
            last[p] = Some(v);
        }
        all.extend(got);
    }
    assert_exactly_once(all, producers * per);
}

/// Producers and consumers split between OS threads (blocking forms) and
/// tokio tasks on a multi-thread runtime (async forms).
pub fn mpmc_threads_and_tasks(make: MakeChan, per: u64) {
    let rt = tokio_mt();
    let (tx, rx) = make();
    let thread_prod = {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for s in 0..per {
                tx.send_blocking(s).unwrap();
            }
        })
    };
    let task_prod = {
        let tx = tx.clone();
        rt.spawn(async move {
            for s in per..2 * per {
                tx.send(s).await.unwrap();
            }
        })
    };
    drop(tx);
    let thread_cons = {
        let rx = rx.clone();
        std::thread::spawn(move || {
            let mut got = Vec::new();
            while let Ok(v) = rx.recv_blocking() {
                got.push(v);
            }
            got
        })
    };
    let task_cons = rt.spawn(async move {
        let mut got = Vec::new();
        while let Ok(v) = rx.recv().await {
            got.push(v);
        }
        got
    });
    thread_prod.join().unwrap();
    rt.block_on(task_prod).unwrap();
    let mut all = thread_cons.join().unwrap();
    all.extend(rt.block_on(task_cons).unwrap());
    assert_exactly_once(all, 2 * per);
}

/// An OS thread sends to a tokio task and the task answers on a second
/// channel of the same flavour: a ping-pong across the two worlds, in both
/// directions (thread -> task -> thread).
pub fn ping_pong_thread_and_task(make: MakeChan, rounds: u64) {
    let rt = tokio_mt();
    let (to_task, task_rx) = make();
    let (task_tx, from_task) = make();
    let task = rt.spawn(async move {
        let mut n = 0;
        while let Ok(v) = task_rx.recv().await {
            task_tx.send(v * 2).await.unwrap();
            n += 1;
        }
        n
    });
    let thread = std::thread::spawn(move || {
        for i in 0..rounds {
            to_task.send_blocking(i).unwrap();
            assert_eq!(from_task.recv_blocking(), Ok(i * 2));
        }
        drop(to_task);
        // The task dropped its sender when it finished: we see the close.
        assert_eq!(from_task.recv_blocking(), Err(fibra::RecvError));
    });
    thread.join().unwrap();
    assert_eq!(rt.block_on(task).unwrap(), rounds);
}

// ---------------------------------------------------------------------------
// A waker whose first clone runs a hook.
// ---------------------------------------------------------------------------

/// A waker that runs `hook` the first time it is cloned. A perform clones the
/// waker of its first poll between its optimistic try and its block phase, so
/// the hook runs exactly there: tests use it to change the world (or to line
/// two performs up) between the two phases. Waking does nothing: the owner
/// polls.
pub fn hook_waker(hook: impl FnOnce() + Send + 'static) -> Waker {
    let data = Arc::new(HookWaker {
        hook: std::sync::Mutex::new(Some(Box::new(hook))),
    });
    let raw = std::task::RawWaker::new(Arc::into_raw(data).cast(), &HOOK_VTABLE);
    // SAFETY: the vtable below upholds the RawWaker contract: the data
    // pointer is an `Arc<HookWaker>` and each function manages its count.
    unsafe { Waker::from_raw(raw) }
}

struct HookWaker {
    hook: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

static HOOK_VTABLE: std::task::RawWakerVTable =
    std::task::RawWakerVTable::new(hook_clone, hook_noop, hook_noop_by_ref, hook_noop);

unsafe fn hook_clone(data: *const ()) -> std::task::RawWaker {
    // SAFETY: `data` came from `Arc::into_raw` in `HookWaker::new` and the
    // waker it belongs to is alive, so the Arc is too.
    let this = unsafe { &*data.cast::<HookWaker>() };
    let hook = this.hook.lock().unwrap().take();
    if let Some(hook) = hook {
        hook();
    }
    // SAFETY: as above; the new RawWaker owns one more count.
    unsafe { Arc::increment_strong_count(data.cast::<HookWaker>()) };
    std::task::RawWaker::new(data, &HOOK_VTABLE)
}

unsafe fn hook_noop(data: *const ()) {
    // SAFETY: wake (by value) and drop release the count this waker owned.
    drop(unsafe { Arc::from_raw(data.cast::<HookWaker>()) });
}

unsafe fn hook_noop_by_ref(_data: *const ()) {}

/// Polls `fut` with `waker` until it is ready, yielding between polls.
pub fn spin_poll<F: Future + ?Sized>(mut fut: Pin<&mut F>, waker: &Waker) -> F::Output {
    loop {
        if let Poll::Ready(out) = poll_with(fut.as_mut(), waker) {
            return out;
        }
        std::thread::yield_now();
    }
}

// ---------------------------------------------------------------------------
// Driving a future on this thread, with a handshake after its first poll.
// ---------------------------------------------------------------------------

struct UnparkThread(std::thread::Thread);

impl Wake for UnparkThread {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Drives `fut` to completion on the current OS thread, parking between
/// polls, and calls `first` right after its first poll with whether that
/// poll was pending. A deterministic handshake: once `first` runs, the
/// future has registered itself (queued on a semaphore, parked on a
/// mailbox, ...) and keeps its place while this thread blocks.
pub fn drive_after_first_poll<F: Future>(fut: F, first: impl FnOnce(bool)) -> F::Output {
    let waker = Waker::from(Arc::new(UnparkThread(std::thread::current())));
    let mut fut = std::pin::pin!(fut);
    let mut first = Some(first);
    loop {
        let out = poll_with(fut.as_mut(), &waker);
        if let Some(f) = first.take() {
            f(out.is_pending());
        }
        match out {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// Spins (yielding) until `cond` holds; panics with `what` after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "gave up waiting: {what}");
        std::thread::yield_now();
    }
}

/// Keeps the panics whose message contains one of `expected` (the tests'
/// own crashing actors) off stderr; every other panic prints as usual.
#[allow(dead_code)]
pub fn quiet_panics(expected: &'static [&'static str]) {
    static QUIET: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    static HOOK: std::sync::Once = std::sync::Once::new();
    QUIET.lock().unwrap().extend_from_slice(expected);
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let quiet = QUIET.lock().map(|q| q.iter().any(|e| msg.contains(e)));
            if !quiet.unwrap_or(false) {
                default(info);
            }
        }));
    });
}

/// `k` channels cycling through the flavours: rendezvous, `bounded(1)`,
/// `bounded(4)`, unbounded.
pub fn channels<T>(k: usize) -> (Vec<fibra::Sender<T>>, Vec<fibra::Receiver<T>>) {
    (0..k)
        .map(|i| match i % 4 {
            0 => fibra::channel::<T>(),
            1 => fibra::bounded(1),
            2 => fibra::bounded(4),
            _ => fibra::unbounded(),
        })
        .unzip()
}

/// A task spawned on the current fibra runtime that only marks that it ran:
/// a loop whose every step is ready at once checks it to learn whether the
/// cooperative budget made the loop yield to its worker's other tasks.
pub struct OtherTask(Arc<std::sync::atomic::AtomicBool>, fibra::JoinHandle<()>);

impl OtherTask {
    /// Spawns it (inside a fibra runtime).
    pub fn spawn() -> Self {
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mark = ran.clone();
        let task = fibra::spawn(async move { mark.store(true, Ordering::SeqCst) });
        Self(ran, task)
    }

    /// Whether it ran; if not, counts one more step of the caller's loop in
    /// `spins`, and panics once that loop has gone 10,000,000 steps without
    /// letting it run.
    pub fn has_run(&self, spins: &mut u64) -> bool {
        if self.0.load(Ordering::SeqCst) {
            return true;
        }
        *spins += 1;
        assert!(*spins < 10_000_000, "the other task never ran");
        false
    }
}
