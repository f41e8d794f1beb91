//! The name registry: typed lookups (a wrong type is an error), names freed
//! when their actor ends (a supervised child keeps its name across
//! restarts), and a stress test of many registered actors that crash and
//! restart under supervisors while senders look them up by name and send,
//! with names unregistered and registered again meanwhile: every message is
//! received once or handed back to its sender.
//!
//! Sized by `FIBRA_STRESS` (a multiplier): the default, 25,000 actors and
//! 50,000 messages, runs in about 3 seconds in a debug build;
//! `FIBRA_STRESS=4` is the full size, 100,000 actors and 200,000 messages
//! (about 15 seconds in a debug build). Seeded, and replayable with
//! `FIBRA_STRESS_SEED=<seed>`.

mod common;

use common::{Ledger, Msg, Rng, scaled, test_seed, with_watchdog};
use fibra::actors::{Strategy, Supervisor};
use fibra::{
    Addr, Exit, LookupError, Mailbox, RegisterError, Runtime, register, registered, spawn_actor,
    unregister, whereis,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn rt() -> Runtime {
    common::quiet_panics(&["registry poison"]);
    Runtime::builder().workers(2).build().unwrap()
}

#[test]
fn lookups_are_typed() {
    let (addr, mut mb) = fibra::mailbox::<u64>();
    register("typed-u64", &addr).unwrap();
    let found: Addr<u64> = whereis("typed-u64").unwrap();
    assert_eq!(found, addr);
    found.send(5).unwrap();
    assert_eq!(mb.try_recv(), Ok(5));
    match whereis::<String>("typed-u64") {
        Err(LookupError::WrongType { expected, found }) => {
            assert_eq!(expected, "alloc::string::String");
            assert_eq!(found, "u64");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        whereis::<u64>("typed-nobody").unwrap_err(),
        LookupError::NotFound
    );
    let err = whereis::<u8>("typed-u64").unwrap_err();
    assert!(err.to_string().contains("`u64`"), "{err}");
    assert!(unregister("typed-u64"));
}

#[test]
fn a_name_is_freed_when_its_actor_ends_and_can_be_taken_again() {
    rt().block_on(async {
        let a =
            spawn_actor(|mut mb: Mailbox<()>| async move { while mb.recv().await.is_some() {} });
        register("freed-1", &a).unwrap();
        register("freed-2", &a).unwrap(); // several names
        let b =
            spawn_actor(|mut mb: Mailbox<()>| async move { while mb.recv().await.is_some() {} });
        assert_eq!(
            register("freed-1", &b),
            Err(RegisterError::Taken("freed-1".into()))
        );
        // The registry's address keeps `a` from seeing "no address left".
        drop(a);
        fibra::time::sleep(Duration::from_millis(10)).await;
        let a: Addr<()> = whereis("freed-1").unwrap();
        a.kill();
        assert_eq!(a.exited().await, Exit::Killed);
        assert_eq!(whereis::<()>("freed-1").unwrap_err(), LookupError::NotFound);
        assert_eq!(whereis::<()>("freed-2").unwrap_err(), LookupError::NotFound);
        assert!(!registered().iter().any(|n| n.starts_with("freed-")));
        register("freed-1", &b).unwrap();
        assert_eq!(whereis::<()>("freed-1").unwrap(), b);
        assert_eq!(register("freed-3", &a), Err(RegisterError::Ended));
        b.kill();
        b.exited().await;
        assert!(whereis::<()>("freed-1").is_err());
    });
}

#[test]
fn unregister_then_death_leaves_a_new_owner_alone() {
    rt().block_on(async {
        let a =
            spawn_actor(|mut mb: Mailbox<()>| async move { while mb.recv().await.is_some() {} });
        let b =
            spawn_actor(|mut mb: Mailbox<()>| async move { while mb.recv().await.is_some() {} });
        register("moved", &a).unwrap();
        assert!(unregister("moved"));
        register("moved", &b).unwrap();
        a.kill();
        a.exited().await;
        assert_eq!(
            whereis::<()>("moved").unwrap(),
            b,
            "a's death frees only its own names"
        );
        b.kill();
        b.exited().await;
    });
}

#[test]
fn a_supervised_child_keeps_its_name_across_restarts() {
    rt().block_on(async {
        let mut sup = Supervisor::new(Strategy::OneForOne);
        let child = sup.child("named", |mut mb: Mailbox<bool>| async move {
            while let Some(crash) = mb.recv().await {
                assert!(!crash, "registry poison");
            }
        });
        register("supervised-name", &child).unwrap();
        let sup = sup.spawn();
        child.send(true).unwrap();
        let lives = loop {
            let lives = sup.children().await.unwrap()[0].lives;
            if lives == 2 {
                break lives;
            }
            fibra::yield_now().await;
        };
        assert_eq!(lives, 2);
        assert_eq!(whereis::<bool>("supervised-name").unwrap(), child);
        sup.shutdown();
        sup.exited().await;
        assert_eq!(
            whereis::<bool>("supervised-name").unwrap_err(),
            LookupError::NotFound
        );
    });
}

enum Job {
    Work(Msg),
    /// Crash after receiving it.
    Poison(Msg),
}

#[test]
fn stress_many_registered_actors_crash_and_restart_while_senders_look_them_up() {
    let seed = test_seed("registry_stress");
    with_watchdog(
        "registry stress",
        seed,
        Duration::from_secs(300),
        move || {
            let actors = scaled(25_000);
            const PER_SUPERVISOR: usize = 1_000;
            const SENDERS: usize = 8;
            let per_sender = scaled(6_250);
            let total = SENDERS * per_sender;
            let ledger = Ledger::new(total);
            let rt = rt();
            let (received, returned) = rt.block_on({
                let ledger = ledger.clone();
                async move {
                    let received = Arc::new(AtomicUsize::new(0));
                    let poisoned = Arc::new(AtomicUsize::new(0));
                    let mut sups = Vec::new();
                    for s in 0..actors.div_ceil(PER_SUPERVISOR) {
                        let mut sup = Supervisor::new(Strategy::OneForOne)
                            .intensity(usize::MAX, Duration::from_secs(60));
                        for i in s * PER_SUPERVISOR..((s + 1) * PER_SUPERVISOR).min(actors) {
                            let (received, poisoned) = (received.clone(), poisoned.clone());
                            let child = sup.child(format!("a{i}"), move |mut mb: Mailbox<Job>| {
                                let (received, poisoned) = (received.clone(), poisoned.clone());
                                async move {
                                    while let Some(job) = mb.recv().await {
                                        received.fetch_add(1, Ordering::Relaxed);
                                        match job {
                                            Job::Work(m) => drop(m.received()),
                                            Job::Poison(m) => {
                                                m.received();
                                                poisoned.fetch_add(1, Ordering::Relaxed);
                                                panic!("registry poison");
                                            }
                                        }
                                    }
                                }
                            });
                            register(format!("stress-{i}"), &child).unwrap();
                        }
                        sups.push(sup.spawn());
                    }
                    let returned = Arc::new(AtomicUsize::new(0));
                    // Names come and go: a registrar unregisters names and
                    // registers them again while the senders look them up.
                    let stop = Arc::new(AtomicUsize::new(0));
                    let registrar = {
                        let stop = stop.clone();
                        fibra::spawn(async move {
                            let mut rng = Rng::new(seed ^ 0xfeed);
                            let mut churned = 0usize;
                            while stop.load(Ordering::SeqCst) == 0 {
                                let mut gone = Vec::new();
                                for _ in 0..1000 {
                                    let name = format!("stress-{}", rng.below(actors));
                                    if let Ok(addr) = whereis::<Job>(&name) {
                                        unregister(&name);
                                        gone.push((name, addr));
                                    }
                                }
                                for _ in 0..4 {
                                    fibra::yield_now().await;
                                }
                                churned += gone.len();
                                for (name, addr) in gone {
                                    register(name, &addr).unwrap();
                                }
                                fibra::yield_now().await;
                            }
                            churned
                        })
                    };
                    let senders: Vec<_> = (0..SENDERS)
                        .map(|s| {
                            let (ledger, returned) = (ledger.clone(), returned.clone());
                            fibra::spawn(async move {
                                let mut rng = Rng::new(seed ^ s as u64);
                                for k in 0..per_sender {
                                    let id = (s * per_sender + k) as u32;
                                    let m = Msg::new(id, &ledger);
                                    let job = if rng.chance(2) {
                                        Job::Poison(m)
                                    } else {
                                        Job::Work(m)
                                    };
                                    let name = format!("stress-{}", rng.below(actors));
                                    let sent = match whereis::<Job>(&name) {
                                        Ok(addr) => addr.send(job).map_err(|e| e.into_inner()),
                                        Err(LookupError::NotFound) => Err(job),
                                        Err(e) => panic!("{e}"),
                                    };
                                    if let Err(job) = sent {
                                        returned.fetch_add(1, Ordering::Relaxed);
                                        match job {
                                            Job::Work(m) | Job::Poison(m) => drop(m.returned()),
                                        }
                                    }
                                    if k % 32 == 0 {
                                        fibra::yield_now().await;
                                    }
                                }
                            })
                        })
                        .collect();
                    for s in senders {
                        s.await.unwrap();
                    }
                    stop.store(1, Ordering::SeqCst);
                    let churned = registrar.await.unwrap();
                    // A graceful shutdown: every child receives what is queued.
                    for sup in &sups {
                        sup.shutdown();
                    }
                    for sup in &sups {
                        assert_eq!(sup.exited().await, Exit::Normal);
                    }
                    eprintln!(
                        "registry stress: {actors} actors, {total} messages, {} crashes and \
                     restarts, {churned} names unregistered and registered again",
                        poisoned.load(Ordering::SeqCst)
                    );
                    (
                        received.load(Ordering::SeqCst),
                        returned.load(Ordering::SeqCst),
                    )
                }
            });
            drop(rt);
            let summary = ledger.verify(0..total as u32).unwrap();
            assert_eq!(summary.received, received);
            assert_eq!(summary.returned, returned);
            assert_eq!(summary.received + summary.returned, total);
            assert!(summary.returned > 0, "the churn made some lookups fail");
            assert!(registered().iter().all(|n| !n.starts_with("stress-")));
        },
    );
}
