//! A pipeline with cancellation: numbers → squares → a collector, each
//! stage its own task. The first two stages would run forever; a quit
//! channel stops them. Every stage `select!`s between its work and the quit
//! channel, and dropping the quit channel's only sender wakes them all (Go's
//! `close(done)`).
//!
//! `cargo run -p fibra --example pipeline`

use std::process::ExitCode;

use fibra::{Receiver, Sender, bounded, channel, select, spawn};

/// Sends 0, 1, 2, … until quit; returns how many it sent.
async fn numbers(out: Sender<u64>, quit: Receiver<()>) -> u64 {
    let mut n = 0;
    loop {
        select! {
            sent = out.send_op(n) => {
                if sent.is_err() {
                    return n; // the next stage is gone
                }
                n += 1;
            }
            _ = quit.recv_op() => return n,
        }
    }
}

/// Squares what it receives until quit; returns how many it forwarded.
async fn squares(input: Receiver<u64>, out: Sender<u64>, quit: Receiver<()>) -> u64 {
    let mut forwarded = 0;
    loop {
        // Wait for a number or quit, then for room downstream or quit:
        // a stage blocked on either side still sees the quit.
        let n = select! {
            n = input.recv_op() => match n {
                Ok(n) => n,
                Err(_closed) => return forwarded,
            },
            _ = quit.recv_op() => return forwarded,
        };
        select! {
            sent = out.send_op(n * n) => {
                if sent.is_err() {
                    return forwarded;
                }
                forwarded += 1;
            }
            _ = quit.recv_op() => return forwarded,
        }
    }
}

fn main() -> ExitCode {
    const WANTED: usize = 10;
    let outcome = fibra::run(async {
        let (quit_tx, quit) = channel::<()>(); // never sent on: dropped to cancel
        let (numbers_tx, numbers_rx) = bounded(4);
        let (squares_tx, squares_rx) = bounded(4);
        let first = spawn(numbers(numbers_tx, quit.clone()));
        let second = spawn(squares(numbers_rx, squares_tx, quit.clone()));

        let mut got = Vec::new();
        while got.len() < WANTED {
            got.push(
                squares_rx
                    .recv()
                    .await
                    .map_err(|_| "the pipeline ended early")?,
            );
        }
        println!("collected {got:?}");

        // Cancel: both stages are blocked (full channels); the drop wakes them.
        drop(quit_tx);
        let sent = first.await.map_err(|e| format!("numbers: {e}"))?;
        let forwarded = second.await.map_err(|e| format!("squares: {e}"))?;
        println!("cancelled: numbers sent {sent}, squares forwarded {forwarded}");

        let expected: Vec<u64> = (0..WANTED as u64).map(|n| n * n).collect();
        if got != expected {
            return Err(format!("expected {expected:?}"));
        }
        // What each stage passed on is either collected or still buffered
        // between the stages (bounded(4) each): nothing else went missing.
        let buffered = squares_rx.len() as u64;
        if forwarded != WANTED as u64 + buffered || sent < forwarded {
            return Err(format!(
                "counts do not add up: sent {sent}, forwarded {forwarded}, buffered {buffered}"
            ));
        }
        Ok::<_, String>(())
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pipeline example failed: {e}");
            ExitCode::FAILURE
        }
    }
}
