//! Supervisors: each restart strategy (who is stopped, in which order, who
//! starts again), restart types, the intensity limit and its window,
//! ordered shutdown with a timeout, stable addresses whose queued messages
//! survive a restart, and a crash storm under load that ends in the
//! supervisor's escalation with every message counted once and nothing
//! leaked.

mod common;

use common::{Rng, test_seed};
use fibra::actors::{ChildSpec, Restart, Strategy, Supervisor, SupervisorRef};
use fibra::{Addr, Exit, ExitSignal, Mailbox, Runtime};
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(30);

fn rt() -> Runtime {
    common::quiet_panics(&["crash requested", "poison"]);
    Runtime::builder().workers(2).build().unwrap()
}

type Log = Arc<Mutex<Vec<String>>>;

fn log_of(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

enum Cmd {
    Crash,
    Ping(fibra::Reply<u64>),
}

/// Logs "dropped NAME" when a life's body goes (killed, crashed or done).
struct OnDrop(String, Log);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.1.lock().unwrap().push(format!("dropped {}", self.0));
    }
}

/// A child that logs its starts and ends, answers pings with its life
/// number, and crashes on request.
fn add_child(sup: &mut Supervisor, spec: ChildSpec, log: &Log) -> Addr<Cmd> {
    let body = logged_body(spec.name(), log);
    sup.child_spec(spec, body)
}

/// The body of [`add_child`]'s children.
fn logged_body(
    name: &str,
    log: &Log,
) -> impl FnMut(Mailbox<Cmd>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + 'static {
    let (name, log) = (name.to_string(), log.clone());
    let mut lives = 0u64;
    move |mut mb: Mailbox<Cmd>| {
        lives += 1;
        let (name, log, life) = (name.clone(), log.clone(), lives);
        log.lock().unwrap().push(format!("start {name}"));
        Box::pin(async move {
            let _guard = OnDrop(name.clone(), log.clone());
            while let Some(cmd) = mb.recv().await {
                match cmd {
                    Cmd::Crash => panic!("crash requested"),
                    Cmd::Ping(reply) => {
                        let _ = reply.send(life);
                    }
                }
            }
            log.lock().unwrap().push(format!("stop {name}"));
        })
    }
}

async fn ping(a: &Addr<Cmd>) -> u64 {
    a.call(Cmd::Ping, LONG).await.unwrap()
}

fn start_three(strategy: Strategy, log: &Log) -> (SupervisorRef, Vec<Addr<Cmd>>) {
    let mut sup = Supervisor::new(strategy).intensity(10, Duration::from_secs(60));
    let children = ["a", "b", "c"]
        .iter()
        .map(|n| add_child(&mut sup, ChildSpec::new(*n), log))
        .collect();
    (sup.spawn(), children)
}

/// Waits until the children's lives are `lives`.
async fn wait_lives(sup: &SupervisorRef, lives: &[u64]) {
    let start = std::time::Instant::now();
    loop {
        let now: Vec<u64> = sup
            .children()
            .await
            .unwrap()
            .iter()
            .map(|c| c.lives)
            .collect();
        if now == lives {
            return;
        }
        assert!(start.elapsed() < LONG, "lives {now:?}, expected {lives:?}");
        fibra::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Crashes `victim` and waits until its next life answers.
async fn crash_and_wait(victim: &Addr<Cmd>, life_after: u64) {
    victim.send(Cmd::Crash).unwrap();
    // Queued behind the crash: answered by the next life.
    assert_eq!(ping(victim).await, life_after);
}

#[test]
fn one_for_one_restarts_only_the_crashed_child() {
    let log = Log::default();
    rt().block_on({
        let log = log.clone();
        async move {
            let (sup, kids) = start_three(Strategy::OneForOne, &log);
            for k in &kids {
                assert_eq!(ping(k).await, 1);
            }
            log.lock().unwrap().clear();
            crash_and_wait(&kids[1], 2).await;
            assert_eq!(ping(&kids[0]).await, 1);
            assert_eq!(ping(&kids[2]).await, 1);
            assert_eq!(log_of(&log), ["dropped b", "start b"]);
            let lives: Vec<u64> = sup
                .children()
                .await
                .unwrap()
                .iter()
                .map(|c| c.lives)
                .collect();
            assert_eq!(lives, [1, 2, 1]);
            sup.shutdown();
            assert_eq!(sup.exited().await, Exit::Normal);
        }
    });
}

#[test]
fn one_for_all_stops_the_others_in_reverse_order_and_restarts_all_in_order() {
    let log = Log::default();
    rt().block_on({
        let log = log.clone();
        async move {
            let (sup, kids) = start_three(Strategy::OneForAll, &log);
            for k in &kids {
                assert_eq!(ping(k).await, 1);
            }
            log.lock().unwrap().clear();
            crash_and_wait(&kids[0], 2).await;
            for k in &kids {
                assert_eq!(ping(k).await, 2);
            }
            assert_eq!(
                log_of(&log),
                [
                    "dropped a",
                    "dropped c",
                    "dropped b",
                    "start a",
                    "start b",
                    "start c"
                ]
            );
            sup.shutdown();
            assert_eq!(sup.exited().await, Exit::Normal);
        }
    });
}

#[test]
fn rest_for_one_restarts_the_child_and_those_started_after_it() {
    let log = Log::default();
    rt().block_on({
        let log = log.clone();
        async move {
            let (sup, kids) = start_three(Strategy::RestForOne, &log);
            for k in &kids {
                assert_eq!(ping(k).await, 1);
            }
            log.lock().unwrap().clear();
            crash_and_wait(&kids[1], 2).await;
            assert_eq!(ping(&kids[0]).await, 1);
            assert_eq!(ping(&kids[2]).await, 2);
            assert_eq!(
                log_of(&log),
                ["dropped b", "dropped c", "start b", "start c"]
            );
            sup.shutdown();
            assert_eq!(sup.exited().await, Exit::Normal);
        }
    });
}

#[test]
fn shutdown_stops_children_in_reverse_order_and_kills_one_that_overstays() {
    let log = Log::default();
    rt().block_on({
        let log = log.clone();
        async move {
            let mut sup = Supervisor::new(Strategy::OneForOne);
            let a = add_child(&mut sup, ChildSpec::new("a"), &log);
            // b ignores the closing of its mailbox: it is killed after its
            // shutdown timeout.
            let b_log = log.clone();
            let b = sup.child_spec(
                ChildSpec::new("b").shutdown(Duration::from_millis(20)),
                move |mb: Mailbox<()>| {
                    let log = b_log.clone();
                    async move {
                        let _mb = mb;
                        let _guard = OnDrop("b".into(), log);
                        std::future::pending::<()>().await;
                    }
                },
            );
            let c = add_child(&mut sup, ChildSpec::new("c"), &log);
            let sup = sup.spawn();
            assert_eq!(ping(&a).await, 1);
            assert_eq!(ping(&c).await, 1);
            log.lock().unwrap().clear();
            sup.shutdown();
            assert_eq!(sup.exited().await, Exit::Normal);
            assert_eq!(
                log_of(&log),
                ["stop c", "dropped c", "dropped b", "stop a", "dropped a"]
            );
            assert_eq!(a.exited().await, Exit::Normal);
            assert_eq!(b.exited().await, Exit::Killed);
            assert_eq!(c.exited().await, Exit::Normal);
            assert!(a.send(Cmd::Crash).is_err(), "stopped for good: sends fail");
        }
    });
}

#[test]
fn graceful_shutdown_lets_the_child_receive_what_is_queued() {
    rt().block_on(async {
        let got = Arc::new(AtomicUsize::new(0));
        let mut sup = Supervisor::new(Strategy::OneForOne);
        let g = got.clone();
        let child = sup.child("counter", move |mut mb: Mailbox<u32>| {
            let g = g.clone();
            async move {
                while let Some(_n) = mb.recv().await {
                    g.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let sup = sup.spawn();
        for n in 0..1000 {
            child.send(n).unwrap();
        }
        sup.shutdown();
        sup.exited().await;
        assert_eq!(got.load(Ordering::SeqCst), 1000);
    });
}

#[test]
fn restart_types_temporary_and_transient() {
    let log = Log::default();
    rt().block_on({
        let log = log.clone();
        async move {
            let mut sup = Supervisor::new(Strategy::OneForAll);
            let temp = add_child(
                &mut sup,
                ChildSpec::new("temp").restart(Restart::Temporary),
                &log,
            );
            let trans = sup.child_spec(
                ChildSpec::new("trans").restart(Restart::Transient),
                |mut mb: Mailbox<bool>| async move {
                    // true: crash; false: end normally.
                    if mb.recv().await == Some(true) {
                        panic!("crash requested");
                    }
                },
            );
            let perm = add_child(&mut sup, ChildSpec::new("perm"), &log);
            let sup = sup.spawn();
            // A temporary child's crash is its end; nobody restarts.
            temp.send(Cmd::Crash).unwrap();
            assert_eq!(
                temp.exited().await,
                Exit::Panicked("crash requested".into())
            );
            assert_eq!(ping(&perm).await, 1);
            // A transient child's crash restarts (one-for-all: perm too)...
            trans.send(true).unwrap();
            wait_lives(&sup, &[1, 2, 2]).await;
            assert_eq!(ping(&perm).await, 2);
            // ...and its normal end is final, leaving the others alone.
            trans.send(false).unwrap();
            assert_eq!(trans.exited().await, Exit::Normal);
            assert_eq!(ping(&perm).await, 2);
            let infos = sup.children().await.unwrap();
            let lives: Vec<u64> = infos.iter().map(|c| c.lives).collect();
            assert_eq!(lives, [1, 2, 2], "the temporary child was not restarted");
            sup.shutdown();
            sup.exited().await;
        }
    });
}

#[test]
fn intensity_exceeded_stops_the_children_and_fails_the_supervisor() {
    let log = Log::default();
    rt().block_on({
        let log = log.clone();
        async move {
            let mut sup =
                Supervisor::new(Strategy::OneForOne).intensity(2, Duration::from_secs(60));
            let a = add_child(&mut sup, ChildSpec::new("a"), &log);
            let b = add_child(&mut sup, ChildSpec::new("b"), &log);
            let sup = sup.spawn();
            // Whoever links to the supervisor sees its failure.
            let (watcher, mut wmb) = fibra::mailbox::<ExitSignal>();
            wmb.trap_exits(|s| s);
            sup.link(&watcher);
            let monitor = sup.monitor();
            crash_and_wait(&a, 2).await;
            crash_and_wait(&a, 3).await;
            a.send(Cmd::Crash).unwrap(); // the third restart within the period
            let exit = sup.exited().await;
            match &exit {
                Exit::Failed(why) => assert!(why.contains("\"a\""), "{why}"),
                other => panic!("expected a failure, got {other:?}"),
            }
            assert_eq!(monitor.exited().await, exit);
            let signal = wmb.recv().await.unwrap();
            assert_eq!((signal.from, &signal.exit), (sup.id(), &exit));
            assert_eq!(a.exited().await, Exit::Panicked("crash requested".into()));
            assert_eq!(b.exited().await, Exit::Normal, "b was stopped gracefully");
            assert!(b.send(Cmd::Crash).is_err());
        }
    });
}

#[test]
fn restarts_older_than_the_period_do_not_count() {
    let log = Log::default();
    rt().block_on({
        let log = log.clone();
        async move {
            let mut sup =
                Supervisor::new(Strategy::OneForOne).intensity(1, Duration::from_millis(10));
            let a = add_child(&mut sup, ChildSpec::new("a"), &log);
            let sup = sup.spawn();
            for life in 2..=5 {
                // Each restart is at least 30 ms after the one before.
                fibra::time::sleep(Duration::from_millis(30)).await;
                crash_and_wait(&a, life).await;
            }
            assert_eq!(sup.try_exited(), None);
            sup.shutdown();
            assert_eq!(sup.exited().await, Exit::Normal);
        }
    });
}

#[test]
fn a_restarted_child_keeps_its_address_and_its_queued_messages() {
    rt().block_on(async {
        let mut sup = Supervisor::new(Strategy::OneForOne);
        let (out, mut results) = fibra::mailbox::<(u64, u32)>();
        let mut lives = 0;
        let child = sup.child("echo", move |mut mb: Mailbox<Option<u32>>| {
            lives += 1;
            let (out, life) = (out.clone(), lives);
            async move {
                while let Some(m) = mb.recv().await {
                    match m {
                        None => panic!("poison"),
                        Some(n) => out.send((life, n)).unwrap(),
                    }
                }
            }
        });
        let sup = sup.spawn();
        child.send(Some(0)).unwrap();
        child.send(None).unwrap();
        for n in 1..=500 {
            child.send(Some(n)).unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..=500 {
            got.push(results.recv().await.unwrap());
        }
        assert_eq!(got[0], (1, 0));
        for (i, (life, n)) in got[1..].iter().enumerate() {
            assert_eq!((*life, *n), (2, i as u32 + 1), "in order, by the next life");
        }
        sup.shutdown();
        sup.exited().await;
    });
}

#[test]
fn messages_skipped_by_a_selective_receive_survive_a_crash() {
    rt().block_on(async {
        let mut sup = Supervisor::new(Strategy::OneForOne);
        let (out, mut results) = fibra::mailbox::<u32>();
        let mut lives = 0;
        let child = sup.child("selective", move |mut mb: Mailbox<u32>| {
            lives += 1;
            let (out, first) = (out.clone(), lives == 1);
            async move {
                if first {
                    // Skips 1, 2, 3 (stashed), takes the poison 0.
                    mb.recv_matching(|n| *n == 0).await;
                    panic!("poison");
                }
                while let Some(n) = mb.recv().await {
                    out.send(n).unwrap();
                }
            }
        });
        let sup = sup.spawn();
        for n in [1, 2, 3, 0, 4] {
            child.send(n).unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..4 {
            got.push(results.recv().await.unwrap());
        }
        assert_eq!(got, [1, 2, 3, 4]);
        sup.shutdown();
        sup.exited().await;
    });
}

/// A message of the crash storm: counts its drops.
struct Job {
    id: u32,
    poison: bool,
    drops: Arc<AtomicUsize>,
}

impl Drop for Job {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn crash_storm_ends_in_escalation_with_every_message_counted_once() {
    let seed = test_seed("crash_storm");
    rt().block_on(async move {
        const CHILDREN: usize = 4;
        const CLIENTS: usize = 4;
        const PER_CLIENT: u32 = 5_000;
        let drops = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Vec::<u32>::new()));
        let mut sup = Supervisor::new(Strategy::OneForOne).intensity(20, Duration::from_secs(60));
        let mut kids = Vec::new();
        for i in 0..CHILDREN {
            let received = received.clone();
            kids.push(
                sup.child(format!("worker{i}"), move |mut mb: Mailbox<Job>| {
                    let received = received.clone();
                    async move {
                        while let Some(job) = mb.recv().await {
                            received.lock().unwrap().push(job.id);
                            if job.poison {
                                panic!("poison");
                            }
                        }
                    }
                }),
            );
        }
        let sup = sup.spawn();
        let returned = Arc::new(AtomicUsize::new(0));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let (kids, drops, returned) = (kids.clone(), drops.clone(), returned.clone());
                fibra::spawn(async move {
                    let mut rng = Rng::new(seed ^ c as u64);
                    for k in 0..PER_CLIENT {
                        let id = c as u32 * PER_CLIENT + k;
                        let job = Job {
                            id,
                            poison: rng.chance(1),
                            drops: drops.clone(),
                        };
                        if let Err(e) = kids[rng.below(CHILDREN)].send(job) {
                            // Handed back: the child was stopped for good.
                            drop(e.into_inner());
                            returned.fetch_add(1, Ordering::SeqCst);
                        }
                        if k % 64 == 0 {
                            fibra::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for c in clients {
            c.await.unwrap();
        }
        // About 1% of 20,000 jobs are poison: far more than 20 crashes.
        assert!(matches!(sup.exited().await, Exit::Failed(_)));
        for k in &kids {
            assert!(k.exited().await.is_abnormal() || k.try_exited() == Some(Exit::Normal));
        }
        drop(kids);
        let total = CLIENTS * PER_CLIENT as usize;
        // Every job was dropped once: received (then dropped by the child),
        // handed back, or dropped with a stopped child's mailbox. None is
        // still held anywhere (nothing leaked), none dropped twice.
        assert_eq!(drops.load(Ordering::SeqCst), total);
        fibra::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(drops.load(Ordering::SeqCst), total, "a job dropped twice");
        let received = received.lock().unwrap();
        let unique: HashSet<u32> = received.iter().copied().collect();
        assert_eq!(unique.len(), received.len(), "a job was delivered twice");
        assert!(received.len() + returned.load(Ordering::SeqCst) <= total);
    });
}

#[test]
fn a_supervision_tree_restarts_subtrees_and_shuts_down_depth_first_in_reverse() {
    let log = Log::default();
    rt().block_on({
        let log = log.clone();
        async move {
            let mut inner = Supervisor::new(Strategy::OneForOne);
            let a = add_child(&mut inner, ChildSpec::new("a"), &log);
            let b = add_child(&mut inner, ChildSpec::new("b"), &log);
            let mut top = Supervisor::new(Strategy::OneForAll);
            let inner = top.supervisor(ChildSpec::new("inner"), inner);
            let c = add_child(&mut top, ChildSpec::new("c"), &log);
            let top = top.spawn();
            for k in [&a, &b, &c] {
                assert_eq!(ping(k).await, 1);
            }
            log.lock().unwrap().clear();
            // c's crash restarts everything under top: the inner
            // supervisor's life is killed (its children with it) and a new
            // one starts them again, on the same addresses.
            crash_and_wait(&c, 2).await;
            wait_lives(&top, &[2, 2]).await;
            wait_lives(&inner, &[2, 2]).await;
            assert_eq!(ping(&a).await, 2);
            assert_eq!(ping(&b).await, 2);
            // The inner subtree is gone before top restarts anything; each
            // supervisor starts its children in order (the inner one's
            // start runs in its own task, so it may come after c's).
            let restart_log = log_of(&log);
            assert_eq!(&restart_log[..3], ["dropped c", "dropped b", "dropped a"]);
            let starts: Vec<&str> = restart_log[3..].iter().map(String::as_str).collect();
            assert!(
                starts == ["start a", "start b", "start c"]
                    || starts == ["start c", "start a", "start b"]
                    || starts == ["start a", "start c", "start b"],
                "{starts:?}"
            );
            log.lock().unwrap().clear();
            top.shutdown();
            assert_eq!(top.exited().await, Exit::Normal);
            assert_eq!(inner.exited().await, Exit::Normal);
            assert_eq!(
                log_of(&log),
                [
                    "stop c",
                    "dropped c",
                    "stop b",
                    "dropped b",
                    "stop a",
                    "dropped a"
                ]
            );
            for k in [&a, &b, &c] {
                assert_eq!(k.exited().await, Exit::Normal);
            }
        }
    });
}

#[test]
fn a_failing_subtree_is_seen_and_restarted_by_the_supervisor_above() {
    rt().block_on(async {
        let mut inner = Supervisor::new(Strategy::OneForOne).intensity(1, Duration::from_secs(60));
        let w = inner.child("w", |mut mb: Mailbox<Cmd>| async move {
            while let Some(cmd) = mb.recv().await {
                match cmd {
                    Cmd::Crash => panic!("crash requested"),
                    Cmd::Ping(r) => {
                        let _ = r.send(0);
                    }
                }
            }
        });
        let mut top = Supervisor::new(Strategy::OneForOne).intensity(1, Duration::from_secs(60));
        let inner = top.supervisor(ChildSpec::new("inner"), inner);
        let top = top.spawn();
        // Two crashes exceed the inner supervisor's intensity (1): it fails,
        // and top restarts it (its first restart).
        w.send(Cmd::Crash).unwrap();
        w.send(Cmd::Crash).unwrap();
        wait_lives(&top, &[2]).await;
        assert_eq!(ping(&w).await, 0, "the worker runs again, same address");
        // Two more: the inner supervisor fails again, which is one restart
        // too many for top: top fails, and everything is stopped for good.
        w.send(Cmd::Crash).unwrap();
        w.send(Cmd::Crash).unwrap();
        match top.exited().await {
            Exit::Failed(why) => assert!(why.contains("\"inner\""), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(inner.exited().await, Exit::Failed(_)));
        assert!(w.exited().await.is_abnormal());
        assert!(w.send(Cmd::Crash).is_err());
    });
}

/// The names of the supervisor's children, in start order.
async fn names(sup: &SupervisorRef) -> Vec<String> {
    sup.children()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect()
}

#[test]
fn children_started_while_running_are_supervised_like_the_others() {
    let log = Log::default();
    rt().block_on({
        let log = log.clone();
        async move {
            let mut sup = Supervisor::new(Strategy::RestForOne).intensity(10, LONG);
            let a = add_child(&mut sup, ChildSpec::new("a"), &log);
            let b = add_child(&mut sup, ChildSpec::new("b"), &log);
            let sup = sup.spawn();
            let c = sup
                .start_child(ChildSpec::new("c"), logged_body("c", &log))
                .await
                .unwrap();
            assert_eq!(names(&sup).await, ["a", "b", "c"]);
            assert_eq!(ping(&c).await, 1);
            // Appended: a restart of b restarts c after it.
            log.lock().unwrap().clear();
            crash_and_wait(&b, 2).await;
            assert_eq!(ping(&c).await, 2);
            assert_eq!(
                log_of(&log),
                ["dropped b", "dropped c", "start b", "start c"]
            );
            // Removed: stopped gracefully, gone from the list, no longer
            // restarted with the others.
            log.lock().unwrap().clear();
            assert_eq!(sup.terminate_child(&b).await.unwrap(), Some(Exit::Normal));
            assert_eq!(log_of(&log), ["stop b", "dropped b"]);
            assert!(b.send(Cmd::Crash).is_err(), "stopped for good");
            assert_eq!(b.exited().await, Exit::Normal);
            assert_eq!(names(&sup).await, ["a", "c"]);
            assert_eq!(sup.terminate_child(&b).await.unwrap(), None);
            log.lock().unwrap().clear();
            crash_and_wait(&a, 2).await;
            assert_eq!(ping(&c).await, 3);
            assert_eq!(
                log_of(&log),
                ["dropped a", "dropped c", "start a", "start c"]
            );
            log.lock().unwrap().clear();
            sup.shutdown();
            assert_eq!(sup.exited().await, Exit::Normal);
            assert_eq!(log_of(&log), ["stop c", "dropped c", "stop a", "dropped a"]);
            assert_eq!(c.exited().await, Exit::Normal);
            // Too late: the supervisor has ended.
            let late = sup
                .start_child(ChildSpec::new("late"), logged_body("late", &log))
                .await;
            assert_eq!(late.unwrap_err(), fibra::CallError::NotDelivered);
            assert!(sup.terminate_child(&a).await.is_err());
        }
    });
}

#[test]
fn terminate_child_kills_one_that_overstays_and_the_rest_run_on() {
    rt().block_on(async {
        let log = Log::default();
        let mut sup = Supervisor::new(Strategy::OneForAll).intensity(10, LONG);
        let a = add_child(&mut sup, ChildSpec::new("a"), &log);
        let sup = sup.spawn();
        let stuck = sup
            .start_child(
                ChildSpec::new("stuck").shutdown(Duration::from_millis(20)),
                |mb: Mailbox<()>| async move {
                    let _mb = mb;
                    std::future::pending::<()>().await;
                },
            )
            .await
            .unwrap();
        assert_eq!(
            sup.terminate_child(&stuck).await.unwrap(),
            Some(Exit::Killed)
        );
        assert_eq!(stuck.exited().await, Exit::Killed);
        assert_eq!(names(&sup).await, ["a"]);
        // A temporary child that ended by itself: removed with its exit.
        let once = sup
            .start_child(
                ChildSpec::new("once").restart(Restart::Temporary),
                |mut mb: Mailbox<()>| async move {
                    let _ = mb.recv().await;
                },
            )
            .await
            .unwrap();
        once.send(()).unwrap();
        assert_eq!(once.exited().await, Exit::Normal);
        assert_eq!(
            sup.terminate_child(&once).await.unwrap(),
            Some(Exit::Normal)
        );
        // The one left is untouched (one-for-all: no restart happened).
        assert_eq!(ping(&a).await, 1);
        sup.shutdown();
        sup.exited().await;
    });
}

#[test]
fn a_supervised_supervisor_keeps_the_children_added_while_it_ran() {
    rt().block_on(async {
        let log = Log::default();
        let mut inner = Supervisor::new(Strategy::OneForOne).intensity(0, LONG);
        let fixed = add_child(&mut inner, ChildSpec::new("fixed"), &log);
        let mut top = Supervisor::new(Strategy::OneForOne).intensity(10, LONG);
        let inner = top.supervisor(ChildSpec::new("inner"), inner);
        let top = top.spawn();
        let added = inner
            .start_child(ChildSpec::new("added"), logged_body("added", &log))
            .await
            .unwrap();
        assert_eq!(ping(&added).await, 1);
        // Over the inner intensity: the top supervisor restarts the inner
        // one, which starts both children again.
        crash_and_wait(&added, 2).await;
        assert_eq!(names(&inner).await, ["fixed", "added"]);
        assert_eq!(ping(&fixed).await, 2);
        top.shutdown();
        assert_eq!(top.exited().await, Exit::Normal);
        assert_eq!(added.exited().await, Exit::Normal);
    });
}

#[test]
fn stress_children_started_and_terminated_from_many_tasks() {
    let seed = test_seed("dynamic children stress");
    rt().block_on(async move {
        let log = Log::default();
        let sup = Supervisor::new(Strategy::OneForOne)
            .intensity(100_000, LONG)
            .spawn();
        let tasks: Vec<_> = (0..4u64)
            .map(|t| {
                let (sup, log) = (sup.clone(), log.clone());
                fibra::spawn(async move {
                    let mut rng = Rng::new(seed ^ t);
                    let mut kept = Vec::new();
                    for i in 0..150 {
                        let name = format!("t{t}-{i}");
                        let child = sup
                            .start_child(ChildSpec::new(name.clone()), logged_body(&name, &log))
                            .await
                            .unwrap();
                        if rng.chance(30) {
                            crash_and_wait(&child, 2).await;
                        } else {
                            assert_eq!(ping(&child).await, 1);
                        }
                        if rng.chance(50) {
                            let exit = sup.terminate_child(&child).await.unwrap();
                            assert_eq!(exit, Some(Exit::Normal), "{name}");
                            assert!(child.is_closed());
                        } else {
                            kept.push(child);
                        }
                    }
                    kept
                })
            })
            .collect();
        let mut kept = Vec::new();
        for t in tasks {
            kept.extend(t.await.unwrap());
        }
        assert_eq!(sup.children().await.unwrap().len(), kept.len());
        for child in &kept {
            assert!(ping(child).await >= 1);
        }
        sup.shutdown();
        assert_eq!(sup.exited().await, Exit::Normal);
        for child in &kept {
            assert_eq!(child.exited().await, Exit::Normal);
        }
    });
}

#[test]
fn a_supervisor_child_can_be_terminated_with_its_subtree() {
    rt().block_on(async {
        let log = Log::default();
        let mut inner = Supervisor::new(Strategy::OneForOne);
        let leaf = add_child(&mut inner, ChildSpec::new("leaf"), &log);
        let mut top = Supervisor::new(Strategy::OneForOne);
        let kept = add_child(&mut top, ChildSpec::new("kept"), &log);
        let inner = top.supervisor(ChildSpec::new("inner"), inner);
        let top = top.spawn();
        assert_eq!(ping(&leaf).await, 1);
        log.lock().unwrap().clear();
        assert_eq!(
            top.terminate_child(&inner).await.unwrap(),
            Some(Exit::Normal)
        );
        assert_eq!(log_of(&log), ["stop leaf", "dropped leaf"]);
        assert_eq!(inner.exited().await, Exit::Normal);
        assert_eq!(leaf.exited().await, Exit::Normal);
        assert_eq!(names(&top).await, ["kept"]);
        // By id too; a stranger is no child.
        assert_eq!(
            top.terminate_child(kept.id()).await.unwrap(),
            Some(Exit::Normal)
        );
        let (stranger, _mb) = fibra::mailbox::<()>();
        assert_eq!(top.terminate_child(&stranger).await.unwrap(), None);
        top.shutdown();
        top.exited().await;
    });
}
