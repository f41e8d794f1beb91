//! Process groups (`fibra::pg`, Erlang's `pg`): typed membership, joins
//! counted per membership, members leaving when they end (a supervised
//! child staying across restarts), `send` reaching every member once, and
//! a stress test of many actors joining, leaving and ending on two workers
//! while group sends go on: every message a send counted is received once.
//!
//! Sized by `FIBRA_STRESS` (a multiplier; the default, 2,000 actors, runs
//! in about a second in a debug build). Seeded, and replayable with
//! `FIBRA_STRESS_SEED=<seed>`.

mod common;

use common::{Rng, scaled, test_seed, with_watchdog};
use fibra::actors::{Strategy, Supervisor};
use fibra::pg::{self, JoinError};
use fibra::{Addr, LookupError, Mailbox, Runtime, spawn_actor};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn rt() -> Runtime {
    common::quiet_panics(&["pg poison"]);
    Runtime::builder().workers(2).build().unwrap()
}

#[test]
fn membership_is_typed_and_counted_per_join() {
    let (a, _ma) = fibra::mailbox::<u64>();
    let (b, _mb) = fibra::mailbox::<u64>();
    pg::join("pg-typed", &a).unwrap();
    pg::join("pg-typed", &b).unwrap();
    pg::join("pg-typed", &a).unwrap();
    assert_eq!(
        pg::members::<u64>("pg-typed").unwrap(),
        [a.clone(), b.clone(), a.clone()]
    );
    match pg::members::<String>("pg-typed") {
        Err(LookupError::WrongType { expected, found }) => {
            assert!(expected.contains("String"), "{expected}");
            assert_eq!(found, "u64");
        }
        other => panic!("expected WrongType, got {other:?}"),
    }
    let (s, _ms) = fibra::mailbox::<String>();
    assert!(matches!(
        pg::join("pg-typed", &s),
        Err(JoinError::WrongType { .. })
    ));
    // Two joins, two leaves.
    assert!(pg::leave("pg-typed", &a));
    assert_eq!(
        pg::members::<u64>("pg-typed").unwrap(),
        [b.clone(), a.clone()]
    );
    assert!(pg::leave("pg-typed", &a));
    assert!(!pg::leave("pg-typed", &a));
    assert!(pg::leave("pg-typed", &b));
    // Empty: gone, and free for another type.
    assert!(!pg::which_groups().iter().any(|g| g == "pg-typed"));
    pg::join("pg-typed", &s).unwrap();
    assert_eq!(
        pg::members::<String>("pg-typed").unwrap(),
        std::slice::from_ref(&s)
    );
    assert!(pg::leave("pg-typed", &s));
}

#[test]
fn members_leave_their_groups_when_they_end() {
    rt().block_on(async {
        let waiter = |mut mb: Mailbox<u32>| async move { while mb.recv().await.is_some() {} };
        let (a, b) = (spawn_actor(waiter), spawn_actor(waiter));
        for g in ["pg-end-1", "pg-end-2"] {
            pg::join(g, &a).unwrap();
            pg::join(g, &b).unwrap();
        }
        pg::join("pg-end-1", &a).unwrap();
        a.kill();
        a.exited().await;
        assert_eq!(
            pg::members::<u32>("pg-end-1").unwrap(),
            std::slice::from_ref(&b)
        );
        assert_eq!(
            pg::members::<u32>("pg-end-2").unwrap(),
            std::slice::from_ref(&b)
        );
        assert_eq!(pg::join("pg-end-1", &a), Err(JoinError::Ended));
        // A plain mailbox ends when its receiver is dropped.
        let (c, mc) = fibra::mailbox::<u32>();
        pg::join("pg-end-1", &c).unwrap();
        drop(mc);
        assert_eq!(
            pg::members::<u32>("pg-end-1").unwrap(),
            std::slice::from_ref(&b)
        );
        b.kill();
        b.exited().await;
        let groups = pg::which_groups();
        assert!(
            !groups.iter().any(|g| g.starts_with("pg-end-")),
            "{groups:?}"
        );
    });
}

#[test]
fn a_member_holds_its_actor_reachable() {
    rt().block_on(async {
        let got = Arc::new(AtomicUsize::new(0));
        let seen = got.clone();
        let a = spawn_actor(move |mut mb: Mailbox<u32>| async move {
            // Ends when every address is gone: the group's keeps it.
            while let Some(n) = mb.recv().await {
                seen.fetch_add(n as usize, Ordering::SeqCst);
            }
        });
        pg::join("pg-reachable", &a).unwrap();
        let watch = a.monitor();
        drop(a);
        assert_eq!(pg::send("pg-reachable", 5u32).unwrap(), 1);
        let a: Addr<u32> = pg::members("pg-reachable").unwrap().pop().unwrap();
        assert!(pg::leave("pg-reachable", &a));
        drop(a);
        watch.exited().await;
        assert_eq!(got.load(Ordering::SeqCst), 5);
    });
}

#[test]
fn send_skips_full_and_ended_members() {
    rt().block_on(async {
        let (full, mut mfull) = fibra::bounded_mailbox::<u8>(1);
        let (open, mut mopen) = fibra::mailbox::<u8>();
        full.send(0).unwrap();
        pg::join("pg-send", &full).unwrap();
        pg::join("pg-send", &open).unwrap();
        assert_eq!(pg::send("pg-send", 7u8).unwrap(), 1);
        assert_eq!(mopen.recv().await, Some(7));
        assert_eq!(mfull.recv().await, Some(0));
        assert_eq!(pg::send("pg-send", 8u8).unwrap(), 2);
        assert_eq!((mfull.recv().await, mopen.recv().await), (Some(8), Some(8)));
        assert!(matches!(
            pg::send("pg-send", 'x'),
            Err(LookupError::WrongType { .. })
        ));
        assert_eq!(pg::send("pg-send-nobody", 1u8).unwrap(), 0);
        pg::leave("pg-send", &full);
        pg::leave("pg-send", &open);
    });
}

#[test]
fn a_supervised_child_stays_in_its_groups_across_restarts() {
    rt().block_on(async {
        let mut sup = Supervisor::new(Strategy::OneForOne);
        let child = sup.child("member", |mut mb: Mailbox<bool>| async move {
            while let Some(crash) = mb.recv().await {
                assert!(!crash, "pg poison");
            }
        });
        pg::join("pg-supervised", &child).unwrap();
        let sup = sup.spawn();
        assert_eq!(pg::send("pg-supervised", true).unwrap(), 1);
        while sup.children().await.unwrap()[0].lives < 2 {
            fibra::yield_now().await;
        }
        assert_eq!(
            pg::members::<bool>("pg-supervised").unwrap(),
            std::slice::from_ref(&child)
        );
        sup.shutdown();
        sup.exited().await;
        assert!(pg::members::<bool>("pg-supervised").unwrap().is_empty());
    });
}

/// A stress actor's messages.
#[derive(Clone)]
enum Cmd {
    Ping,
    /// Leave one of your groups.
    Leave,
    Stop,
}

#[test]
fn stress_actors_join_leave_and_end_while_groups_are_sent_to() {
    const GROUPS: usize = 8;
    let seed = test_seed("pg stress");
    let actors = scaled(2_000);
    let out = with_watchdog("pg stress", seed, Duration::from_secs(120), move || {
        rt().block_on(async move {
            let mut rng = Rng::new(seed);
            let received = Arc::new(AtomicUsize::new(0));
            let name = |g: usize| format!("pg-stress-{g}");
            let mut addrs = Vec::with_capacity(actors);
            let mut sent = 0usize;
            for i in 0..actors {
                let mine: Vec<String> = (0..1 + rng.below(3))
                    .map(|_| name(rng.below(GROUPS)))
                    .collect();
                let count = received.clone();
                let groups = mine.clone();
                let addr = spawn_actor(move |mut mb: Mailbox<Cmd>| async move {
                    let me = mb.addr();
                    let mut joined = groups;
                    while let Some(cmd) = mb.recv().await {
                        match cmd {
                            Cmd::Ping => drop(count.fetch_add(1, Ordering::Relaxed)),
                            Cmd::Leave => {
                                if let Some(g) = joined.pop() {
                                    assert!(pg::leave(&g, &me), "left {g} it was in");
                                }
                            }
                            Cmd::Stop => break,
                        }
                    }
                });
                for g in &mine {
                    pg::join(g.clone(), &addr).unwrap();
                }
                addrs.push(addr);
                // Sends and leaves interleaved with the joins.
                if i % 16 == 0 {
                    sent += pg::send(&name(rng.below(GROUPS)), Cmd::Ping).unwrap();
                }
                if rng.chance(10) {
                    addrs[rng.below(addrs.len())].send(Cmd::Leave).unwrap();
                }
                if i % 64 == 0 {
                    fibra::yield_now().await;
                }
            }
            for g in 0..GROUPS {
                sent += pg::send(&name(g), Cmd::Ping).unwrap();
            }
            for a in &addrs {
                a.send(Cmd::Stop).unwrap();
            }
            for a in &addrs {
                a.exited().await;
            }
            let left = pg::which_groups();
            assert!(
                !left.iter().any(|g| g.starts_with("pg-stress-")),
                "groups outlived their members: {left:?}"
            );
            (sent, received.load(Ordering::SeqCst))
        })
    });
    let (sent, received) = out;
    assert!(sent > 0);
    assert_eq!(sent, received, "seed {seed}");
}
