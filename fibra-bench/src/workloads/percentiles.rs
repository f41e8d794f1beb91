//! Latency samples and the percentiles the `wake-latency` and `timers` rows
//! report as their figures (`p50_us`, `p99_us`).

use std::time::Duration;

/// The figures a row of latencies reports (see [`Latencies::figures`]).
pub const MEASURED: &[&str] = &["p50_us", "p99_us"];

/// Latencies of one run, in the order they were taken.
#[derive(Debug, Default)]
pub struct Latencies(Vec<Duration>);

impl Latencies {
    /// Room for `n` samples, allocated before the timed work starts.
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    /// Adds one sample.
    pub fn push(&mut self, latency: Duration) {
        self.0.push(latency);
    }

    /// The nearest-rank `p`-th percentile (`0 < p <= 100`) in microseconds:
    /// the smallest sample with at least `p`% of the samples at or below it.
    /// 0 without samples.
    pub fn percentile_us(&self, p: f64) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort_unstable();
        let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
        sorted
            .get(rank.clamp(1, sorted.len().max(1)) - 1)
            .map_or(0.0, |d| d.as_secs_f64() * 1e6)
    }

    /// `p50_us` and `p99_us`, for the line a child prints.
    pub fn figures(&self) -> [(&'static str, f64); 2] {
        [
            (MEASURED[0], self.percentile_us(50.0)),
            (MEASURED[1], self.percentile_us(99.0)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut l = Latencies::with_capacity(100);
        for us in (1..=100).rev() {
            l.push(Duration::from_micros(us));
        }
        assert_eq!(l.percentile_us(50.0), 50.0);
        assert_eq!(l.percentile_us(99.0), 99.0);
        assert_eq!(l.percentile_us(100.0), 100.0);
        assert_eq!(l.figures(), [("p50_us", 50.0), ("p99_us", 99.0)]);
        let mut one = Latencies::default();
        assert_eq!(one.percentile_us(99.0), 0.0);
        one.push(Duration::from_micros(7));
        assert_eq!(one.percentile_us(1.0), 7.0);
        assert_eq!(one.percentile_us(99.0), 7.0);
    }
}
