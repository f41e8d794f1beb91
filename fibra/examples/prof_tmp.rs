use std::time::Instant;
fn main() {
    let what = std::env::args().nth(1).unwrap_or_default();
    let rt = if std::env::var("CT").is_ok() {
        fibra::Runtime::builder().current_thread().build().unwrap()
    } else {
        fibra::Runtime::builder().build().unwrap()
    };
    for _ in 0..5 {
        if what == "spawn" {
            let t = Instant::now();
            let n: u64 = std::env::var("N")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(200_000);
            let s = rt.block_on(async move {
                let hs: Vec<_> = (0..n).map(|i| fibra::spawn(async move { i })).collect();
                let mut s = 0;
                for h in hs {
                    s += h.await.unwrap();
                }
                s
            });
            assert_eq!(s, n * (n - 1) / 2);
            println!(
                "spawn-join: {:.0} ns/task",
                t.elapsed().as_secs_f64() * 1e9 / n as f64
            );
        } else {
            let n: u64 = std::env::var("N")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(500_000);
            let e = rt.block_on(async move {
                let (tx, rx) = fibra::channel::<u64>();
                let (tx2, rx2) = fibra::channel::<u64>();
                let h = fibra::spawn(async move {
                    while let Ok(v) = rx.recv().await {
                        if tx2.send(v + 1).await.is_err() {
                            break;
                        }
                    }
                });
                let t = Instant::now();
                for i in 0..n {
                    tx.send(i).await.unwrap();
                    assert_eq!(rx2.recv().await.unwrap(), i + 1);
                }
                let e = t.elapsed().as_secs_f64();
                drop(tx);
                h.await.unwrap();
                e
            });
            println!("ping-pong: {:.0} ns/rt", e * 1e9 / n as f64);
        }
    }
}
