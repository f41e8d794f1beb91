//! The computations the actor workloads share with their peers, written so
//! that every language gets the same numbers: the same floating-point
//! operations in the same order (mandelbrot), the same 31-bit linear
//! congruential generator (random, big).

/// Iterations of the Mandelbrot loop at most.
pub const MAX_ITERATIONS: u64 = 255;

/// The Mandelbrot loop's iterations summed over an `size` x `size` image of
/// [-2, 1] x [-1.5, 1.5]: pixel (x, y) is c = (3x/size - 2, 3y/size - 1.5),
/// iterated from z = 0 while |z|^2 <= 4, at most [`MAX_ITERATIONS`] times.
pub fn mandelbrot(size: u64) -> u64 {
    let s = size as f64;
    let mut total = 0;
    for y in 0..size {
        let ci = y as f64 * 3.0 / s - 1.5;
        for x in 0..size {
            let cr = x as f64 * 3.0 / s - 2.0;
            let (mut zr, mut zi) = (0.0f64, 0.0f64);
            let mut i = 0;
            while i < MAX_ITERATIONS && zr * zr + zi * zi <= 4.0 {
                let next_zr = zr * zr - zi * zi + cr;
                zi = 2.0 * zr * zi + ci;
                zr = next_zr;
                i += 1;
            }
            total += i;
        }
    }
    total
}

/// The next value of the 31-bit linear congruential generator
/// (x * 1103515245 + 12345 mod 2^31; C's classic `rand`).
pub fn lcg(x: u64) -> u64 {
    (x * 1_103_515_245 + 12_345) & 0x7fff_ffff
}

/// Advances `x` with [`lcg`] and picks one of `n` processes with it
/// (`big`'s random neighbour).
pub fn lcg_target(x: &mut u64, n: u64) -> usize {
    *x = lcg(*x);
    (*x % n) as usize
}

/// Writers, and listeners, per `hackbench` group.
pub const GROUP: u64 = 20;

/// `random`'s task `seed`: `values` numbers from [`lcg`] starting at
/// `seed`, sorted, split in two halves; the first of the second half.
pub fn random_middle(seed: u64, values: u64) -> u64 {
    let mut x = seed;
    let mut numbers: Vec<u64> = (0..values)
        .map(|_| {
            x = lcg(x);
            x
        })
        .collect();
    numbers.sort_unstable();
    let (_, upper) = numbers.split_at(numbers.len() / 2);
    upper.first().copied().unwrap_or(0)
}

/// What `random` with `tasks` tasks returns: the sum of
/// [`random_middle`] over seeds 1..=tasks (a selection, not a sort, so
/// that building the rows stays cheap).
pub fn random_expected(tasks: u64, values: u64) -> u64 {
    (1..=tasks)
        .map(|seed| {
            let mut x = seed;
            let mut numbers: Vec<u64> = (0..values)
                .map(|_| {
                    x = lcg(x);
                    x
                })
                .collect();
            let middle = numbers.len() / 2;
            if numbers.is_empty() {
                0
            } else {
                *numbers.select_nth_unstable(middle).1
            }
        })
        .sum()
}

/// fib(n) with fib(0) = 0, fib(1) = 1.
pub fn fib(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// Calls of the naive recursive fib(n) (an actor each in Savina's `fib`).
pub fn fib_calls(n: u64) -> u64 {
    2 * fib(n + 1) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_expected_agrees_with_sorting() {
        for values in [1, 2, 7, 1000] {
            let sorted: u64 = (1..=3).map(|seed| random_middle(seed, values)).sum();
            assert_eq!(random_expected(3, values), sorted, "values={values}");
        }
    }

    #[test]
    fn fib_and_its_calls() {
        assert_eq!(fib(10), 55);
        assert_eq!(fib_calls(0), 1);
        assert_eq!(fib_calls(2), 3);
        assert_eq!(fib_calls(10), 177);
    }

    #[test]
    fn mandelbrot_counts_every_pixel() {
        // c = -2 (pixel (0, size/2)) stays in the set: 255 iterations.
        assert!(mandelbrot(2) >= MAX_ITERATIONS);
        assert!(mandelbrot(8) <= 64 * MAX_ITERATIONS);
    }
}
