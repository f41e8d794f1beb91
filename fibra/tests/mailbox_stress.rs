//! Conservation stress for mailboxes: many senders (OS threads and fibra
//! tasks) each send a distinct range of numbered messages to one mailbox,
//! whose owner mixes every kind of receive — plain, selective, in choices
//! with short timeouts and with a ticking channel, `try_` forms, and
//! receives dropped mid-wait. Every message must be delivered exactly once,
//! and a receive that takes the oldest message must get each sender's
//! messages in the order they were sent. The bounded version adds
//! back-pressure and senders whose send ops are cancelled at random (and
//! then resent): a cancelled send must not have delivered its message.
//!
//! Sized by `FIBRA_STRESS` (a multiplier, default 1); seeded, and replayable
//! with `FIBRA_STRESS_SEED=<seed>` (each test prints its seed).

mod common;

use common::{Rng, poll_noop, scaled, test_seed, with_watchdog};
use fibra::time::after;
use fibra::{Addr, Mailbox, Op, Receiver, Runtime, TryRecvError, TrySendError, choose};
use futures::FutureExt;
use futures::future::{Either, select};
use std::future::IntoFuture;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

const WATCHDOG: Duration = Duration::from_secs(120);

/// How long deliveries may stop before a run counts as stuck.
const STALL: Duration = Duration::from_secs(10);

/// Senders keep at most about this many messages ahead of the receiver, so
/// that the mailbox often runs dry and the receiver's timeouts and
/// cancellations hit waiting receives too (not only ready ones).
const LEAD: usize = 12;

/// Messages sent (committed) and received so far, across all senders.
#[derive(Default)]
struct Progress {
    sent: AtomicUsize,
    received: AtomicUsize,
}

impl Progress {
    fn too_far_ahead(&self) -> bool {
        let received = self.received.load(Ordering::SeqCst);
        self.sent.load(Ordering::SeqCst) > received + LEAD
    }
}

fn msg(sender: usize, seq: usize) -> u64 {
    ((sender as u64) << 32) | seq as u64
}

fn split(m: u64) -> (usize, usize) {
    ((m >> 32) as usize, (m & 0xffff_ffff) as usize)
}

fn is_seventh(m: &u64) -> bool {
    split(*m).1 % 7 == 0
}

/// A short duration: zero (ready at once, racing the receive in the choice)
/// or up to 1.5 ms.
fn short(rng: &mut Rng) -> Duration {
    if rng.chance(40) {
        Duration::ZERO
    } else {
        Duration::from_micros(rng.below(1_500) as u64)
    }
}

#[derive(Debug, Default)]
struct Stats {
    plain: usize,
    selective: usize,
    timeouts: usize,
    ticks: usize,
    cancelled: usize,
    empty: usize,
}

/// What the receiver saw: every message once; a receive of the oldest
/// message gets, for its sender, the oldest not received yet; a selective
/// receive of multiples of 7 gets its sender's oldest such message.
struct Tally {
    per: usize,
    got: Vec<Vec<bool>>,
    /// Per sender: every message below it was received (advanced lazily).
    oldest: Vec<usize>,
    /// Per sender: every multiple of 7 below it was received.
    sevens: Vec<usize>,
    received: usize,
    stats: Stats,
    progress: Arc<Progress>,
}

impl Tally {
    fn new(senders: usize, per: usize, progress: Arc<Progress>) -> Self {
        Tally {
            progress,
            per,
            got: vec![vec![false; per]; senders],
            oldest: vec![0; senders],
            sevens: vec![0; senders],
            received: 0,
            stats: Stats::default(),
        }
    }

    fn total(&self) -> usize {
        self.got.len() * self.per
    }

    fn mark(&mut self, m: u64) {
        let (s, q) = split(m);
        assert!(
            s < self.got.len() && q < self.per,
            "a message nobody sent: {m:#x}"
        );
        assert!(!self.got[s][q], "message {s}:{q} delivered twice");
        self.got[s][q] = true;
        self.received += 1;
        self.progress.received.fetch_add(1, Ordering::SeqCst);
    }

    /// A receive that takes the first message in the mailbox (or the first
    /// from one sender).
    fn oldest(&mut self, m: u64) {
        let (s, q) = split(m);
        let o = &mut self.oldest[s];
        while *o < self.per && self.got[s][*o] {
            *o += 1;
        }
        assert_eq!(
            q, *o,
            "sender {s}: got {q} while {} was not received yet",
            *o
        );
        self.mark(m);
        self.stats.plain += 1;
    }

    /// A selective receive of the first multiple of 7.
    fn seventh(&mut self, m: u64) {
        let (s, q) = split(m);
        assert_eq!(q % 7, 0, "the predicate was not respected");
        let o = &mut self.sevens[s];
        while *o < self.per && self.got[s][*o] {
            *o += 7;
        }
        assert_eq!(q, *o, "sender {s}: got {q} while {} was not received", *o);
        self.mark(m);
        self.stats.selective += 1;
    }

    fn check_complete(&self) {
        assert_eq!(self.received, self.total(), "messages lost");
        for (s, got) in self.got.iter().enumerate() {
            if let Some(q) = got.iter().position(|g| !g) {
                panic!("message {s}:{q} never delivered");
            }
        }
    }
}

enum Ev {
    Msg(Option<u64>),
    Timeout,
    Tick,
}

/// Receives until the mailbox reports that nothing can come any more,
/// mixing every kind of receive. With `capacity`, also checks that the
/// mailbox never holds more, and that once everything arrived its room is
/// exactly `capacity` again (cancelled sends gave theirs back).
async fn receive_all(
    mut mb: Mailbox<u64>,
    senders: usize,
    per: usize,
    seed: u64,
    ticks: Receiver<()>,
    capacity: Option<usize>,
    progress: Arc<Progress>,
) -> Tally {
    let mut t = Tally::new(senders, per, progress);
    let mut rng = Rng::new(seed);
    let mut room_checked = false;
    loop {
        if let Some(cap) = capacity {
            if rng.chance(5) {
                let len = mb.len();
                assert!(len <= cap, "{len} messages in a mailbox of {cap}");
            }
            if t.received == t.total() && !room_checked {
                room_checked = true;
                check_room(&mut mb, cap);
            }
        }
        let d = short(&mut rng);
        // On an empty mailbox, favour the receives that get dropped
        // mid-wait.
        let roll = if mb.is_empty() && rng.chance(50) {
            54 + rng.below(14)
        } else {
            rng.below(100)
        };
        let got: Option<u64> = match roll {
            0..14 => match mb.recv().await {
                Some(m) => Some(m),
                None => break,
            },
            14..20 => match mb.try_recv() {
                Ok(m) => Some(m),
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    t.stats.empty += 1;
                    None
                }
            },
            20..33 => {
                match choose((mb.recv_op().wrap(Ev::Msg), after(d).wrap(|()| Ev::Timeout))).await {
                    Ev::Msg(Some(m)) => Some(m),
                    Ev::Msg(None) => break,
                    _ => {
                        t.stats.timeouts += 1;
                        None
                    }
                }
            }
            33..43 => {
                match choose((
                    mb.recv_matching_op(is_seventh).wrap(Ev::Msg),
                    after(d).wrap(|()| Ev::Timeout),
                ))
                .await
                {
                    Ev::Msg(Some(m)) => t.seventh(m),
                    // No multiple of 7 left, and none can come.
                    Ev::Msg(None) => {}
                    _ => t.stats.timeouts += 1,
                }
                None
            }
            43..48 => {
                let k = rng.below(senders);
                match choose((
                    mb.recv_matching_op(move |m| split(*m).0 == k).wrap(Ev::Msg),
                    after(d).wrap(|()| Ev::Timeout),
                ))
                .await
                {
                    Ev::Msg(m) => m,
                    _ => {
                        t.stats.timeouts += 1;
                        None
                    }
                }
            }
            48..54 => {
                if let Some(m) = mb.try_recv_matching(is_seventh) {
                    t.seventh(m);
                }
                None
            }
            // Dropped mid-wait when the sleep wins.
            54..62 => {
                let r = match select(pin!(mb.recv()), pin!(fibra::time::sleep(d))).await {
                    Either::Left((m, _)) => Some(m),
                    Either::Right(_) => None,
                };
                match r {
                    Some(Some(m)) => Some(m),
                    Some(None) => break,
                    None => {
                        t.stats.cancelled += 1;
                        None
                    }
                }
            }
            // Polled once, dropped if pending.
            62..68 => {
                let r = {
                    let mut recv = pin!(mb.recv());
                    futures::poll!(recv.as_mut())
                };
                match r {
                    Poll::Ready(Some(m)) => Some(m),
                    Poll::Ready(None) => break,
                    Poll::Pending => {
                        t.stats.cancelled += 1;
                        None
                    }
                }
            }
            68..73 => match mb.recv_timeout(d).await {
                Ok(m) => Some(m),
                Err(fibra::RecvTimeoutError::Timeout) => {
                    t.stats.timeouts += 1;
                    None
                }
                Err(fibra::RecvTimeoutError::Disconnected) => break,
            },
            // Against a channel that ticks now and then (or is closed, and
            // so always ready).
            73..83 => match choose((
                mb.recv_op().wrap(Ev::Msg),
                ticks.recv_op().wrap(|_| Ev::Tick),
            ))
            .await
            {
                Ev::Msg(Some(m)) => Some(m),
                Ev::Msg(None) => break,
                _ => {
                    t.stats.ticks += 1;
                    None
                }
            },
            83..87 => {
                match choose((
                    mb.recv_matching_op(is_seventh).wrap(Ev::Msg),
                    ticks.recv_op().wrap(|_| Ev::Tick),
                ))
                .await
                {
                    Ev::Msg(Some(m)) => t.seventh(m),
                    Ev::Msg(None) => {}
                    _ => t.stats.ticks += 1,
                }
                None
            }
            87..95 => match mb.recv_op().try_perform() {
                Ok(Some(m)) => Some(m),
                Ok(None) => break,
                Err(_) => {
                    t.stats.empty += 1;
                    None
                }
            },
            _ => {
                fibra::yield_now().await;
                None
            }
        };
        if let Some(m) = got {
            t.oldest(m);
        }
    }
    assert!(mb.is_empty(), "None while messages were left");
    if capacity.is_some() {
        assert!(room_checked, "ended before every message arrived");
    }
    t
}

/// With every message received: the room is exactly `cap` again.
fn check_room(mb: &mut Mailbox<u64>, cap: usize) {
    assert!(mb.is_empty());
    let me = mb.addr();
    for i in 0..cap {
        if let Err(e) = me.send(u64::MAX - i as u64) {
            panic!("room leaked: only {i} of {cap} free ({e:?})");
        }
    }
    assert!(
        matches!(me.send(u64::MAX), Err(TrySendError::Full(_))),
        "more room than the capacity {cap}"
    );
    for i in 0..cap {
        assert_eq!(mb.try_recv(), Ok(u64::MAX - i as u64));
    }
}

/// A thread that ticks on a one-slot channel until its receiver is gone.
fn ticker() -> (std::thread::JoinHandle<()>, Receiver<()>) {
    let (tx, rx) = fibra::bounded(1);
    let t = std::thread::spawn(move || {
        loop {
            if let Err(TrySendError::Disconnected(())) = tx.try_send(()) {
                return;
            }
            std::thread::sleep(Duration::from_micros(300));
        }
    });
    (t, rx)
}

/// Where the receiving loop runs.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// An actor on the fibra runtime (`Handle::spawn_actor`).
    Actor,
    /// `fibra::block_on` on a plain OS thread.
    Thread,
    /// A task on a tokio multi-thread runtime.
    Tokio,
}

struct Setup {
    senders_threads: usize,
    senders_tasks: usize,
    per: usize,
    capacity: Option<usize>,
    place: Place,
}

/// Runs senders and the receiver; returns the receiver's tally.
fn run(setup: Setup, seed: u64) -> Tally {
    let Setup {
        senders_threads,
        senders_tasks,
        per,
        capacity,
        place,
    } = setup;
    let senders = senders_threads + senders_tasks;
    let rt = Runtime::builder().workers(3).build().unwrap();
    let (tick_thread, ticks) = ticker();
    let (done_tx, done) = std::sync::mpsc::channel();
    let progress = Arc::new(Progress::default());
    let p = progress.clone();
    let body = move |mb: Mailbox<u64>| {
        AssertUnwindSafe(receive_all(mb, senders, per, seed, ticks, capacity, p))
            .catch_unwind()
            .map(move |r| done_tx.send(r).unwrap())
    };
    let mut tokio = None;
    let addr = match place {
        Place::Actor => {
            assert!(capacity.is_none(), "actors' mailboxes are unbounded");
            rt.handle().spawn_actor(body)
        }
        Place::Thread | Place::Tokio => {
            let (addr, mb) = match capacity {
                Some(c) => fibra::bounded_mailbox(c),
                None => fibra::mailbox(),
            };
            if let Place::Thread = place {
                std::thread::spawn(move || fibra::block_on(body(mb)));
            } else {
                let t = common::tokio_mt();
                t.spawn(body(mb));
                tokio = Some(t);
            }
            addr
        }
    };
    let threads: Vec<_> = (0..senders_threads)
        .map(|s| {
            let (addr, progress) = (addr.clone(), progress.clone());
            let seed = seed ^ (s as u64 + 1).wrapping_mul(0x9E37);
            std::thread::spawn(move || thread_sender(&addr, s, per, seed, &progress))
        })
        .collect();
    let tasks: Vec<_> = (senders_threads..senders)
        .map(|s| {
            let (addr, progress) = (addr.clone(), progress.clone());
            let seed = seed ^ (s as u64 + 1).wrapping_mul(0x9E37);
            rt.spawn(async move { task_sender(&addr, s, per, seed, &progress).await })
        })
        .collect();
    drop(addr);
    // Wait for the receiver, failing fast if deliveries stop (a lost
    // message, a lost wake-up or leaked room stalls everything).
    let total = senders * per;
    let mut last = (0, Instant::now());
    let result = loop {
        match done.recv_timeout(Duration::from_millis(50)) {
            Ok(r) => break r,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(e) => panic!("the receiver vanished: {e}"),
        }
        let received = progress.received.load(Ordering::SeqCst);
        if received != last.0 {
            last = (received, Instant::now());
        } else if last.1.elapsed() > STALL {
            panic!(
                "{place:?}: no delivery for {STALL:?}: received {received} of {total}, \
                 {} sent (lost message or wake-up, or leaked room); seed {seed}",
                progress.sent.load(Ordering::SeqCst)
            );
        }
    };
    let mut cancelled_sends = 0;
    for t in threads {
        cancelled_sends += t.join().unwrap();
    }
    for t in tasks {
        cancelled_sends += fibra::block_on(t).unwrap();
    }
    let tally = match result {
        Ok(t) => t,
        Err(panic) => std::panic::resume_unwind(panic),
    };
    tick_thread.join().unwrap();
    drop(tokio);
    eprintln!(
        "{place:?}, capacity {capacity:?}: {} messages, {:?}, sends retried {cancelled_sends}",
        tally.received, tally.stats
    );
    tally
}

/// One sender on an OS thread: `per` messages in order. On a bounded
/// mailbox, some attempts are abandoned (full, timed out, dropped) and the
/// message resent. Returns the number of abandoned attempts.
fn thread_sender(addr: &Addr<u64>, s: usize, per: usize, seed: u64, progress: &Progress) -> usize {
    let mut rng = Rng::new(seed);
    let mut retried = 0;
    for q in 0..per {
        let m = msg(s, q);
        loop {
            let sent = match rng.below(6) {
                0 => {
                    addr.send_op(m).perform().unwrap();
                    true
                }
                1 => match addr.send(m) {
                    Ok(()) => true,
                    Err(TrySendError::Full(back)) => {
                        assert_eq!(back, m);
                        false
                    }
                    Err(e) => panic!("{e:?}"),
                },
                2 => match addr.send_op(m).try_perform() {
                    Ok(r) => {
                        r.unwrap();
                        true
                    }
                    Err(op) => {
                        assert_eq!(op.into_value(), m);
                        false
                    }
                },
                3 => {
                    let d = short(&mut rng);
                    choose((
                        addr.send_op(m).wrap(|r| r.is_ok()),
                        after(d).wrap(|()| false),
                    ))
                    .perform()
                }
                _ => {
                    // Polled a few times, then dropped.
                    let mut send = pin!(addr.send_op(m).into_future());
                    let mut sent = false;
                    for _ in 0..1 + rng.below(3) {
                        if let Poll::Ready(r) = poll_noop(send.as_mut()) {
                            r.unwrap();
                            sent = true;
                            break;
                        }
                        std::thread::yield_now();
                    }
                    sent
                }
            };
            if sent {
                break;
            }
            retried += 1;
            if rng.chance(30) {
                std::thread::yield_now();
            }
        }
        progress.sent.fetch_add(1, Ordering::SeqCst);
        while progress.too_far_ahead() {
            std::thread::yield_now();
        }
        match rng.below(100) {
            0..8 => std::thread::sleep(Duration::from_micros(50)),
            8..12 => std::thread::yield_now(),
            _ => {}
        }
    }
    retried
}

/// One sender as a fibra task; see `thread_sender`.
async fn task_sender(
    addr: &Addr<u64>,
    s: usize,
    per: usize,
    seed: u64,
    progress: &Progress,
) -> usize {
    let mut rng = Rng::new(seed);
    let mut retried = 0;
    for q in 0..per {
        let m = msg(s, q);
        loop {
            let sent = match rng.below(6) {
                0 => {
                    addr.send_op(m).await.unwrap();
                    true
                }
                1 => match addr.send(m) {
                    Ok(()) => true,
                    Err(TrySendError::Full(back)) => {
                        assert_eq!(back, m);
                        false
                    }
                    Err(e) => panic!("{e:?}"),
                },
                2 => {
                    let d = short(&mut rng);
                    choose((
                        addr.send_op(m).wrap(|r| r.is_ok()),
                        after(d).wrap(|()| false),
                    ))
                    .await
                }
                3 => {
                    // Dropped mid-wait when the sleep wins.
                    let d = short(&mut rng);
                    let send = pin!(addr.send_op(m).into_future());
                    match select(send, pin!(fibra::time::sleep(d))).await {
                        Either::Left((r, _)) => {
                            r.unwrap();
                            true
                        }
                        Either::Right(_) => false,
                    }
                }
                4 => {
                    let mut send = pin!(addr.send_op(m).into_future());
                    match futures::poll!(send.as_mut()) {
                        Poll::Ready(r) => {
                            r.unwrap();
                            true
                        }
                        Poll::Pending => false,
                    }
                }
                _ => {
                    addr.send_op(m).await.unwrap();
                    true
                }
            };
            if sent {
                break;
            }
            retried += 1;
            fibra::yield_now().await;
        }
        progress.sent.fetch_add(1, Ordering::SeqCst);
        while progress.too_far_ahead() {
            fibra::yield_now().await;
        }
        match rng.below(100) {
            0..2 => fibra::time::sleep(Duration::from_micros(300)).await,
            2..10 => fibra::yield_now().await,
            _ => {}
        }
    }
    retried
}

#[test]
fn every_message_arrives_once_at_an_actor_mixing_every_kind_of_receive() {
    let seed = test_seed("mailbox conservation (actor)");
    let per = scaled(2_000);
    let start = Instant::now();
    let tally = with_watchdog("mailbox conservation (actor)", seed, WATCHDOG, move || {
        run(
            Setup {
                senders_threads: 8,
                senders_tasks: 8,
                per,
                capacity: None,
                place: Place::Actor,
            },
            seed,
        )
    });
    tally.check_complete();
    assert!(tally.stats.selective > 0 && tally.stats.plain > 0);
    eprintln!("took {:?}", start.elapsed());
}

#[test]
fn every_message_arrives_once_at_a_receiver_on_an_os_thread_or_tokio() {
    for place in [Place::Thread, Place::Tokio] {
        let seed = test_seed(&format!("mailbox conservation ({place:?})"));
        let per = scaled(1_000);
        let tally = with_watchdog("mailbox conservation", seed, WATCHDOG, move || {
            run(
                Setup {
                    senders_threads: 4,
                    senders_tasks: 4,
                    per,
                    capacity: None,
                    place,
                },
                seed,
            )
        });
        tally.check_complete();
    }
}

#[test]
fn a_bounded_mailbox_conserves_messages_under_back_pressure_and_cancelled_sends() {
    for (capacity, place) in [(3, Place::Thread), (1, Place::Tokio)] {
        let seed = test_seed(&format!("bounded mailbox conservation ({capacity})"));
        let per = scaled(500);
        let start = Instant::now();
        let tally = with_watchdog("bounded mailbox conservation", seed, WATCHDOG, move || {
            run(
                Setup {
                    senders_threads: 4,
                    senders_tasks: 8,
                    per,
                    capacity: Some(capacity),
                    place,
                },
                seed,
            )
        });
        tally.check_complete();
        eprintln!("took {:?}", start.elapsed());
    }
}

/// The narrow race of a receive in a choice: woken by a message, it looks,
/// finds it, and tries to commit while a channel sender commits the other
/// branch. Whichever wins, the message must stay (in its place) or be
/// received — never dropped.
#[test]
fn a_receive_that_loses_a_commit_race_to_a_channel_keeps_the_message() {
    let seed = test_seed("receive racing a channel commit");
    let n = scaled(30_000) as u64;
    with_watchdog(
        "receive racing a channel commit",
        seed,
        WATCHDOG,
        move || {
            let (addr, mut mb) = fibra::mailbox::<u64>();
            let (tick_tx, ticks) = fibra::channel::<()>();
            let ticker = std::thread::spawn(move || {
                let mut sent = 0u64;
                while tick_tx.send_blocking(()).is_ok() {
                    sent += 1;
                }
                sent
            });
            let sender = std::thread::spawn(move || {
                let mut rng = Rng::new(seed);
                for i in 0..n {
                    addr.send(i).unwrap();
                    if rng.chance(20) {
                        std::thread::yield_now();
                    }
                }
            });
            let (mut next, mut next_seventh, mut got_ticks) = (0, 0, 0u64);
            let mut rng = Rng::new(seed ^ 1);
            let mut taken = vec![false; n as usize];
            loop {
                let selective = rng.chance(25);
                let ev = if selective {
                    choose((
                        mb.recv_matching_op(|m| m % 7 == 0).wrap(Ev::Msg),
                        ticks.recv_op().wrap(|_| Ev::Tick),
                    ))
                    .perform()
                } else {
                    choose((
                        mb.recv_op().wrap(Ev::Msg),
                        ticks.recv_op().wrap(|_| Ev::Tick),
                    ))
                    .perform()
                };
                match ev {
                    Ev::Msg(Some(m)) if selective => {
                        // (Plain receives take multiples of 7 too.)
                        while next_seventh < n && taken[next_seventh as usize] {
                            next_seventh += 7;
                        }
                        assert_eq!(m, next_seventh, "selective receive out of order");
                        taken[m as usize] = true;
                        next_seventh += 7;
                    }
                    Ev::Msg(Some(m)) => {
                        while next < n && taken[next as usize] {
                            next += 1;
                        }
                        assert_eq!(m, next, "message {next} lost or reordered");
                        taken[m as usize] = true;
                    }
                    Ev::Msg(None) if selective => {}
                    Ev::Msg(None) => break,
                    _ => got_ticks += 1,
                }
            }
            assert!(taken.iter().all(|&t| t), "messages lost");
            drop(ticks);
            sender.join().unwrap();
            assert_eq!(ticker.join().unwrap(), got_ticks, "ticks lost");
            eprintln!("{n} messages, {got_ticks} ticks");
        },
    );
}
