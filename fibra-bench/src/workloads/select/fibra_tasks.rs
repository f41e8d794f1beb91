//! `select-channels` and `select-overlap` on fibra tasks on fibra's runtime.

use std::array;

use fibra::{Op, Receiver, Sender, choose, choose_biased};

use super::fibra_channels::fibra_channels;
use super::shape::{Shape, Variant, bad_clauses};
use crate::exec::fibra_join_sum;

/// One `select-channels` run.
pub async fn select(shape: Shape) -> u64 {
    match shape.clauses {
        2 => select_c::<2>(shape).await,
        4 => select_c::<4>(shape).await,
        8 => select_c::<8>(shape).await,
        16 => select_c::<16>(shape).await,
        other => bad_clauses(other),
    }
}

async fn select_c<const C: usize>(shape: Shape) -> u64 {
    let (txs, rxs) = fibra_channels::<C>(shape.variant.capacity());
    let mut handles = Vec::new();
    for _ in 0..shape.consumers {
        let rxs = rxs.clone();
        let n = shape.per_consumer();
        handles.push(fibra::spawn(consumer(rxs, n, shape.variant)));
    }
    for _ in 0..shape.producers {
        let txs = txs.clone();
        let n = shape.per_producer();
        handles.push(fibra::spawn(async move {
            producer(txs, n, shape.variant).await;
            0
        }));
    }
    drop(rxs);
    // The senders stay open until every consumer is done: a closed,
    // empty channel would be a ready clause (`Err`) in the consumers'
    // choice while values still wait in the other channels' buffers.
    let sum = fibra_join_sum(handles).await;
    drop(txs);
    sum
}

/// Sends `0..n`, each over whichever of the channels is ready first.
async fn producer<const C: usize>(txs: [Sender<u64>; C], n: u64, variant: Variant) {
    for v in 0..n {
        let ops = || choose(array::from_fn::<_, C, _>(|i| txs[i].send_op(v)));
        let sent = match variant {
            Variant::Blocking => ops().await,
            Variant::Else => loop {
                if let Ok(sent) = ops().try_perform() {
                    break sent;
                }
                fibra::yield_now().await;
            },
        };
        assert!(sent.is_ok(), "fibra: consumers gone");
    }
}

/// Takes `n` values from whichever channels are ready; returns their sum.
async fn consumer<const C: usize>(rxs: [Receiver<u64>; C], n: u64, variant: Variant) -> u64 {
    let mut sum = 0;
    for _ in 0..n {
        let ops = || choose(array::from_fn::<_, C, _>(|i| rxs[i].recv_op()));
        let got = match variant {
            Variant::Blocking => ops().await,
            Variant::Else => loop {
                if let Ok(got) = ops().try_perform() {
                    break got;
                }
                fibra::yield_now().await;
            },
        };
        sum += got.expect("fibra: producers gone");
    }
    sum
}

/// One `select-overlap` run.
pub async fn overlap(messages: u64) -> u64 {
    let half = messages / 2;
    let (a_tx, a_rx) = fibra::channel::<u64>();
    let (b_tx, b_rx) = fibra::channel::<u64>();
    let b_tx2 = b_tx.clone();
    let b_rx2 = b_rx.clone();
    let c1 = fibra::spawn(async move {
        let (mut a_open, mut b_open) = (true, true);
        let mut sum = 0;
        while a_open || b_open {
            let got = if a_open && b_open {
                choose_biased((
                    a_rx.recv_op().wrap(|r| (0, r)),
                    b_rx.recv_op().wrap(|r| (1, r)),
                ))
                .await
            } else if a_open {
                (0, a_rx.recv().await)
            } else {
                (1, b_rx.recv().await)
            };
            match got {
                (_, Ok(v)) => sum += v,
                (0, Err(_)) => a_open = false,
                (_, Err(_)) => b_open = false,
            }
        }
        sum
    });
    let c2 = fibra::spawn(async move {
        let mut sum = 0;
        while let Ok(v) = b_rx2.recv().await {
            sum += v;
        }
        sum
    });
    let p1 = fibra::spawn(async move {
        for v in 0..half {
            let sent = choose_biased((a_tx.send_op(v), b_tx.send_op(v))).await;
            assert!(sent.is_ok(), "fibra: consumers gone");
        }
        0
    });
    let p2 = fibra::spawn(async move {
        for v in half..messages {
            assert!(b_tx2.send(v).await.is_ok(), "fibra: consumers gone");
        }
        0
    });
    fibra_join_sum([p1, p2, c1, c2]).await
}
