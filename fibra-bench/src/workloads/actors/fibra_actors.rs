//! The actor workloads on fibra's runtime, written the way an Erlang
//! programmer would: every process is a task owning a [`Mailbox`]
//! (`fibra::spawn_actor`, or `fibra::mailbox` + `fibra::spawn` where every
//! address must exist before any process starts), messages go through
//! [`Addr::send`] (never blocks), and the root process collects the
//! results from its own mailbox.

use std::sync::Arc;

use fibra::{Addr, Mailbox, mailbox};

use super::kernels::{self, GROUP, lcg_target};

/// Runs `body` as the root process (a task, like Erlang's runner process)
/// and returns what it returns.
async fn root<F>(body: F) -> u64
where
    F: Future<Output = u64> + Send + 'static,
{
    fibra::spawn(body).await.expect("fibra: root task failed")
}

fn send<M>(to: &Addr<M>, msg: M) {
    assert!(to.send(msg).is_ok(), "fibra: a process ended too early");
}

async fn recv<M>(mb: &mut Mailbox<M>) -> M {
    mb.recv().await.expect("fibra: every sender is gone")
}

/// `n` mailboxes, their addresses shared by every process.
fn mailboxes<M>(n: u64) -> (Arc<Vec<Addr<M>>>, Vec<Mailbox<M>>) {
    let (addrs, boxes): (Vec<_>, Vec<_>) = (0..n).map(|_| mailbox()).unzip();
    (Arc::new(addrs), boxes)
}

enum Bang {
    Ping(u32),
    Pong,
}

/// `big-bang`: every process pings every other and answers every ping.
pub async fn big_bang(n: u64) -> u64 {
    root(async move {
        let (done, mut results) = mailbox::<u64>();
        let (addrs, boxes) = mailboxes::<Bang>(n);
        for (me, mut mb) in boxes.into_iter().enumerate() {
            let (addrs, done) = (addrs.clone(), done.clone());
            fibra::spawn(async move {
                for (other, addr) in addrs.iter().enumerate() {
                    if other != me {
                        send(addr, Bang::Ping(me as u32));
                    }
                }
                let (mut pings, mut pongs) = (0, 0);
                while pings + 1 < n || pongs + 1 < n {
                    match recv(&mut mb).await {
                        Bang::Ping(from) => {
                            send(&addrs[from as usize], Bang::Pong);
                            pings += 1;
                        }
                        Bang::Pong => pongs += 1,
                    }
                }
                send(&done, pongs);
            });
        }
        let mut total = 0;
        for _ in 0..n {
            total += recv(&mut results).await;
        }
        total
    })
    .await
}

/// `hackbench`: in each group, every writer sends `messages` messages to
/// every listener of its group.
pub async fn hackbench(groups: u64, messages: u64) -> u64 {
    root(async move {
        let (done, mut results) = mailbox::<u64>();
        for _ in 0..groups {
            let (listeners, boxes) = mailboxes::<u64>(GROUP);
            for mut mb in boxes {
                let done = done.clone();
                fibra::spawn(async move {
                    let mut sum = 0;
                    for _ in 0..GROUP * messages {
                        sum += recv(&mut mb).await;
                    }
                    send(&done, sum);
                });
            }
            for _ in 0..GROUP {
                let listeners = listeners.clone();
                fibra::spawn(async move {
                    for m in 0..messages {
                        for listener in listeners.iter() {
                            send(listener, m);
                        }
                    }
                });
            }
        }
        let mut total = 0;
        for _ in 0..groups * GROUP {
            total += recv(&mut results).await;
        }
        total
    })
    .await
}

/// `mandelbrot`: `tasks` processes each compute the image; the root waits
/// for them in turn.
pub async fn mandelbrot(size: u64, tasks: u64) -> u64 {
    root(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|_| fibra::spawn(async move { kernels::mandelbrot(size) }))
            .collect();
        crate::exec::fibra_join_sum(handles).await
    })
    .await
}

/// `random`: process `i` sorts `values` numbers seeded by `i + 1` and
/// returns the middle one; the root waits for them in turn.
pub async fn random(tasks: u64, values: u64) -> u64 {
    root(async move {
        let handles: Vec<_> = (1..=tasks)
            .map(|seed| fibra::spawn(async move { kernels::random_middle(seed, values) }))
            .collect();
        crate::exec::fibra_join_sum(handles).await
    })
    .await
}

enum Count {
    Add(u64),
    Get(Addr<u64>),
}

/// `count`: the root sends `messages` numbers to a counter, then asks it
/// for the total.
pub async fn count(messages: u64) -> u64 {
    root(async move {
        let counter = fibra::spawn_actor(|mut mb: Mailbox<Count>| async move {
            let mut total = 0;
            loop {
                match recv(&mut mb).await {
                    Count::Add(n) => total += n,
                    Count::Get(reply) => {
                        send(&reply, total);
                        return;
                    }
                }
            }
        });
        for i in 0..messages {
            send(&counter, Count::Add(i));
        }
        let (me, mut inbox) = mailbox();
        send(&counter, Count::Get(me));
        recv(&mut inbox).await
    })
    .await
}

/// `fjcreate`: the root creates `actors` processes and sends each one
/// message; each answers it and ends.
pub async fn fjcreate(actors: u64) -> u64 {
    root(async move {
        let (done, mut results) = mailbox::<u64>();
        for i in 0..actors {
            let done = done.clone();
            let actor = fibra::spawn_actor(move |mut mb: Mailbox<u64>| async move {
                send(&done, recv(&mut mb).await);
            });
            send(&actor, i);
        }
        let mut total = 0;
        for _ in 0..actors {
            total += recv(&mut results).await;
        }
        total
    })
    .await
}

/// `fjthrput`: the root sends `messages` messages to each of `actors`
/// processes, round-robin; each reports the sum of what it took.
pub async fn fjthrput(actors: u64, messages: u64) -> u64 {
    root(async move {
        let (done, mut results) = mailbox::<u64>();
        let workers: Vec<Addr<u64>> = (0..actors)
            .map(|_| {
                let done = done.clone();
                fibra::spawn_actor(move |mut mb: Mailbox<u64>| async move {
                    let mut sum = 0;
                    for _ in 0..messages {
                        sum += recv(&mut mb).await;
                    }
                    send(&done, sum);
                })
            })
            .collect();
        for m in 0..messages {
            for worker in &workers {
                send(worker, m);
            }
        }
        let mut total = 0;
        for _ in 0..actors {
            total += recv(&mut results).await;
        }
        total
    })
    .await
}

enum Big {
    Ping(u32),
    Pong,
    Exit,
}

/// `big`: each of `actors` processes pings a pseudo-random process (and
/// waits for its pong) `pings` times, answering others' pings meanwhile;
/// the root stops them all once every one is done.
pub async fn big(actors: u64, pings: u64) -> u64 {
    root(async move {
        let (done, mut results) = mailbox::<u64>();
        let (addrs, boxes) = mailboxes::<Big>(actors);
        for (me, mut mb) in boxes.into_iter().enumerate() {
            let (addrs, done) = (addrs.clone(), done.clone());
            fibra::spawn(async move {
                let mut x = me as u64 + 1;
                let ping = |x: &mut u64| {
                    send(&addrs[lcg_target(x, actors)], Big::Ping(me as u32));
                };
                ping(&mut x);
                let mut answered = 0;
                loop {
                    match recv(&mut mb).await {
                        Big::Ping(from) => send(&addrs[from as usize], Big::Pong),
                        Big::Pong => {
                            answered += 1;
                            if answered < pings {
                                ping(&mut x);
                            } else {
                                send(&done, answered);
                            }
                        }
                        Big::Exit => return,
                    }
                }
            });
        }
        let mut total = 0;
        for _ in 0..actors {
            total += recv(&mut results).await;
        }
        for addr in addrs.iter() {
            send(addr, Big::Exit);
        }
        total
    })
    .await
}

/// `fib`: a process per call of the naive recursive fib; each sends its
/// value to its parent.
pub async fn fib(n: u64) -> u64 {
    fn spawn_fib(n: u64, parent: Addr<u64>) {
        fibra::spawn_actor(move |mut mb: Mailbox<u64>| async move {
            if n < 2 {
                send(&parent, n);
            } else {
                spawn_fib(n - 1, mb.addr());
                spawn_fib(n - 2, mb.addr());
                let sum = recv(&mut mb).await + recv(&mut mb).await;
                send(&parent, sum);
            }
        });
    }
    root(async move {
        let (me, mut inbox) = mailbox();
        spawn_fib(n, me);
        recv(&mut inbox).await
    })
    .await
}
