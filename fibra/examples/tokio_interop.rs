//! fibra inside a `#[tokio::main]` program: fibra's channels and `select!`
//! between tokio tasks, tokio's own `select!` over a fibra receive (nothing
//! is lost when tokio drops the losing branch), and a fibra runtime's task
//! awaited from tokio.
//!
//! `cargo run -p fibra --example tokio_interop`

use std::process::ExitCode;
use std::time::Duration;

use fibra::{Runtime, bounded, select, time::after};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tokio_interop example failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    // 1. A fibra channel between two tokio tasks; fibra's `select!` with a
    //    fibra timeout, all driven by tokio.
    let (tx, rx) = bounded::<u64>(8);
    let producer = tokio::spawn(async move {
        for i in 1..=100 {
            tx.send(i).await.expect("the consumer is gone");
        }
    });
    let consumer = tokio::spawn(async move {
        let mut sum = 0;
        loop {
            select! {
                v = rx.recv_op() => match v {
                    Ok(v) => sum += v,
                    Err(_closed) => return Ok(sum),
                },
                () = after(Duration::from_secs(5)) => return Err("timed out".to_string()),
            }
        }
    });
    producer.await.map_err(|e| e.to_string())?;
    let sum = consumer.await.map_err(|e| e.to_string())??;
    println!("fibra channel between tokio tasks: sum of 1..=100 = {sum}");
    if sum != 5050 {
        return Err(format!("expected 5050, got {sum}"));
    }

    // 2. tokio's `select!` racing a fibra receive against a short tokio
    //    sleep: when the sleep wins, the receive is dropped, and a value
    //    already committed to it goes back to the channel. Every message
    //    arrives exactly once.
    let (tx, rx) = bounded::<u64>(1);
    let sender = tokio::spawn(async move {
        for i in 0..1000 {
            tx.send(i).await.expect("the receiver is gone");
            if i % 7 == 0 {
                tokio::time::sleep(Duration::from_micros(50)).await;
            }
        }
    });
    let (mut received, mut timeouts) = (Vec::new(), 0);
    loop {
        tokio::select! {
            v = rx.recv() => match v {
                Ok(v) => received.push(v),
                Err(_closed) => break,
            },
            () = tokio::time::sleep(Duration::from_micros(20)) => timeouts += 1,
        }
    }
    sender.await.map_err(|e| e.to_string())?;
    println!(
        "tokio::select! over a fibra receive: {} messages in order, {timeouts} receives dropped by a timeout",
        received.len()
    );
    if received != (0..1000).collect::<Vec<u64>>() {
        return Err("messages lost, duplicated or reordered".to_string());
    }

    // 3. A fibra runtime beside tokio: spawn CPU-light tasks on it and await
    //    their handles from tokio.
    let fibra_rt = Runtime::new().map_err(|e| e.to_string())?;
    let handles: Vec<_> = (0..10u64)
        .map(|i| fibra_rt.handle().spawn(async move { i * i }))
        .collect();
    let mut squares = 0;
    for handle in handles {
        squares += handle.await.map_err(|e| e.to_string())?;
    }
    println!("10 tasks on a fibra runtime, awaited from tokio: sum of squares = {squares}");
    if squares != 285 {
        return Err(format!("expected 285, got {squares}"));
    }
    // Shutting a runtime down joins its threads: do it off tokio's workers.
    tokio::task::spawn_blocking(move || drop(fibra_rt))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}
