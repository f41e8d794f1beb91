//! fibra's channels for a parameter set, shared by the rows on fibra's
//! runtime and on OS threads.

/// A fibra channel of `capacity` (0: rendezvous).
pub fn fibra_channel(capacity: usize) -> (fibra::Sender<u64>, fibra::Receiver<u64>) {
    if capacity == 0 {
        fibra::channel()
    } else {
        fibra::bounded(capacity)
    }
}

/// `clauses` fibra channels of `capacity`, as arrays.
pub fn fibra_channels<const C: usize>(
    capacity: usize,
) -> ([fibra::Sender<u64>; C], [fibra::Receiver<u64>; C]) {
    let mut txs = Vec::with_capacity(C);
    let mut rxs = Vec::with_capacity(C);
    for _ in 0..C {
        let (tx, rx) = fibra_channel(capacity);
        txs.push(tx);
        rxs.push(rx);
    }
    let txs = txs.try_into().unwrap_or_else(|_| unreachable!("C senders"));
    let rxs = rxs
        .try_into()
        .unwrap_or_else(|_| unreachable!("C receivers"));
    (txs, rxs)
}
