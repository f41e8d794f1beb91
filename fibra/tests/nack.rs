//! `with_nack`: a branch learns that it lost — to another branch, or because
//! its perform was dropped or unwound before anything committed — and only
//! then.

mod common;

use common::poll_noop;
use fibra::{
    Always, Nack, Never, Op, Perform, always, bounded, channel, choose, choose_biased, guard,
    mailbox, never, unbounded, with_nack,
};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Keeps the nacks handed to builders, for the test to inspect.
#[derive(Default)]
struct Nacks(Mutex<Vec<Nack>>);

impl Nacks {
    fn keep(&self, n: Nack) {
        self.0.lock().unwrap().push(n);
    }

    fn fired(&self) -> Vec<bool> {
        self.0.lock().unwrap().iter().map(Nack::is_fired).collect()
    }

    fn take(&self, i: usize) -> Nack {
        self.0.lock().unwrap()[i].clone()
    }
}

// ----- the branch wins: no nack ----------------------------------------------

#[test]
fn the_nack_does_not_fire_when_its_branch_wins_at_once() {
    let nacks = Nacks::default();
    let got = choose((
        with_nack(|n| {
            nacks.keep(n);
            always("mine")
        }),
        never(),
    ))
    .perform();
    assert_eq!(got, "mine");
    assert_eq!(nacks.fired(), [false]);
    assert!(
        nacks.take(0).try_perform().is_err(),
        "a winner's nack became ready"
    );
}

#[test]
fn the_nack_does_not_fire_when_its_branch_wins_after_blocking() {
    let nacks = Nacks::default();
    let (tx, rx) = channel::<u32>();
    let (_other_tx, other_rx) = channel::<u32>();
    let got = std::thread::scope(|s| {
        let chooser = s.spawn(|| {
            choose((
                with_nack(|n| {
                    nacks.keep(n);
                    rx.recv_op()
                }),
                other_rx.recv_op(),
            ))
            .perform()
        });
        tx.send_blocking(5).unwrap();
        chooser.join().unwrap()
    });
    assert_eq!(got, Ok(5));
    assert_eq!(nacks.fired(), [false]);
}

#[test]
fn the_nack_does_not_fire_when_its_branch_wins_a_try_perform() {
    let nacks = Nacks::default();
    let (tx, rx) = bounded::<u32>(1);
    tx.try_send(1).unwrap();
    let got = choose((
        with_nack(|n| {
            nacks.keep(n);
            rx.recv_op()
        }),
        never(),
    ))
    .try_perform();
    assert_eq!(got.ok(), Some(Ok(1)));
    assert_eq!(nacks.fired(), [false]);
}

// ----- the branch loses: the nack fires ---------------------------------------

#[test]
fn the_nack_fires_when_another_branch_wins_at_once() {
    let nacks = Nacks::default();
    let got = choose_biased((
        always("other"),
        with_nack(|n| {
            nacks.keep(n);
            never()
        }),
    ))
    .perform();
    assert_eq!(got, "other");
    assert_eq!(nacks.fired(), [true]);
    // A fired nack is an op that is ready now.
    assert_eq!(nacks.take(0).try_perform().ok(), Some(()));
    nacks.take(0).perform();
}

#[test]
fn the_nack_fires_when_another_branch_wins_after_blocking() {
    let nacks = Nacks::default();
    let (_tx, rx) = channel::<u32>();
    let (other_tx, other_rx) = channel::<u32>();
    std::thread::scope(|s| {
        let chooser = s.spawn(|| {
            choose((
                with_nack(|n| {
                    nacks.keep(n);
                    rx.recv_op().wrap(|_| "mine")
                }),
                other_rx.recv_op().wrap(|_| "other"),
            ))
            .perform()
        });
        other_tx.send_blocking(1).unwrap();
        assert_eq!(chooser.join().unwrap(), "other");
    });
    assert_eq!(nacks.fired(), [true]);
}

#[test]
fn the_nack_of_every_losing_branch_fires_and_only_theirs() {
    for winner in 0..3 {
        let nacks: [Nacks; 3] = Default::default();
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..3).map(|_| bounded::<usize>(1)).unzip();
        txs[winner].try_send(winner).unwrap();
        let branch = |i: usize| {
            let (nacks, rx) = (&nacks[i], &rxs[i]);
            with_nack(move |n| {
                nacks.keep(n);
                rx.recv_op()
            })
        };
        let got = choose((branch(0), branch(1), branch(2))).perform();
        assert_eq!(got, Ok(winner));
        for (i, n) in nacks.iter().enumerate() {
            assert_eq!(n.fired(), [i != winner], "winner {winner}, branch {i}");
        }
    }
}

#[test]
fn a_nack_around_a_nested_choice_fires_only_if_none_of_its_branches_won() {
    for (ready, want_fired) in [(0, false), (1, false), (2, true)] {
        let nacks = Nacks::default();
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..3).map(|_| bounded::<usize>(1)).unzip();
        txs[ready].try_send(ready).unwrap();
        let got = choose((
            with_nack(|n| {
                nacks.keep(n);
                choose((rxs[0].recv_op(), rxs[1].recv_op()))
            }),
            rxs[2].recv_op(),
        ))
        .perform();
        assert_eq!(got, Ok(ready));
        assert_eq!(nacks.fired(), [want_fired], "channel {ready} ready");
    }
}

#[test]
fn clones_of_a_nack_see_the_same_signal() {
    let nacks = Nacks::default();
    let clone = Mutex::new(None);
    choose_biased((
        always(()),
        with_nack(|n| {
            *clone.lock().unwrap() = Some(n.clone());
            nacks.keep(n);
            never()
        }),
    ))
    .perform();
    assert!(clone.lock().unwrap().take().unwrap().is_fired());
    assert_eq!(nacks.fired(), [true]);
}

// ----- the perform is dropped: the nack fires --------------------------------

#[test]
fn the_nack_fires_when_the_perform_is_dropped_before_any_commit() {
    let nacks = Nacks::default();
    let (_tx, rx) = channel::<u32>();
    {
        let mut fut = pin!(Perform::new(with_nack(|n| {
            nacks.keep(n);
            rx.recv_op()
        })));
        assert!(poll_noop(fut.as_mut()).is_pending());
        assert_eq!(nacks.fired(), [false], "fired while still waiting");
    }
    assert_eq!(nacks.fired(), [true]);
}

#[test]
fn no_nack_is_built_for_a_perform_that_never_started() {
    let builds = AtomicUsize::new(0);
    let (_tx, rx) = channel::<u32>();
    let op = with_nack(|_n| {
        builds.fetch_add(1, Ordering::SeqCst);
        rx.recv_op()
    });
    let fut = Perform::new(op);
    drop(fut);
    assert_eq!(builds.load(Ordering::SeqCst), 0);
}

#[test]
fn the_builder_runs_once_per_perform() {
    let builds = AtomicUsize::new(0);
    let (tx, rx) = channel::<u32>();
    let op = with_nack(|_n| {
        builds.fetch_add(1, Ordering::SeqCst);
        rx.recv_op()
    });
    let mut fut = pin!(Perform::new(op));
    for _ in 0..4 {
        assert!(poll_noop(fut.as_mut()).is_pending());
    }
    tx.try_send(1).unwrap();
    assert!(poll_noop(fut.as_mut()).is_ready());
    assert_eq!(builds.load(Ordering::SeqCst), 1);
}

#[test]
fn the_nack_fires_when_a_tokio_timeout_cancels_the_perform() {
    let nacks = Nacks::default();
    let (_tx, rx) = channel::<u32>();
    let rt = common::tokio_ct();
    rt.block_on(async {
        let op = with_nack(|n| {
            nacks.keep(n);
            rx.recv_op()
        });
        assert!(
            tokio::time::timeout(Duration::from_millis(10), op)
                .await
                .is_err()
        );
    });
    assert_eq!(nacks.fired(), [true]);
}

#[test]
fn the_nack_fires_when_tokio_select_picks_another_branch() {
    let nacks = Nacks::default();
    let (_tx, rx) = channel::<u32>();
    let rt = common::tokio_ct();
    rt.block_on(async {
        let op = with_nack(|n| {
            nacks.keep(n);
            rx.recv_op()
        });
        tokio::select! {
            biased;
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            _ = op => panic!("nobody sent"),
        }
    });
    assert_eq!(nacks.fired(), [true]);
}

// ----- the nack in use: a server learns that its client gave up --------------

#[derive(Debug)]
enum Outcome {
    Replied,
    ClientHungUp,
    Abandoned,
}

/// A request: the client's reply channel and its nack.
type Request = (fibra::Sender<u32>, Nack);

/// Serves one request after `gate` opens: reply, unless the nack says the
/// client gave up. Runs on its own OS thread.
fn serve_one(requests: fibra::Receiver<Request>, gate: fibra::Receiver<()>) -> Outcome {
    let (reply, nack) = requests.recv_blocking().unwrap();
    gate.recv_blocking().unwrap();
    choose((
        reply.send_op(42).wrap(|r| match r {
            Ok(()) => Outcome::Replied,
            Err(_) => Outcome::ClientHungUp,
        }),
        nack.wrap(|_| Outcome::Abandoned),
    ))
    .perform()
}

#[test]
fn a_server_replies_when_the_client_waits_for_the_answer() {
    let (req_tx, req_rx) = unbounded::<Request>();
    let (gate_tx, gate_rx) = channel::<()>();
    let server = std::thread::spawn(move || serve_one(req_rx, gate_rx));
    let (reply_tx, reply_rx) = channel::<u32>();
    let (_give_up_tx, give_up_rx) = channel::<()>();
    let client = std::thread::spawn(move || {
        choose((
            with_nack(|n| {
                req_tx.try_send((reply_tx.clone(), n)).unwrap();
                reply_rx.recv_op().wrap(|r| r.ok())
            }),
            give_up_rx.recv_op().wrap(|_| None),
        ))
        .perform()
    });
    gate_tx.send_blocking(()).unwrap();
    assert_eq!(client.join().unwrap(), Some(42));
    let outcome = server.join().unwrap();
    assert!(matches!(outcome, Outcome::Replied), "{outcome:?}");
}

#[test]
fn a_server_on_another_thread_learns_through_the_nack_that_the_client_gave_up() {
    let (req_tx, req_rx) = unbounded::<Request>();
    let (gate_tx, gate_rx) = channel::<()>();
    let server = std::thread::spawn(move || serve_one(req_rx, gate_rx));
    let (reply_tx, reply_rx) = channel::<u32>();
    let (give_up_tx, give_up_rx) = channel::<()>();
    // Keep the reply channel open after the client leaves: the server must
    // learn that the client gave up from the nack, not from a closed channel.
    let _reply_rx_alive = reply_rx.clone();
    let client = std::thread::spawn(move || {
        choose((
            with_nack(|n| {
                req_tx.try_send((reply_tx.clone(), n)).unwrap();
                reply_rx.recv_op().wrap(|r| r.ok())
            }),
            give_up_rx.recv_op().wrap(|_| None),
        ))
        .perform()
    });
    // The client is waiting (its request is out); make it give up.
    give_up_tx.send_blocking(()).unwrap();
    assert_eq!(client.join().unwrap(), None);
    // Now let the server try to answer: only the nack can commit.
    gate_tx.send_blocking(()).unwrap();
    let outcome = server.join().unwrap();
    assert!(matches!(outcome, Outcome::Abandoned), "{outcome:?}");
}

#[test]
fn a_server_task_waiting_on_the_nack_is_woken_when_the_client_loses() {
    let rt = common::tokio_mt();
    let (req_tx, req_rx) = unbounded::<Request>();
    let server = rt.spawn(async move {
        let (reply, nack) = req_rx.recv().await.unwrap();
        // Wait for whichever comes first; the client never receives.
        choose((
            reply.send_op(1).wrap(|_| "replied"),
            nack.wrap(|_| "abandoned"),
        ))
        .await
    });
    let (reply_tx, _reply_rx) = channel::<u32>();
    let (give_up_tx, give_up_rx) = channel::<()>();
    let client = std::thread::spawn(move || {
        choose((
            with_nack(|n| {
                req_tx.try_send((reply_tx.clone(), n)).unwrap();
                never()
            }),
            give_up_rx.recv_op().wrap(|_| "gave up"),
        ))
        .perform()
    });
    std::thread::sleep(Duration::from_millis(30)); // the server is blocked now
    give_up_tx.send_blocking(()).unwrap();
    assert_eq!(client.join().unwrap(), "gave up");
    assert_eq!(rt.block_on(server).unwrap(), "abandoned");
}

// ----- the perform unwinds: the nack of every branch not chosen fires --------

/// The three ways to perform an op.
#[derive(Clone, Copy, Debug)]
enum Via {
    Perform,
    Await,
    TryPerform,
}

const VIAS: [Via; 3] = [Via::Perform, Via::Await, Via::TryPerform];

/// Performs `op` `via` one of the three ways; returns whether it unwound.
/// `try_perform` never waits, and every op here is ready or panics first, so
/// nothing blocks.
fn unwinds<O: Op>(via: Via, op: O) -> bool {
    catch_unwind(AssertUnwindSafe(|| match via {
        Via::Perform => drop(op.perform()),
        Via::Await => drop(futures::executor::block_on(async move {
            Perform::new(op).await
        })),
        Via::TryPerform => drop(op.try_perform().ok()),
    }))
    .is_err()
}

/// A guard whose builder panics.
fn panicking_guard() -> fibra::Guard<impl FnMut() -> Always<u32>, Always<u32>> {
    guard(|| -> Always<u32> { panic!("guard builder") })
}

#[test]
fn a_sibling_guard_builder_that_panics_fires_the_nack_of_an_earlier_branch() {
    for via in VIAS {
        let nacks = Nacks::default();
        let op = choose_biased((
            with_nack(|n| {
                nacks.keep(n);
                never::<u32>()
            }),
            panicking_guard(),
        ));
        assert!(unwinds(via, op), "{via:?}");
        assert_eq!(nacks.fired(), [true], "{via:?}");
        assert_eq!(nacks.take(0).try_perform().ok(), Some(()), "{via:?}");
    }
}

#[test]
fn a_sibling_with_nack_builder_that_panics_fires_the_nack_of_an_earlier_branch() {
    for via in VIAS {
        let nacks = Nacks::default();
        let op = choose_biased((
            with_nack(|n| {
                nacks.keep(n);
                never::<u32>()
            }),
            with_nack(|_n| -> Never<u32> { panic!("with_nack builder") }),
        ));
        assert!(unwinds(via, op), "{via:?}");
        assert_eq!(nacks.fired(), [true], "{via:?}");
    }
}

#[test]
fn a_with_nack_builder_that_panics_after_keeping_its_nack_fires_it() {
    for via in VIAS {
        let nacks = Nacks::default();
        let op = choose_biased((
            always(1),
            with_nack(|n| -> Never<u32> {
                nacks.keep(n);
                panic!("with_nack builder")
            }),
        ));
        assert!(unwinds(via, op), "{via:?}");
        assert_eq!(nacks.fired(), [true], "{via:?}");
    }
}

#[test]
fn a_winning_wrap_that_panics_in_the_try_phase_fires_the_nacks_of_the_other_branches() {
    for via in VIAS {
        // One losing branch before the winner in the scan, one after it.
        let nacks: [Nacks; 2] = Default::default();
        let op = choose_biased((
            with_nack(|n| {
                nacks[0].keep(n);
                never::<u32>()
            }),
            always(1).wrap(|_| -> u32 { panic!("wrap") }),
            with_nack(|n| {
                nacks[1].keep(n);
                never::<u32>()
            }),
        ));
        assert!(unwinds(via, op), "{via:?}");
        assert_eq!(nacks[0].fired(), [true], "{via:?}: the branch tried first");
        assert_eq!(nacks[1].fired(), [true], "{via:?}: the branch never tried");
    }
}

#[test]
fn the_winners_nack_does_not_fire_when_its_wrap_panics_after_the_commit() {
    for via in VIAS {
        for inside in [false, true] {
            let nacks: [Nacks; 2] = Default::default();
            let boom = |_: u32| -> u32 { panic!("wrap") };
            let winner = if inside {
                with_nack(|n| {
                    nacks[0].keep(n);
                    always(1).wrap(boom).boxed()
                })
                .boxed()
            } else {
                with_nack(|n| {
                    nacks[0].keep(n);
                    always(1).boxed()
                })
                .wrap(boom)
                .boxed()
            };
            let op = choose_biased((
                winner,
                with_nack(|n| {
                    nacks[1].keep(n);
                    never::<u32>()
                })
                .boxed(),
            ));
            assert!(unwinds(via, op), "{via:?}");
            let what = format!("{via:?}, wrap inside the with_nack: {inside}");
            assert_eq!(nacks[0].fired(), [false], "{what}: the winner's nack");
            assert_eq!(nacks[1].fired(), [true], "{what}: the loser's nack");
        }
    }
}

#[test]
fn a_nack_inside_the_winning_branch_fires_when_its_sibling_there_won() {
    for via in VIAS {
        let (outer, inner) = <(Nacks, Nacks)>::default();
        let op = with_nack(|n| {
            outer.keep(n);
            choose_biased((
                with_nack(|n| {
                    inner.keep(n);
                    never::<u32>()
                }),
                always(1).wrap(|_| -> u32 { panic!("wrap") }),
            ))
        });
        assert!(unwinds(via, op), "{via:?}");
        assert_eq!(
            outer.fired(),
            [false],
            "{via:?}: outer, on the committed path"
        );
        assert_eq!(inner.fired(), [true], "{via:?}: inner, lost");
    }
}

#[test]
fn a_panic_before_any_commit_in_the_try_phase_fires_the_nack() {
    for via in VIAS {
        let nacks = Nacks::default();
        let (addr, mut mb) = mailbox::<u32>();
        addr.send(7).unwrap();
        let op = choose_biased((
            with_nack(|n| {
                nacks.keep(n);
                never::<Option<u32>>()
            }),
            mb.recv_matching_op(|_| panic!("predicate")),
        ));
        assert!(unwinds(via, op), "{via:?}");
        assert_eq!(nacks.fired(), [true], "{via:?}");
    }
}

#[test]
fn nested_nacks_fire_when_a_later_sibling_builder_panics() {
    for via in VIAS {
        let (outer, inner, in_guard) = <(Nacks, Nacks, Nacks)>::default();
        let op = choose_biased((
            // A with_nack around a choice holding a with_nack inside a guard.
            with_nack(|n| {
                outer.keep(n);
                choose((
                    guard(|| {
                        with_nack(|n| {
                            inner.keep(n);
                            never::<u32>()
                        })
                    }),
                    never(),
                ))
            }),
            guard(|| {
                with_nack(|n| {
                    in_guard.keep(n);
                    never::<u32>()
                })
            }),
            panicking_guard(),
        ));
        assert!(unwinds(via, op), "{via:?}");
        assert_eq!(outer.fired(), [true], "{via:?}: outer");
        assert_eq!(inner.fired(), [true], "{via:?}: inner");
        assert_eq!(in_guard.fired(), [true], "{via:?}: in a guard");
    }
}

#[test]
fn a_server_waiting_on_the_nack_is_woken_when_the_clients_perform_unwinds() {
    let (nack_tx, nack_rx) = std::sync::mpsc::channel::<Nack>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let server = std::thread::spawn(move || {
        let nack = nack_rx.recv().unwrap();
        nack.perform();
        done_tx.send(()).unwrap();
    });
    let op = choose_biased((
        with_nack(|n| {
            nack_tx.send(n).unwrap();
            std::thread::sleep(Duration::from_millis(20)); // the server waits
            never::<u32>()
        }),
        panicking_guard(),
    ));
    assert!(unwinds(Via::Perform, op));
    assert!(
        done_rx.recv_timeout(Duration::from_secs(10)).is_ok(),
        "the server still waits for the nack"
    );
    server.join().unwrap();
}

// ----- more ways a branch is not chosen ---------------------------------------

#[test]
fn a_failed_try_perform_fires_the_nack() {
    let nacks = Nacks::default();
    let (_tx, rx) = channel::<u32>();
    let op = choose((
        with_nack(|n| {
            nacks.keep(n);
            rx.recv_op()
        }),
        never(),
    ));
    assert!(op.try_perform().is_err());
    assert_eq!(nacks.fired(), [true]);
}

#[test]
fn a_nested_nack_fires_when_the_waiting_perform_is_dropped() {
    let (outer, inner) = <(Nacks, Nacks)>::default();
    let (_tx, rx) = channel::<u32>();
    {
        let mut fut = pin!(Perform::new(choose((
            guard(|| {
                with_nack(|n| {
                    outer.keep(n);
                    choose((
                        with_nack(|n| {
                            inner.keep(n);
                            rx.recv_op()
                        }),
                        never(),
                    ))
                })
            }),
            never(),
        ))));
        assert!(poll_noop(fut.as_mut()).is_pending());
        assert_eq!((outer.fired(), inner.fired()), (vec![false], vec![false]));
    }
    assert_eq!((outer.fired(), inner.fired()), (vec![true], vec![true]));
}
