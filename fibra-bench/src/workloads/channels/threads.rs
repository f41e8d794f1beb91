//! The OS threads of a run on threads (`fibra-threads`, `crossbeam`,
//! `flume-threads`), placed as in crossbeam-channel's benchmark.

use std::thread;

use super::shape::Shape;

/// Runs the shape's producers and consumers on scoped threads and returns
/// the sum of what the consumers return. `produce(i, n)` is producer `i`,
/// sending `0..n`; `consume(n)` a consumer taking `n` values. A single
/// consumer runs on the calling thread; otherwise it only joins.
pub fn sides(
    shape: Shape,
    produce: impl Fn(usize, u64) + Sync,
    consume: impl Fn(u64) -> u64 + Sync,
) -> u64 {
    let (produce, consume) = (&produce, &consume);
    thread::scope(|s| {
        for i in 0..shape.producers() as usize {
            s.spawn(move || produce(i, shape.per_producer()));
        }
        if shape.consumers() == 1 {
            return consume(shape.messages);
        }
        let consumers: Vec<_> = (0..shape.consumers())
            .map(|_| s.spawn(move || consume(shape.per_consumer())))
            .collect();
        consumers
            .into_iter()
            .map(|c| c.join().expect("consumer thread panicked"))
            .sum()
    })
}
