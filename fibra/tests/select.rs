//! The `select!` family: `select!`, `select_biased!`, `select_blocking!`,
//! `select_biased_blocking!` (clauses, `if` guards, `else`), `select::when`,
//! and dynamic choice over a `Vec` of ops with `fibra::choose`.

mod common;

use common::{DropCount, Rng, test_seed};
use fibra::select::when;
use fibra::time::after;
use fibra::{
    IVar, Op, Receiver, RecvError, Semaphore, Sender, TrySendError, always, bounded, channel,
    choose, never, select, select_biased, select_biased_blocking, select_blocking, unbounded,
};
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Long enough never to fire in a test that passes.
const NEVER: Duration = Duration::from_secs(3600);

// ----- fairness and priority ------------------------------------------------

#[test]
fn select_picks_each_of_two_ready_clauses_a_fair_share_of_the_time() {
    const ROUNDS: usize = 1_000;
    let (tx_a, rx_a) = unbounded::<u8>();
    let (tx_b, rx_b) = unbounded::<u8>();
    for _ in 0..ROUNDS {
        tx_a.try_send(b'a').unwrap();
        tx_b.try_send(b'b').unwrap();
    }
    let counts = fibra::block_on(async {
        let mut counts = [0usize; 2];
        for _ in 0..ROUNDS {
            select! {
                v = rx_a.recv_op() => {
                    assert_eq!(v, Ok(b'a'));
                    counts[0] += 1;
                }
                v = rx_b.recv_op() => {
                    assert_eq!(v, Ok(b'b'));
                    counts[1] += 1;
                }
            }
        }
        counts
    });
    // Expected 500 each (standard deviation about 16): 200 is far out.
    for c in counts {
        assert!(c >= ROUNDS / 5, "unfair split {counts:?}");
    }
    // Exactly one value was taken per round.
    assert_eq!(rx_a.len() + rx_b.len(), ROUNDS);
    assert_eq!(ROUNDS - rx_a.len(), counts[0]);
}

#[test]
fn select_blocking_picks_each_of_two_ready_clauses_a_fair_share_of_the_time() {
    const ROUNDS: usize = 1_000;
    let (tx_a, rx_a) = bounded::<u8>(1);
    let (tx_b, rx_b) = bounded::<u8>(1);
    tx_a.try_send(0).unwrap();
    tx_b.try_send(1).unwrap();
    let mut counts = [0usize; 2];
    for _ in 0..ROUNDS {
        let won = select_blocking! {
            v = rx_a.recv_op() => v.unwrap(),
            v = rx_b.recv_op() => v.unwrap(),
        };
        counts[won as usize] += 1;
        // Refill the channel that gave its value: both are ready again.
        let tx = if won == 0 { &tx_a } else { &tx_b };
        tx.try_send(won).unwrap();
    }
    for c in counts {
        assert!(c >= ROUNDS / 5, "unfair split {counts:?}");
    }
}

#[test]
fn select_biased_always_takes_the_first_ready_clause_in_written_order() {
    for mask in 0u8..8 {
        for _ in 0..50 {
            let chans: Vec<(Sender<usize>, Receiver<usize>)> = (0..3).map(|_| bounded(1)).collect();
            for (i, (tx, _)) in chans.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    tx.try_send(i).unwrap();
                }
            }
            let expected = (0..3).find(|i| mask & (1 << i) != 0);
            let blocking = select_biased_blocking! {
                v = chans[0].1.recv_op() => Some(v.unwrap()),
                v = chans[1].1.recv_op() => Some(v.unwrap()),
                v = chans[2].1.recv_op() => Some(v.unwrap()),
                else => None,
            };
            assert_eq!(
                blocking, expected,
                "select_biased_blocking!, mask {mask:03b}"
            );
            // Only the winner's value was taken.
            for (i, (_, rx)) in chans.iter().enumerate() {
                let left = mask & (1 << i) != 0 && Some(i) != expected;
                assert_eq!(rx.len(), usize::from(left), "channel {i}, mask {mask:03b}");
            }
            // The async form, on the same channels refilled.
            if let Some(e) = expected {
                chans[e].0.try_send(e).unwrap();
                let awaited = fibra::block_on(async {
                    select_biased! {
                        v = chans[0].1.recv_op() => v.unwrap(),
                        v = chans[1].1.recv_op() => v.unwrap(),
                        v = chans[2].1.recv_op() => v.unwrap(),
                    }
                });
                assert_eq!(awaited, e, "select_biased!, mask {mask:03b}");
            }
        }
    }
}

#[test]
fn select_biased_prefers_a_control_channel_over_a_flood_of_data() {
    let (data_tx, data) = unbounded::<u32>();
    let (ctl_tx, ctl) = bounded::<&str>(1);
    for i in 0..100 {
        data_tx.try_send(i).unwrap();
    }
    let mut taken = 0;
    let stopped_at = loop {
        if taken == 10 {
            ctl_tx.try_send("stop").unwrap();
        }
        select_biased_blocking! {
            c = ctl.recv_op() => break (c.unwrap(), taken),
            d = data.recv_op() => {
                assert_eq!(d, Ok(taken));
                taken += 1;
            }
        }
    };
    assert_eq!(stopped_at, ("stop", 10));
    assert_eq!(data.len(), 90);
}

// ----- else -----------------------------------------------------------------

/// The world of the `else` tests: a receive clause (ready iff its channel
/// holds a value), a send clause (ready iff its channel has room), a timer
/// clause (ready iff its deadline passed), and two clauses that are never
/// ready.
struct ElseWorld {
    recv: (Sender<u32>, Receiver<u32>),
    send: (Sender<u32>, Receiver<u32>),
    timer_ready: bool,
    silent: (Sender<u32>, Receiver<u32>),
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Ran {
    Recv,
    Send,
    Timer,
    Else,
}

impl ElseWorld {
    fn new(mask: u8) -> Self {
        let w = ElseWorld {
            recv: bounded(1),
            send: bounded(1),
            timer_ready: mask & 4 != 0,
            silent: channel(),
        };
        if mask & 1 != 0 {
            w.recv.0.try_send(11).unwrap();
        }
        if mask & 2 == 0 {
            w.send.0.try_send(99).unwrap(); // full: the send clause is not ready
        }
        w
    }

    fn timer(&self) -> fibra::time::After {
        after(if self.timer_ready {
            Duration::ZERO
        } else {
            NEVER
        })
    }

    /// Checks what ran against the mask, and that exactly its effect
    /// happened.
    fn check(&self, mask: u8, ran: Ran, how: &str) {
        let ready = |bit: u8| mask & bit != 0;
        match ran {
            Ran::Else => assert_eq!(mask, 0, "{how}: else ran with mask {mask:03b}"),
            Ran::Recv => assert!(ready(1), "{how}: recv ran, mask {mask:03b}"),
            Ran::Send => assert!(ready(2), "{how}: send ran, mask {mask:03b}"),
            Ran::Timer => assert!(ready(4), "{how}: timer ran, mask {mask:03b}"),
        }
        // The receive took its value iff it ran.
        let recv_left = usize::from(ready(1) && ran != Ran::Recv);
        assert_eq!(self.recv.1.len(), recv_left, "{how}: recv channel");
        // The send channel is full iff it was full or the send ran.
        let send_len = usize::from(!ready(2) || ran == Ran::Send);
        assert_eq!(self.send.1.len(), send_len, "{how}: send channel");
        if ran == Ran::Send {
            assert_eq!(self.send.1.try_recv(), Ok(7));
        }
        assert!(self.silent.1.is_empty());
    }
}

#[test]
fn else_runs_exactly_when_no_enabled_clause_is_ready() {
    for mask in 0u8..8 {
        for _ in 0..20 {
            let w = ElseWorld::new(mask);
            let ran = select_blocking! {
                v = w.recv.1.recv_op() => { assert_eq!(v, Ok(11)); Ran::Recv }
                r = w.send.0.send_op(7) => { r.unwrap(); Ran::Send }
                () = w.timer() => Ran::Timer,
                _ = w.silent.1.recv_op() => unreachable!("nobody sends here"),
                _ = never::<()>() => unreachable!(),
                else => Ran::Else,
            };
            w.check(mask, ran, "select_blocking!");

            let w = ElseWorld::new(mask);
            let ran = fibra::block_on(async {
                select! {
                    v = w.recv.1.recv_op() => { assert_eq!(v, Ok(11)); Ran::Recv }
                    r = w.send.0.send_op(7) => { r.unwrap(); Ran::Send }
                    () = w.timer() => Ran::Timer,
                    _ = w.silent.1.recv_op() => unreachable!("nobody sends here"),
                    else => { Ran::Else }
                }
            });
            w.check(mask, ran, "select!");

            let w = ElseWorld::new(mask);
            let ran = fibra::block_on(async {
                select_biased! {
                    _ = w.silent.1.recv_op() => unreachable!("nobody sends here"),
                    () = w.timer() => Ran::Timer,
                    r = w.send.0.send_op(7) => { r.unwrap(); Ran::Send }
                    v = w.recv.1.recv_op() => { assert_eq!(v, Ok(11)); Ran::Recv }
                    else => Ran::Else
                }
            });
            w.check(mask, ran, "select_biased!");
            // Biased: the first ready clause in the order written above.
            let first = [(4u8, Ran::Timer), (2, Ran::Send), (1, Ran::Recv)]
                .into_iter()
                .find(|(bit, _)| mask & bit != 0)
                .map_or(Ran::Else, |(_, r)| r);
            assert_eq!(ran, first, "select_biased! order, mask {mask:03b}");
        }
    }
}

#[test]
fn else_never_waits_even_for_a_partner_that_is_about_to_arrive() {
    // A rendezvous send with no receiver waiting is not ready: `else` runs
    // at once, and the value is dropped with the op, never delivered.
    let (tx, rx) = channel::<DropCount>();
    let drops = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    for i in 0..100 {
        let sent = select_blocking! {
            r = tx.send_op(DropCount::new(i, &drops)) => r.is_ok(),
            else => false,
        };
        assert!(!sent);
    }
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(
        drops.load(Ordering::SeqCst),
        100,
        "each unsent value dropped once"
    );
    assert!(rx.try_recv().is_err());
}

#[test]
fn else_after_a_full_send_clause_gives_nothing_to_the_channel() {
    let (tx, rx) = bounded::<DropCount>(1);
    let drops = Arc::new(AtomicUsize::new(0));
    tx.try_send(DropCount::new(1, &drops)).unwrap();
    let ran_else = select_blocking! {
        r = tx.send_op(DropCount::new(2, &drops)) => { r.unwrap(); false }
        else => true,
    };
    assert!(ran_else);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the unsent value was dropped"
    );
    assert_eq!(rx.try_recv().unwrap().value, 1);
    assert!(rx.try_recv().is_err());
}

// ----- guards -----------------------------------------------------------------

#[test]
fn a_clause_guarded_by_false_never_runs_and_its_op_is_never_built() {
    let (tx_off, rx_off) = bounded::<u32>(1);
    let (tx_on, rx_on) = bounded::<u32>(1);
    let built_off = AtomicUsize::new(0);
    let built_on = AtomicUsize::new(0);
    tx_off.try_send(1).unwrap(); // ready, but disabled
    for round in 0..1_000 {
        tx_on.try_send(round).unwrap();
        let got = select_blocking! {
            v = { built_off.fetch_add(1, Ordering::SeqCst); rx_off.recv_op() }, if false => {
                unreachable!("disabled clause ran with {v:?}")
            }
            v = { built_on.fetch_add(1, Ordering::SeqCst); rx_on.recv_op() }, if true => v.unwrap(),
        };
        assert_eq!(got, round);
    }
    assert_eq!(built_off.load(Ordering::SeqCst), 0);
    assert_eq!(built_on.load(Ordering::SeqCst), 1_000);
    // The disabled clause's value is still there.
    assert_eq!(rx_off.try_recv(), Ok(1));

    // The same in the async forms.
    fibra::block_on(async {
        tx_off.try_send(2).unwrap();
        for round in 0..100 {
            tx_on.try_send(round).unwrap();
            let got = select! {
                _ = { built_off.fetch_add(1, Ordering::SeqCst); rx_off.recv_op() }, if round > 1_000 => {
                    unreachable!()
                }
                v = rx_on.recv_op() => v.unwrap(),
            };
            assert_eq!(got, round);
            let none = select_biased! {
                _ = { built_off.fetch_add(1, Ordering::SeqCst); rx_off.recv_op() }, if false => 1,
                else => 0,
            };
            assert_eq!(none, 0, "the only ready clause is disabled: else runs");
        }
    });
    assert_eq!(built_off.load(Ordering::SeqCst), 0);
    assert_eq!(rx_off.try_recv(), Ok(2));
}

#[test]
fn guards_run_once_each_in_order_before_any_op_is_built_and_only_the_winner_body_runs() {
    let (_tx0, rx0) = bounded::<&str>(1);
    let (tx1, rx1) = bounded::<&str>(1);
    let (tx2, rx2) = bounded::<&str>(1);
    let (tx3, rx3) = bounded::<&str>(1);
    tx1.try_send("one").unwrap(); // ready but disabled
    tx3.try_send("three").unwrap();
    let log = RefCell::new(Vec::new());
    let note = |s: &'static str| log.borrow_mut().push(s);
    let got = select_blocking! {
        v = { note("op0"); rx0.recv_op() }, if { note("if0"); true } => { note("body0"); v }
        v = { note("op1"); rx1.recv_op() }, if { note("if1"); false } => { note("body1"); v }
        v = { note("op2"); rx2.recv_op() } => { note("body2"); v }
        v = { note("op3"); rx3.recv_op() }, if { note("if3"); true } => { note("body3"); v }
    };
    assert_eq!(got, Ok("three"));
    assert_eq!(
        *log.borrow(),
        ["if0", "if1", "if3", "op0", "op2", "op3", "body3"]
    );
    assert_eq!(rx1.try_recv(), Ok("one"));
    drop(tx2);
}

#[test]
fn when_disables_an_op_in_a_plain_choice() {
    let (tx, rx) = bounded::<u32>(1);
    tx.try_send(5).unwrap();
    let off = when(false, rx.recv_op());
    assert!(!off.is_enabled());
    // A disabled op never commits, even though its channel holds a value.
    let off = off.try_perform().unwrap_err();
    drop(off);
    assert_eq!(rx.len(), 1);
    let got = choose((
        when(false, rx.recv_op()),
        when(true, always(Ok::<u32, RecvError>(0))),
    ))
    .perform();
    assert_eq!(got, Ok(0));
    assert_eq!(rx.len(), 1, "the disabled receive took nothing");
    let on = when(true, rx.recv_op());
    assert!(on.is_enabled());
    assert_eq!(on.perform(), Ok(5));
    // Awaitable, and a disabled one is `never` (a timeout wins).
    fibra::block_on(async {
        assert_eq!(when(true, always(3)).await, 3);
        let r = fibra::time::timeout(when(false, always(3)), Duration::from_millis(5)).await;
        assert_eq!(r, Err(fibra::time::Elapsed));
    });
}

// ----- patterns, syntax ------------------------------------------------------

#[test]
fn clause_patterns_destructure_and_bodies_may_be_blocks_or_expressions() {
    let (tx, rx) = bounded::<(u32, &str)>(1);
    tx.try_send((4, "four")).unwrap();
    // Tuple pattern, block body without a comma, expression body last
    // without a trailing comma.
    let s = select_blocking! {
        (n, name) = rx.recv_op().wrap(Result::unwrap) => {
            format!("{name}={n}")
        }
        _ = never::<()>() => String::new()
    };
    assert_eq!(s, "four=4");
    // `mut` bindings, `_`, and `else` with a block.
    let (tx2, rx2) = bounded::<Vec<u32>>(1);
    tx2.try_send(vec![3, 1, 2]).unwrap();
    let v = select_blocking! {
        mut v = rx2.recv_op().wrap(Result::unwrap) => { v.sort(); v },
        _ = rx.recv_op() => unreachable!(),
        else => { vec![] }
    };
    assert_eq!(v, [1, 2, 3]);
    // A unit select used as a statement.
    let mut hits = 0;
    select_blocking! {
        () = always(()) => hits += 1,
    }
    assert_eq!(hits, 1);
}

// ----- control flow in bodies ------------------------------------------------

#[test]
fn break_and_continue_in_bodies_act_on_the_enclosing_loop() {
    let (tx, rx) = unbounded::<u32>();
    for v in 0..10 {
        tx.try_send(v).unwrap();
    }
    let (_stop_tx, stop) = bounded::<()>(1);
    let mut odd = Vec::new();
    let mut fell_through = 0;
    let last = loop {
        select_blocking! {
            v = rx.recv_op() => {
                let v = v.unwrap();
                if v % 2 == 0 {
                    continue;
                }
                if v == 7 {
                    break v;
                }
                odd.push(v);
            }
            _ = stop.recv_op() => unreachable!(),
        }
        fell_through += 1;
    };
    assert_eq!(last, 7);
    assert_eq!(odd, [1, 3, 5]);
    assert_eq!(
        fell_through, 3,
        "continue and break skipped the rest of the loop"
    );
    assert_eq!(rx.len(), 2, "8 and 9 are left");

    // A labelled break out of two loops, from an async select.
    let found = fibra::block_on(async {
        let mut rounds = 0;
        'outer: loop {
            for _ in 0..3 {
                rounds += 1;
                select! {
                    v = rx.recv_op() => if v == Ok(9) { break 'outer rounds },
                    else => break 'outer 0,
                }
            }
        }
    });
    assert_eq!(found, 2);
}

async fn first_even(rx: &Receiver<u32>, quit: &Receiver<()>) -> Option<u32> {
    loop {
        select! {
            v = rx.recv_op() => {
                let v = v.ok()?; // closed: None
                if v % 2 == 0 {
                    return Some(v);
                }
            }
            _ = quit.recv_op() => return None,
        }
    }
}

#[test]
fn return_and_question_mark_in_async_bodies_leave_the_enclosing_fn() {
    let (tx, rx) = unbounded::<u32>();
    let (quit_tx, quit) = bounded::<()>(1);
    for v in [1, 3, 4, 5] {
        tx.try_send(v).unwrap();
    }
    assert_eq!(fibra::block_on(first_even(&rx, &quit)), Some(4));
    assert_eq!(rx.try_recv(), Ok(5), "return left the rest alone");
    quit_tx.try_send(()).unwrap();
    assert_eq!(fibra::block_on(first_even(&rx, &quit)), None);
    tx.try_send(1).unwrap();
    drop(tx);
    assert_eq!(
        fibra::block_on(first_even(&rx, &quit)),
        None,
        "? on RecvError"
    );
}

/// Sums `n` values, failing with `?` inside the body if the channel closes.
fn sum_of(rx: &Receiver<u32>, n: usize) -> Result<u32, RecvError> {
    let mut total = 0;
    for _ in 0..n {
        select_blocking! {
            v = rx.recv_op() => total += v?,
            () = after(NEVER) => unreachable!(),
        }
    }
    Ok(total)
}

#[test]
fn question_mark_in_a_blocking_body_propagates_the_error() {
    let (tx, rx) = unbounded::<u32>();
    for v in 1..=5 {
        tx.try_send(v).unwrap();
    }
    assert_eq!(sum_of(&rx, 3), Ok(6));
    drop(tx);
    assert_eq!(sum_of(&rx, 3), Err(RecvError), "4 and 5, then closed");
    assert!(rx.is_empty());
}

// ----- blocking forms on OS threads -------------------------------------------

#[test]
fn select_blocking_parks_the_thread_until_another_thread_sends() {
    let (tx, rx) = channel::<u32>();
    let (quit_tx, quit) = channel::<()>();
    let consumer = std::thread::spawn(move || {
        let mut got = Vec::new();
        loop {
            select_blocking! {
                v = rx.recv_op() => got.push(v.unwrap()),
                _ = quit.recv_op() => return got,
            }
        }
    });
    for v in 0..200 {
        // Rendezvous: returns once the consumer's select took it.
        tx.send_blocking(v).unwrap();
    }
    quit_tx.send_blocking(()).unwrap();
    assert_eq!(consumer.join().unwrap(), (0..200).collect::<Vec<_>>());
}

#[test]
fn select_biased_blocking_sends_and_receives_with_threads() {
    // An echo: a thread offers to send its pending reply (priority) or to
    // take the next request; the main thread sends requests and collects
    // replies.
    let (req_tx, req_rx) = bounded::<u32>(4);
    let (rep_tx, rep_rx) = channel::<u32>();
    let echo = std::thread::spawn(move || {
        let mut pending = std::collections::VecDeque::new();
        let mut open = true;
        while open || !pending.is_empty() {
            select_biased_blocking! {
                // A disabled clause's op is not built: the unwrap is safe.
                r = rep_tx.send_op(pending.front().copied().unwrap() * 10),
                    if !pending.is_empty() => {
                    r.unwrap();
                    pending.pop_front();
                }
                v = req_rx.recv_op(), if open => match v {
                    Ok(v) => pending.push_back(v),
                    Err(RecvError) => open = false,
                },
            }
        }
    });
    let collector = std::thread::spawn(move || {
        let mut got = Vec::new();
        while let Ok(v) = rep_rx.recv_blocking() {
            got.push(v);
        }
        got
    });
    for v in 0..300 {
        req_tx.send_blocking(v).unwrap();
    }
    drop(req_tx);
    echo.join().unwrap();
    assert_eq!(
        collector.join().unwrap(),
        (0..300).map(|v| v * 10).collect::<Vec<_>>()
    );
}

#[test]
fn select_blocking_on_a_fibra_worker_panics_instead_of_stalling_it() {
    let outcome = fibra::run(async {
        let h = fibra::spawn(async {
            let (_tx, rx) = channel::<u32>();
            select_blocking! {
                v = rx.recv_op() => v.ok(),
            }
        });
        select! {
            r = h.join_op() => r.map_err(|e| e.is_panic()),
            () = after(Duration::from_secs(5)) => panic!("select_blocking! stalled a worker"),
        }
    });
    assert_eq!(outcome, Err(true));
}

// ----- every kind of op in one select ---------------------------------------

#[derive(Debug, PartialEq, Clone, Copy, Eq, Hash)]
enum Source {
    Chan,
    Mail,
    Join,
    Sem,
    IVar,
}

#[derive(Debug, PartialEq)]
enum Event {
    Chan(u32),
    Mail(String),
    Joined(u32),
    Permit,
    IVar(u64),
    Timeout,
}

impl Event {
    fn source(&self) -> Option<Source> {
        match self {
            Event::Chan(_) => Some(Source::Chan),
            Event::Mail(_) => Some(Source::Mail),
            Event::Joined(_) => Some(Source::Join),
            Event::Permit => Some(Source::Sem),
            Event::IVar(_) => Some(Source::IVar),
            Event::Timeout => None,
        }
    }
}

#[test]
fn one_select_over_channel_mailbox_timeout_join_semaphore_and_ivar_clauses() {
    let seed = test_seed("one_select_over_channel_mailbox_timeout_join_semaphore_and_ivar");
    let order = {
        let mut rng = Rng::new(seed);
        let mut order = vec![
            Source::Chan,
            Source::Mail,
            Source::Join,
            Source::Sem,
            Source::IVar,
        ];
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        order
    };
    let feed_order = order.clone();
    let events = fibra::run(async move {
        let (tx, rx) = bounded::<u32>(1);
        let (addr, mut mb) = fibra::mailbox::<String>();
        let sem = Arc::new(Semaphore::new(0));
        let ivar = Arc::new(IVar::<u64>::new());
        let (finish_tx, finish_rx) = channel::<u32>();
        let worker = fibra::spawn(async move { finish_rx.recv().await.unwrap() + 1 });
        let (ack_tx, ack_rx) = channel::<Source>();

        // Nothing is ready: only the timeout can fire.
        let mut events = Vec::new();
        let (mut joined, mut got_ivar) = (false, false);
        macro_rules! one_select {
            ($timer:expr) => {
                select! {
                    v = rx.recv_op() => Event::Chan(v.unwrap()),
                    m = mb.recv_op() => Event::Mail(m.unwrap()),
                    r = worker.join_op(), if !joined => { joined = true; Event::Joined(r.unwrap()) }
                    p = sem.acquire_op() => { p.unwrap().forget(); Event::Permit }
                    v = ivar.get_op(), if !got_ivar => { got_ivar = true; Event::IVar(v) }
                    () = $timer => Event::Timeout,
                }
            };
        }
        let t = Instant::now();
        let first = one_select!(after(Duration::from_millis(20)));
        assert_eq!(first, Event::Timeout);
        assert!(t.elapsed() >= Duration::from_millis(20));

        // A task makes the sources ready one at a time, in `order`, each
        // after the previous one was seen.
        // (The feeder sends on clones: the originals stay alive, so the
        // channel and the mailbox never close under the selects.)
        let feeder = {
            let (sem, ivar, order) = (sem.clone(), ivar.clone(), feed_order);
            let (tx, addr) = (tx.clone(), addr.clone());
            fibra::spawn(async move {
                for s in order {
                    match s {
                        Source::Chan => tx.send(5).await.unwrap(),
                        Source::Mail => addr.send("hi".to_string()).unwrap(),
                        Source::Join => finish_tx.send(41).await.unwrap(),
                        Source::Sem => sem.release(1),
                        Source::IVar => ivar.put(9).unwrap(),
                    }
                    assert_eq!(ack_rx.recv().await, Ok(s), "seen out of order");
                }
            })
        };
        for _ in 0..5 {
            let ev = one_select!(after(Duration::from_secs(10)));
            let source = ev.source().expect("timed out waiting for a source");
            events.push(ev);
            ack_tx.send(source).await.unwrap();
        }
        feeder.await.unwrap();
        // Everything is consumed: the timeout fires again.
        assert_eq!(one_select!(after(Duration::from_millis(5))), Event::Timeout);
        assert!(joined && got_ivar);
        assert_eq!(sem.available_permits(), 0);
        events
    });
    let expected: Vec<Event> = order
        .iter()
        .map(|s| match s {
            Source::Chan => Event::Chan(5),
            Source::Mail => Event::Mail("hi".into()),
            Source::Join => Event::Joined(42),
            Source::Sem => Event::Permit,
            Source::IVar => Event::IVar(9),
        })
        .collect();
    assert_eq!(events, expected);
}

#[test]
fn a_mailbox_clause_beside_a_timer_clause_sees_a_message_sent_while_it_waits() {
    // Polled by hand: the first poll blocks (every clause published), the
    // message arrives, and the next poll commits the mailbox clause (a
    // mailbox receive is woken to look again: the select, and a
    // `time::timeout` around the receive, must pass that on).
    let (addr, mut mb) = fibra::mailbox::<u32>();
    let (_tx, rx) = channel::<u32>();
    {
        let (waker, wakes) = common::WakeCounter::new();
        let mut fut = std::pin::pin!(async {
            select! {
                m = mb.recv_op() => Some(m),
                _ = rx.recv_op() => None,
                () = after(NEVER) => None,
            }
        });
        assert!(common::poll_with(fut.as_mut(), &waker).is_pending());
        addr.send(5).unwrap();
        assert!(wakes.count() >= 1, "the send woke the select");
        assert_eq!(
            common::poll_with(fut.as_mut(), &waker),
            std::task::Poll::Ready(Some(Some(5)))
        );
    }
    let (waker, wakes) = common::WakeCounter::new();
    let mut fut = std::pin::pin!(async {
        select! {
            m = fibra::time::timeout(mb.recv_op(), NEVER) => m.ok(),
            _ = rx.recv_op() => None,
        }
    });
    assert!(common::poll_with(fut.as_mut(), &waker).is_pending());
    addr.send(6).unwrap();
    assert!(wakes.count() >= 1, "the send woke the select");
    assert_eq!(
        common::poll_with(fut.as_mut(), &waker),
        std::task::Poll::Ready(Some(Some(6)))
    );
}

#[test]
fn aborting_a_task_blocked_in_select_leaves_no_receiver_behind() {
    fibra::run(async {
        let (tx_a, rx_a) = channel::<u32>();
        let (tx_b, rx_b) = channel::<u32>();
        // Clones stay here, so the channels stay open after the task goes.
        let (keep_a, keep_b) = (rx_a.clone(), rx_b.clone());
        let (started_tx, started) = channel::<()>();
        let task = fibra::spawn(async move {
            started_tx.send(()).await.unwrap();
            loop {
                select! {
                    v = rx_a.recv_op() => { v.unwrap(); }
                    v = rx_b.recv_op() => { v.unwrap(); }
                }
            }
        });
        started.recv().await.unwrap();
        // Hand it a value through each clause, so it is surely in the loop.
        tx_a.send(1).await.unwrap();
        tx_b.send(2).await.unwrap();
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        // The cancelled select withdrew both receives: a rendezvous send
        // finds nobody waiting.
        assert_eq!(tx_a.try_send(3), Err(TrySendError::Full(3)));
        assert_eq!(tx_b.try_send(4), Err(TrySendError::Full(4)));
        drop((keep_a, keep_b));
    });
}

// ----- every clause disabled ---------------------------------------------------

#[test]
#[should_panic(expected = "every clause is disabled by its `if` condition and there is no `else`")]
fn select_with_every_clause_disabled_and_no_else_panics() {
    let (tx, rx) = bounded::<u8>(1);
    tx.try_send(1).unwrap(); // ready, but that does not matter
    fibra::block_on(async {
        select! {
            _ = rx.recv_op(), if false => {}
            _ = always(()), if 1 + 1 == 3 => {}
        }
    });
}

#[test]
#[should_panic(expected = "every clause is disabled by its `if` condition and there is no `else`")]
fn select_biased_blocking_with_every_clause_disabled_and_no_else_panics() {
    select_biased_blocking! {
        _ = always(()), if false => {}
    }
}

#[test]
#[should_panic(expected = "every clause is disabled by its `if` condition and there is no `else`")]
fn select_blocking_with_every_clause_disabled_and_no_else_panics() {
    let (_tx, rx) = channel::<u8>();
    let enabled = [false; 3];
    select_blocking! {
        _ = rx.recv_op(), if enabled[0] => {}
        _ = rx.recv_op(), if enabled[1] => {}
        _ = rx.recv_op(), if enabled[2] => {}
    }
}

#[test]
fn every_clause_disabled_with_else_runs_else() {
    let r = select_blocking! {
        v = always(1), if false => v,
        else => 0,
    };
    assert_eq!(r, 0);
}

// ----- twelve clauses -----------------------------------------------------------

fn twelve_blocking(r: &[Receiver<u32>]) -> (usize, u32) {
    select_blocking! {
        v = r[0].recv_op() => (0, v.unwrap()),
        v = r[1].recv_op() => (1, v.unwrap()),
        v = r[2].recv_op() => (2, v.unwrap()),
        v = r[3].recv_op() => (3, v.unwrap()),
        v = r[4].recv_op() => (4, v.unwrap()),
        v = r[5].recv_op() => (5, v.unwrap()),
        v = r[6].recv_op() => (6, v.unwrap()),
        v = r[7].recv_op() => (7, v.unwrap()),
        v = r[8].recv_op() => (8, v.unwrap()),
        v = r[9].recv_op() => (9, v.unwrap()),
        v = r[10].recv_op() => (10, v.unwrap()),
        v = r[11].recv_op() => (11, v.unwrap()),
    }
}

async fn twelve_biased_guarded(r: &[Receiver<u32>], on: [bool; 12]) -> Option<(usize, u32)> {
    select_biased! {
        v = r[0].recv_op(), if on[0] => Some((0, v.unwrap())),
        v = r[1].recv_op(), if on[1] => Some((1, v.unwrap())),
        v = r[2].recv_op(), if on[2] => Some((2, v.unwrap())),
        v = r[3].recv_op(), if on[3] => Some((3, v.unwrap())),
        v = r[4].recv_op(), if on[4] => Some((4, v.unwrap())),
        v = r[5].recv_op(), if on[5] => Some((5, v.unwrap())),
        v = r[6].recv_op(), if on[6] => Some((6, v.unwrap())),
        v = r[7].recv_op(), if on[7] => Some((7, v.unwrap())),
        v = r[8].recv_op(), if on[8] => Some((8, v.unwrap())),
        v = r[9].recv_op(), if on[9] => Some((9, v.unwrap())),
        v = r[10].recv_op(), if on[10] => Some((10, v.unwrap())),
        v = r[11].recv_op(), if on[11] => Some((11, v.unwrap())),
        else => None,
    }
}

#[test]
fn twelve_clauses_each_dispatch_to_their_own_body() {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..12).map(|_| bounded::<u32>(1)).unzip();
    // Only clause k ready: clause k runs, with its channel's value.
    for (k, tx) in txs.iter().enumerate() {
        tx.try_send(100 + k as u32).unwrap();
        assert_eq!(twelve_blocking(&rxs), (k, 100 + k as u32));
    }
    // All ready, fair: every clause wins sometimes (expected 100 each).
    let mut wins = [0usize; 12];
    for (k, tx) in txs.iter().enumerate() {
        tx.try_send(100 + k as u32).unwrap();
    }
    for _ in 0..1_200 {
        let (k, v) = twelve_blocking(&rxs);
        assert_eq!(v, 100 + k as u32);
        wins[k] += 1;
        txs[k].try_send(v).unwrap();
    }
    for w in wins {
        assert!(w >= 40, "unfair over twelve clauses: {wins:?}");
    }
    // All ready, biased with guards: the first enabled clause wins.
    fibra::block_on(async {
        for (first, tx) in txs.iter().enumerate() {
            let mut on = [false; 12];
            for e in on.iter_mut().skip(first) {
                *e = true;
            }
            let got = twelve_biased_guarded(&rxs, on).await;
            assert_eq!(got, Some((first, 100 + first as u32)));
            tx.try_send(100 + first as u32).unwrap();
        }
        assert_eq!(twelve_biased_guarded(&rxs, [false; 12]).await, None);
    });
}

// ----- dynamic sets: choose over a Vec ----------------------------------------

#[test]
fn choose_over_a_thousand_receive_ops_commits_the_one_that_got_a_value() {
    const N: usize = 1_000;
    const ROUNDS: u32 = 20;
    let seed = test_seed("choose_over_a_thousand_receive_ops");
    let mut rng = Rng::new(seed);
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..N).map(|_| channel::<u32>()).unzip();
    let start = Instant::now();
    std::thread::scope(|s| {
        for round in 0..ROUNDS {
            let target = rng.below(N);
            let round_start = Instant::now();
            let txs = &txs;
            let sender = s.spawn(move || txs[target].send_blocking(round));
            let ops: Vec<_> = rxs
                .iter()
                .enumerate()
                .map(|(i, rx)| rx.recv_op().wrap(move |r| (i, r)))
                .collect();
            let (i, r) = choose(ops).perform();
            assert_eq!((i, r), (target, Ok(round)), "seed {seed}");
            sender.join().unwrap().unwrap();
            assert!(
                round_start.elapsed() < Duration::from_millis(500),
                "one round took {:?}",
                round_start.elapsed()
            );
        }
    });
    let elapsed = start.elapsed();
    // Every losing receive was withdrawn: no channel has a receiver left.
    for (i, tx) in txs.iter().enumerate() {
        assert_eq!(tx.try_send(0), Err(TrySendError::Full(0)), "channel {i}");
    }
    assert!(
        elapsed < Duration::from_secs(2),
        "{ROUNDS} rounds over {N} ops took {elapsed:?}"
    );
}

#[test]
fn choose_over_a_thousand_receive_ops_in_a_task() {
    const N: usize = 1_000;
    let seed = test_seed("choose_over_a_thousand_receive_ops_in_a_task");
    let mut rng = Rng::new(seed);
    let targets: Vec<usize> = (0..20).map(|_| rng.below(N)).collect();
    let elapsed = fibra::run(async move {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..N).map(|_| bounded::<usize>(1)).unzip();
        let txs = Arc::new(txs);
        let start = Instant::now();
        for (round, &target) in targets.iter().enumerate() {
            // Half the rounds find the value already there (the try phase),
            // half wait for it (the block phase).
            let sender = {
                let txs = txs.clone();
                let early = round % 2 == 0;
                if early {
                    txs[target].send(round).await.unwrap();
                }
                fibra::spawn(async move {
                    if !early {
                        txs[target].send(round).await.unwrap();
                    }
                })
            };
            let ops: Vec<_> = rxs
                .iter()
                .enumerate()
                .map(|(i, rx)| rx.recv_op().wrap(move |r| (i, r)))
                .collect();
            assert_eq!(choose(ops).await, (target, Ok(round)));
            sender.await.unwrap();
        }
        assert!(rxs.iter().all(Receiver::is_empty));
        start.elapsed()
    });
    assert!(
        elapsed < Duration::from_secs(1),
        "20 rounds took {elapsed:?}"
    );
}

#[test]
fn select_works_under_tokio() {
    let rt = common::tokio_ct();
    let got = rt.block_on(async {
        let (tx, rx) = channel::<u32>();
        let sender = tokio::spawn(async move {
            for v in 0..10 {
                tx.send(v).await.unwrap();
            }
        });
        let mut got = Vec::new();
        loop {
            select! {
                v = rx.recv_op() => match v {
                    Ok(v) => got.push(v),
                    Err(RecvError) => break,
                },
                () = after(Duration::from_secs(10)) => panic!("stalled"),
            }
        }
        sender.await.unwrap();
        got
    });
    assert_eq!(got, (0..10).collect::<Vec<_>>());
}
