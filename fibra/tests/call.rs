//! Request/reply: a call's reply, its timeout, an actor that dies before
//! replying (the caller learns at once), a request to an ended actor, and
//! a reply, a death and a timeout meeting in one `select!`.

mod common;

use fibra::time::after;
use fibra::{CallError, Exit, Mailbox, Reply, Runtime, select, spawn_actor};
use std::time::Duration;

const LONG: Duration = Duration::from_secs(30);

fn rt() -> Runtime {
    common::quiet_panics(&["dies before replying"]);
    Runtime::builder().workers(2).build().unwrap()
}

enum Req {
    Echo(u32, Reply<u32>),
    Ignore(Reply<u32>),
    Die(Reply<u32>),
    Later(u32, Reply<u32>),
}

fn server() -> fibra::Addr<Req> {
    spawn_actor(|mut mb: Mailbox<Req>| async move {
        let mut kept = Vec::new();
        while let Some(req) = mb.recv().await {
            match req {
                Req::Echo(n, r) => {
                    let _ = r.send(n);
                }
                Req::Ignore(r) => kept.push(r), // never answered, never dropped
                Req::Die(_r) => panic!("dies before replying"),
                Req::Later(n, r) => {
                    fibra::time::sleep(Duration::from_millis(5)).await;
                    let _ = r.send(n);
                }
            }
        }
    })
}

#[test]
fn a_call_gets_its_reply_and_many_calls_interleave() {
    rt().block_on(async {
        let s = server();
        assert_eq!(s.call(|r| Req::Echo(1, r), LONG).await, Ok(1));
        let calls: Vec<_> = (0..100)
            .map(|n| s.request(|r| Req::Echo(n, r)).unwrap())
            .collect();
        for (n, c) in calls.into_iter().enumerate().rev() {
            assert_eq!(c.reply().await, Ok(n as u32));
        }
    });
}

#[test]
fn a_call_times_out_and_a_late_reply_is_handed_back() {
    rt().block_on(async {
        let s = server();
        let t = Duration::from_millis(5);
        assert_eq!(s.call(Req::Ignore, t).await, Err(CallError::Timeout));
        // The reply slot knows the caller gave up.
        let (addr, mut mb) = fibra::mailbox::<Reply<u8>>();
        let call = addr.request(|r| r).unwrap();
        drop(call);
        let reply = mb.recv().await.unwrap();
        assert!(reply.is_abandoned());
        assert_eq!(reply.send(3), Err(3));
    });
}

#[test]
fn an_actor_that_dies_before_replying_ends_the_wait() {
    rt().block_on(async {
        let s = server();
        let pending = s.request(Req::Ignore).unwrap(); // held by the actor
        assert_eq!(s.call(Req::Die, LONG).await, Err(CallError::NoReply));
        // Its death dropped every reply slot it held.
        assert_eq!(pending.reply().await, Err(CallError::NoReply));
        assert!(matches!(s.exited().await, Exit::Panicked(_)));
        assert_eq!(
            s.call(|r| Req::Echo(1, r), LONG).await,
            Err(CallError::NotDelivered)
        );
    });
}

#[test]
fn a_reply_a_death_and_a_timeout_meet_in_one_select() {
    #[derive(Debug, PartialEq)]
    enum Event {
        Reply(Result<u32, CallError>),
        Died(Exit),
        Timeout,
    }
    rt().block_on(async {
        // The reply wins.
        let s = server();
        let mut call = s.request(|r| Req::Later(7, r)).unwrap();
        let e = select! {
            r = call.reply_op() => Event::Reply(r),
            x = s.exited_op() => Event::Died(x),
            () = after(LONG) => Event::Timeout,
        };
        assert_eq!(e, Event::Reply(Ok(7)));

        // The timeout wins: the reply op loses and is withdrawn, and the
        // reply then waits for a later receive.
        let mut call = s.request(|r| Req::Later(8, r)).unwrap();
        let e = select! {
            r = call.reply_op() => Event::Reply(r),
            x = s.exited_op() => Event::Died(x),
            () = after(Duration::ZERO) => Event::Timeout,
        };
        assert_eq!(e, Event::Timeout);
        assert_eq!(call.reply().await, Ok(8));

        // The death: a killed actor that held the request. Its reply slot
        // drops with it, so the reply op and the death may both be ready;
        // either way the caller does not wait for the timeout.
        let stuck = spawn_actor(|mut mb: Mailbox<Reply<u32>>| async move {
            let _held = mb.recv().await;
            std::future::pending::<()>().await;
        });
        let mut call = stuck.request(|r| r).unwrap();
        fibra::time::sleep(Duration::from_millis(5)).await;
        stuck.kill();
        let e = select! {
            r = call.reply_op() => Event::Reply(r),
            x = stuck.exited_op() => Event::Died(x),
            () = after(LONG) => Event::Timeout,
        };
        assert!(
            e == Event::Died(Exit::Killed) || e == Event::Reply(Err(CallError::NoReply)),
            "{e:?}"
        );
    });
}

#[test]
fn a_full_bounded_mailbox_refuses_the_request() {
    let (addr, _mb) = fibra::bounded_mailbox::<Reply<()>>(1);
    let _first = addr.request(|r| r).unwrap();
    assert_eq!(addr.request(|r| r).unwrap_err(), CallError::NotDelivered);
}
