//! loom models of local tasks: a `LocalSet` task woken from another
//! thread, and `Runtime::block_on_local`'s future woken from another
//! thread while the current-thread worker goes to sleep (the root waker's
//! flag against the idle protocol). Run with
//! `RUSTFLAGS="--cfg loom" cargo test -p fibra --release --lib loom_rt_local`.

use super::{LocalSet, Runtime, spawn_local};
use crate::bounded;
use crate::loom::{model, thread};

#[test]
fn loom_rt_local_task_woken_from_another_thread() {
    // The wake may come before the task's first poll, during it, or after
    // the driver went idle: the task runs again each time it must, and the
    // value arrives once.
    model(|| {
        let (tx, rx) = bounded::<u32>(1);
        let t = thread::spawn(move || tx.send_blocking(5).unwrap());
        let local = LocalSet::new();
        let got = crate::block_on(
            local.run_until(async { spawn_local(async move { rx.recv().await }).await.unwrap() }),
        );
        assert_eq!(got, Ok(5));
        t.join().unwrap();
    });
}

#[test]
fn loom_rt_local_block_on_local_woken_from_another_thread() {
    // The root future of a current-thread `block_on_local` waits for a
    // value sent from another thread while the worker (the calling thread)
    // searches, registers as a sleeper and parks: the wake is never lost.
    model(|| {
        let rt = Runtime::builder().current_thread().build().unwrap();
        let (tx, rx) = bounded::<u32>(1);
        let t = thread::spawn(move || tx.send_blocking(7).unwrap());
        let got = rt.block_on_local(async { rx.recv().await });
        assert_eq!(got, Ok(7));
        t.join().unwrap();
    });
}
