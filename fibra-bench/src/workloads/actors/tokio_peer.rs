//! The actor workloads on tokio: a process is a task, its inbox an
//! unbounded `mpsc` channel (tokio's only queue whose sends never wait, like
//! a mailbox's), results come back to the root through an inbox too.

use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::kernels;
use super::kernels::{GROUP, lcg_target};

async fn root<F>(body: F) -> u64
where
    F: Future<Output = u64> + Send + 'static,
{
    tokio::spawn(body).await.expect("tokio: root task failed")
}

fn send<M>(to: &UnboundedSender<M>, msg: M) {
    assert!(to.send(msg).is_ok(), "tokio: a process ended too early");
}

async fn recv<M>(inbox: &mut UnboundedReceiver<M>) -> M {
    inbox.recv().await.expect("tokio: every sender is gone")
}

type Inboxes<M> = (Arc<Vec<UnboundedSender<M>>>, Vec<UnboundedReceiver<M>>);

fn inboxes<M>(n: u64) -> Inboxes<M> {
    let (addrs, boxes): (Vec<_>, Vec<_>) = (0..n).map(|_| unbounded_channel()).unzip();
    (Arc::new(addrs), boxes)
}

async fn collect(results: &mut UnboundedReceiver<u64>, n: u64) -> u64 {
    let mut total = 0;
    for _ in 0..n {
        total += recv(results).await;
    }
    total
}

enum Bang {
    Ping(u32),
    Pong,
}

pub async fn big_bang(n: u64) -> u64 {
    root(async move {
        let (done, mut results) = unbounded_channel();
        let (addrs, boxes) = inboxes::<Bang>(n);
        for (me, mut inbox) in boxes.into_iter().enumerate() {
            let (addrs, done) = (addrs.clone(), done.clone());
            tokio::spawn(async move {
                for (other, addr) in addrs.iter().enumerate() {
                    if other != me {
                        send(addr, Bang::Ping(me as u32));
                    }
                }
                let (mut pings, mut pongs) = (0, 0);
                while pings + 1 < n || pongs + 1 < n {
                    match recv(&mut inbox).await {
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
        collect(&mut results, n).await
    })
    .await
}

pub async fn hackbench(groups: u64, messages: u64) -> u64 {
    root(async move {
        let (done, mut results) = unbounded_channel();
        for _ in 0..groups {
            let (listeners, boxes) = inboxes::<u64>(GROUP);
            for mut inbox in boxes {
                let done = done.clone();
                tokio::spawn(async move {
                    let mut sum = 0;
                    for _ in 0..GROUP * messages {
                        sum += recv(&mut inbox).await;
                    }
                    send(&done, sum);
                });
            }
            for _ in 0..GROUP {
                let listeners = listeners.clone();
                tokio::spawn(async move {
                    for m in 0..messages {
                        for listener in listeners.iter() {
                            send(listener, m);
                        }
                    }
                });
            }
        }
        collect(&mut results, groups * GROUP).await
    })
    .await
}

pub async fn mandelbrot(size: u64, tasks: u64) -> u64 {
    root(async move {
        let handles: Vec<_> = (0..tasks)
            .map(|_| tokio::spawn(async move { kernels::mandelbrot(size) }))
            .collect();
        crate::exec::tokio_join_sum(handles).await
    })
    .await
}

pub async fn random(tasks: u64, values: u64) -> u64 {
    root(async move {
        let handles: Vec<_> = (1..=tasks)
            .map(|seed| tokio::spawn(async move { kernels::random_middle(seed, values) }))
            .collect();
        crate::exec::tokio_join_sum(handles).await
    })
    .await
}

enum Count {
    Add(u64),
    Get(UnboundedSender<u64>),
}

pub async fn count(messages: u64) -> u64 {
    root(async move {
        let (counter, mut inbox) = unbounded_channel();
        tokio::spawn(async move {
            let mut total = 0;
            loop {
                match recv(&mut inbox).await {
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
        let (me, mut reply) = unbounded_channel();
        send(&counter, Count::Get(me));
        recv(&mut reply).await
    })
    .await
}

pub async fn fjcreate(actors: u64) -> u64 {
    root(async move {
        let (done, mut results) = unbounded_channel();
        for i in 0..actors {
            let done = done.clone();
            let (actor, mut inbox) = unbounded_channel();
            tokio::spawn(async move {
                send(&done, recv(&mut inbox).await);
            });
            send(&actor, i);
        }
        collect(&mut results, actors).await
    })
    .await
}

pub async fn fjthrput(actors: u64, messages: u64) -> u64 {
    root(async move {
        let (done, mut results) = unbounded_channel();
        let workers: Vec<UnboundedSender<u64>> = (0..actors)
            .map(|_| {
                let done = done.clone();
                let (worker, mut inbox) = unbounded_channel();
                tokio::spawn(async move {
                    let mut sum = 0;
                    for _ in 0..messages {
                        sum += recv(&mut inbox).await;
                    }
                    send(&done, sum);
                });
                worker
            })
            .collect();
        for m in 0..messages {
            for worker in &workers {
                send(worker, m);
            }
        }
        collect(&mut results, actors).await
    })
    .await
}

enum Big {
    Ping(u32),
    Pong,
    Exit,
}

pub async fn big(actors: u64, pings: u64) -> u64 {
    root(async move {
        let (done, mut results) = unbounded_channel();
        let (addrs, boxes) = inboxes::<Big>(actors);
        for (me, mut inbox) in boxes.into_iter().enumerate() {
            let (addrs, done) = (addrs.clone(), done.clone());
            tokio::spawn(async move {
                let mut x = me as u64 + 1;
                let ping = |x: &mut u64| {
                    send(&addrs[lcg_target(x, actors)], Big::Ping(me as u32));
                };
                ping(&mut x);
                let mut answered = 0;
                loop {
                    match recv(&mut inbox).await {
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
        let total = collect(&mut results, actors).await;
        for addr in addrs.iter() {
            send(addr, Big::Exit);
        }
        total
    })
    .await
}

pub async fn fib(n: u64) -> u64 {
    fn spawn_fib(n: u64, parent: UnboundedSender<u64>) {
        tokio::spawn(async move {
            if n < 2 {
                send(&parent, n);
            } else {
                let (me, mut inbox) = unbounded_channel();
                spawn_fib(n - 1, me.clone());
                spawn_fib(n - 2, me);
                let sum = recv(&mut inbox).await + recv(&mut inbox).await;
                send(&parent, sum);
            }
        });
    }
    root(async move {
        let (me, mut inbox) = unbounded_channel();
        spawn_fib(n, me);
        recv(&mut inbox).await
    })
    .await
}
