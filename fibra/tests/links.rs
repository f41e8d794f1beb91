//! Links, kills and trapped exits: deaths propagate along links, kill
//! non-trapping actors, arrive as messages (after the dead actor's earlier
//! messages) for trapping ones, are never missed when a link races a
//! death, and leave nothing behind (link cycles are broken by the deaths).

mod common;

use common::DropCount;
use fibra::actors::spawn_link;
use fibra::{Exit, ExitSignal, Mailbox, Runtime, mailbox, spawn_actor};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn rt() -> Runtime {
    common::quiet_panics(&[
        "root cause",
        "cut",
        "done sending",
        "already gone",
        "racing",
    ]);
    Runtime::builder().workers(2).build().unwrap()
}

/// An actor that waits for one `()` and then panics with `why`.
fn crash_on_signal(why: &'static str) -> fibra::Addr<()> {
    spawn_actor(move |mut mb: Mailbox<()>| async move {
        mb.recv().await;
        panic!("{why}");
    })
}

/// An actor that waits until its mailbox closes.
fn idle() -> fibra::Addr<()> {
    spawn_actor(|mut mb: Mailbox<()>| async move { while mb.recv().await.is_some() {} })
}

#[test]
fn an_abnormal_death_kills_the_linked_chain_with_the_root_exit() {
    rt().block_on(async {
        let a = crash_on_signal("root cause");
        let b = idle();
        let c = idle();
        a.link(&b);
        b.link(&c);
        a.send(()).unwrap();
        let root = Exit::Panicked("root cause".into());
        assert_eq!(a.exited().await, root);
        assert_eq!(b.exited().await, Exit::Linked(Box::new(root.clone())));
        // c is killed by b's death, but reports the exit that started it.
        assert_eq!(c.exited().await, Exit::Linked(Box::new(root)));
        assert!(b.is_closed() && c.is_closed());
    });
}

#[test]
fn a_normal_death_kills_nobody_and_unlink_cuts_the_link() {
    rt().block_on(async {
        let a = spawn_actor(|mut mb: Mailbox<()>| async move {
            mb.recv().await;
        });
        let b = idle();
        a.link(&b);
        a.send(()).unwrap();
        assert_eq!(a.exited().await, Exit::Normal);

        let c = crash_on_signal("cut");
        c.link(&b);
        c.unlink(&b);
        c.send(()).unwrap();
        c.exited().await;
        fibra::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(b.try_exited(), None, "b was unlinked: it lives");
        b.kill();
        assert_eq!(b.exited().await, Exit::Killed);
    });
}

enum Msg {
    Data(u32),
    Exit(ExitSignal),
}

#[test]
fn a_trapping_actor_gets_the_signal_after_the_dead_actors_messages() {
    rt().block_on(async {
        let (me, mut mb) = mailbox::<Msg>();
        mb.trap_exits(Msg::Exit);
        let me2 = me.clone();
        let sender = spawn_actor(move |mut smb: Mailbox<()>| async move {
            smb.recv().await;
            for i in 0..100 {
                me2.send(Msg::Data(i)).unwrap();
            }
            panic!("done sending");
        });
        me.link(&sender);
        sender.send(()).unwrap();
        for i in 0..100 {
            match mb.recv().await {
                Some(Msg::Data(n)) => assert_eq!(n, i),
                _ => panic!("message {i} must come before the exit signal"),
            }
        }
        match mb.recv().await {
            Some(Msg::Exit(s)) => {
                assert_eq!(s.from, sender.id());
                assert_eq!(s.exit, Exit::Panicked("done sending".into()));
            }
            _ => panic!("expected the exit signal"),
        }
        // Trapping: we live on.
        assert!(!me.is_closed());
        assert_eq!(mb.try_recv().ok().map(|_| ()), None);
    });
}

#[test]
fn linking_to_an_ended_actor_signals_at_once() {
    rt().block_on(async {
        let dead = crash_on_signal("already gone");
        dead.send(()).unwrap();
        dead.exited().await;
        let (me, mut mb) = mailbox::<ExitSignal>();
        mb.trap_exits(|s| s);
        me.link(&dead);
        let s = mb
            .try_recv()
            .expect("the signal is queued by the link itself");
        assert_eq!(s.exit, Exit::Panicked("already gone".into()));

        // Not trapping: the link kills.
        let victim = idle();
        victim.link(&dead);
        assert_eq!(
            victim.exited().await,
            Exit::Linked(Box::new(Exit::Panicked("already gone".into())))
        );
    });
}

#[test]
fn kill_wakes_an_actor_waiting_elsewhere_and_drops_its_queue() {
    rt().block_on(async {
        let drops = Arc::new(AtomicUsize::new(0));
        let (_keep, rx) = fibra::channel::<()>();
        let a = spawn_actor(move |mb: Mailbox<DropCount>| async move {
            // Holds its mailbox but never looks at it: waits on a channel.
            let _mb = mb;
            let _ = rx.recv().await;
        });
        // Let it reach its wait.
        fibra::time::sleep(Duration::from_millis(10)).await;
        for i in 0..10 {
            a.send(DropCount::new(i, &drops)).unwrap();
        }
        a.kill();
        assert_eq!(a.exited().await, Exit::Killed);
        assert_eq!(drops.load(Ordering::SeqCst), 10, "queued messages dropped");
        let back = a.send(DropCount::new(99, &drops)).unwrap_err().into_inner();
        assert_eq!(
            back.value, 99,
            "a send after the kill hands the message back"
        );
    });
}

#[test]
fn kill_before_the_first_poll_and_kill_twice() {
    let rt = Runtime::builder().current_thread().build().unwrap();
    rt.block_on(async {
        let a = idle(); // not polled yet: this task has not yielded
        a.kill();
        a.kill();
        assert_eq!(a.exited().await, Exit::Killed);
        a.kill(); // after its end: nothing
    });
}

#[test]
fn spawn_link_links_both_ways() {
    rt().block_on(async {
        // The parent dies: the linked child is killed.
        let (parent, parent_mb) = mailbox::<()>();
        let child = spawn_link(&parent, |mut mb: Mailbox<()>| async move {
            while mb.recv().await.is_some() {}
        });
        parent.kill(); // a plain mailbox: closed at once, with Exit::Killed
        drop(parent_mb);
        assert_eq!(child.exited().await, Exit::Linked(Box::new(Exit::Killed)));
    });
}

#[test]
fn link_cycles_are_freed_when_the_actors_end() {
    rt().block_on(async {
        let drops = Arc::new(AtomicUsize::new(0));
        let (a, mut ma) = mailbox::<ExitSignal>();
        let token = DropCount::new(0, &drops);
        // The trap closure lives in a's mailbox: it drops when that
        // mailbox is freed, which a leaked link cycle would prevent.
        ma.trap_exits(move |s| {
            let _ = &token;
            s
        });
        let b = idle();
        let c = idle();
        a.link(&b);
        b.link(&c);
        c.link(&a);
        b.kill();
        assert_eq!(ma.recv().await.unwrap().exit, Exit::Killed);
        b.exited().await;
        c.exited().await;
        // An exit is published after the death signalled (and dropped) its
        // links: nothing of b or c holds a's mailbox now.
        drop((a, ma, b, c));
        assert_eq!(drops.load(Ordering::SeqCst), 1, "a's mailbox was freed");
    });
}

#[test]
fn links_racing_deaths_deliver_each_death_once() {
    // Many actors die while a trapping watcher links to them: each death
    // reaches the watcher exactly once, whether the link came first or not.
    rt().block_on(async {
        const N: usize = 2000;
        let (watcher, mut wmb) = mailbox::<ExitSignal>();
        wmb.trap_exits(|s| s);
        let mut ids = std::collections::HashSet::new();
        let mut keep = Vec::new(); // live addresses: ids stay unique
        for i in 0..N {
            let a = crash_on_signal("racing");
            ids.insert(a.id());
            if i % 2 == 0 {
                a.send(()).unwrap();
                watcher.link(&a);
            } else {
                watcher.link(&a);
                a.send(()).unwrap();
            }
            keep.push(a);
        }
        let mut seen = std::collections::HashSet::new();
        for _ in 0..N {
            let s = wmb.recv().await.unwrap();
            assert_eq!(s.exit, Exit::Panicked("racing".into()));
            assert!(seen.insert(s.from), "a death delivered twice");
        }
        assert_eq!(seen, ids);
        fibra::time::sleep(Duration::from_millis(10)).await;
        assert!(wmb.try_recv().is_err(), "no extra signal");
    });
}
