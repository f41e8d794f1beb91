//! fibra's channels for a [`Shape`], shared by the rows on fibra's runtime
//! and on OS threads.

use super::shape::Shape;

/// A fibra channel of the shape's capacity (0: rendezvous).
pub fn channel(shape: Shape) -> (fibra::Sender<u64>, fibra::Receiver<u64>) {
    match shape.capacity() {
        0 => fibra::channel(),
        capacity => fibra::bounded(capacity),
    }
}

/// `C` fibra channels of the shape's capacity, as arrays (a choice over an
/// array allocates nothing).
pub fn channels<const C: usize>(
    shape: Shape,
) -> ([fibra::Sender<u64>; C], [fibra::Receiver<u64>; C]) {
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..C).map(|_| channel(shape)).unzip();
    let txs = txs.try_into().unwrap_or_else(|_| unreachable!("C senders"));
    let rxs = rxs
        .try_into()
        .unwrap_or_else(|_| unreachable!("C receivers"));
    (txs, rxs)
}
