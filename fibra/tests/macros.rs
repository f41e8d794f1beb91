//! `#[fibra::main]` and `#[fibra::test]`: what they expand to runs on the
//! flavour asked for, returns the body's output, and keeps other attributes.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The name of the current thread: fibra's workers are `fibra-worker-N`.
fn thread_name() -> String {
    std::thread::current().name().unwrap_or("").to_string()
}

#[fibra::test]
async fn current_thread_by_default() {
    // The body runs on the test's own thread (named after the test).
    assert!(thread_name().contains("current_thread_by_default"));
    let (tx, rx) = fibra::channel::<u32>();
    let h = fibra::spawn(async move { rx.recv().await.unwrap() * 2 });
    tx.send(21).await.unwrap();
    assert_eq!(h.await.unwrap(), 42);
}

#[fibra::test(flavor = "multi_thread", workers = 2)]
async fn multi_thread_with_workers() {
    assert!(thread_name().starts_with("fibra-worker-"));
    let seen = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let mut hs = Vec::new();
    for _ in 0..8 {
        let seen = seen.clone();
        hs.push(fibra::spawn(async move {
            seen.lock().unwrap().insert(thread_name());
        }));
    }
    for h in hs {
        h.await.unwrap();
    }
    let seen = seen.lock().unwrap();
    assert!(
        seen.iter()
            .all(|n| n == "fibra-worker-0" || n == "fibra-worker-1"),
        "{seen:?}"
    );
}

#[fibra::test(flavor = "multi_thread", worker_threads = 1)]
async fn worker_threads_is_an_alias() {
    assert_eq!(thread_name(), "fibra-worker-0");
}

#[fibra::test]
async fn returns_a_result() -> Result<(), fibra::RecvError> {
    let (tx, rx) = fibra::bounded::<u8>(1);
    tx.send(1).await.unwrap();
    assert_eq!(rx.recv().await?, 1);
    drop(tx);
    // `?` in the body converts as in any function returning `Result`.
    let closed = async { rx.recv().await }.await;
    assert_eq!(closed, Err(fibra::RecvError));
    Ok(())
}

#[fibra::test]
#[should_panic(expected = "inside the body")]
async fn other_attributes_are_kept() {
    panic!("inside the body");
}

static RAN: AtomicUsize = AtomicUsize::new(0);

#[fibra::main(flavor = "current_thread", crate = "fibra")]
async fn entry_point() -> usize {
    RAN.fetch_add(1, Ordering::Relaxed);
    fibra::spawn(async { 40 }).await.unwrap() + 2
}

#[fibra::main]
async fn early_return() -> u8 {
    if RAN.load(Ordering::Relaxed) < 100 {
        return 1;
    }
    2
}

#[test]
fn main_runs_the_body_and_returns_its_output() {
    assert_eq!(entry_point(), 42);
    assert_eq!(RAN.load(Ordering::Relaxed), 1);
    assert_eq!(early_return(), 1);
}
