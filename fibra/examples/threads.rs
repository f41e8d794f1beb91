//! fibra between plain OS threads: blocking sends and receives, a blocking
//! `select!` with a timeout, and a thread talking to a task on fibra's
//! runtime (the same channel, awaited on one side, blocking on the other).
//!
//! `cargo run -p fibra --example threads`

use std::process::ExitCode;
use std::thread;
use std::time::Duration;

use fibra::{Runtime, bounded, channel, select_blocking, time::after};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("threads example failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    // 1. Four producer threads, one consumer thread, one bounded channel.
    let (tx, rx) = bounded::<u64>(16);
    let producers: Vec<_> = (0..4u64)
        .map(|p| {
            let tx = tx.clone();
            thread::spawn(move || {
                for i in 0..250 {
                    tx.send_blocking(p * 1000 + i)
                        .expect("the consumer is gone");
                }
            })
        })
        .collect();
    drop(tx); // the producers hold the only senders left
    let consumer = thread::spawn(move || {
        let mut count = 0u64;
        let mut sum = 0u64;
        while let Ok(v) = rx.recv_blocking() {
            count += 1;
            sum += v;
        }
        (count, sum)
    });
    for p in producers {
        p.join().map_err(|_| "a producer panicked")?;
    }
    let (count, sum) = consumer.join().map_err(|_| "the consumer panicked")?;
    let expected: u64 = (0..4u64)
        .map(|p| (0..250).map(|i| p * 1000 + i).sum::<u64>())
        .sum();
    println!("4 threads → 1 thread: {count} messages, sum {sum}");
    if (count, sum) != (1000, expected) {
        return Err(format!("expected 1000 messages summing to {expected}"));
    }

    // 2. A blocking select on a thread: two channels and a timeout.
    let (fast_tx, fast) = channel::<&str>();
    let (_slow_tx, slow) = channel::<&str>(); // never sent on
    let sender = thread::spawn(move || fast_tx.send_blocking("fast").is_ok());
    let mut got = Vec::new();
    loop {
        select_blocking! {
            m = fast.recv_op() => match m {
                Ok(m) => got.push(m),
                Err(_closed) => break,
            },
            m = slow.recv_op() => got.push(m.map_err(|_| "slow closed")?),
            () = after(Duration::from_secs(5)) => return Err("timed out".into()),
        }
    }
    if !sender.join().map_err(|_| "the sender panicked")? || got != ["fast"] {
        return Err(format!("blocking select got {got:?}"));
    }
    println!("blocking select on a thread: got {got:?}, then the channel closed");

    // 3. A thread and a task on fibra's runtime share a rendezvous channel:
    //    the task awaits, the thread blocks.
    let rt = Runtime::new().map_err(|e| e.to_string())?;
    let (to_task, from_thread) = channel::<u64>();
    let (to_thread, from_task) = channel::<u64>();
    let task = rt.handle().spawn(async move {
        while let Ok(n) = from_thread.recv().await {
            if to_thread.send(n + 1).await.is_err() {
                break;
            }
        }
    });
    let mut n = 0;
    for _ in 0..100 {
        to_task.send_blocking(n).map_err(|_| "the task is gone")?;
        n = from_task.recv_blocking().map_err(|_| "the task is gone")?;
    }
    drop(to_task); // the task's receive fails: it returns
    rt.block_on(task).map_err(|e| e.to_string())?;
    println!("100 round trips between a thread and a fibra task: n = {n}");
    if n != 100 {
        return Err(format!("expected 100, got {n}"));
    }
    Ok(())
}
