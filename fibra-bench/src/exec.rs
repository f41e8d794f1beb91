//! Execution contexts for in-process rows: plain OS threads and tokio
//! runtimes. Each helper turns "do the work once" into a [`Runner`] whose
//! untimed setup builds the context once per row.

use std::future::Future;

use crate::case::{RunFn, Runner};

/// Worker threads of the multi-thread tokio runtime (the machine has 2 cores).
pub const TOKIO_MT_WORKERS: usize = 2;

/// A row whose run spawns and joins its own OS threads.
pub fn on_threads(run: impl FnMut() -> u64 + 'static) -> Runner {
    Runner::InProcess(Box::new(move || Box::new(run) as RunFn))
}

/// A row run by `block_on(make())` on a tokio current-thread runtime built
/// once for the row.
pub fn on_tokio_ct<F, Fut>(make: F) -> Runner
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = u64>,
{
    Runner::InProcess(Box::new(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("build tokio current-thread runtime");
        Box::new(move || rt.block_on(make())) as RunFn
    }))
}

/// A row run by `block_on(make())` on a tokio multi-thread runtime with
/// [`TOKIO_MT_WORKERS`] workers, built once for the row. The future should
/// spawn its tasks (the `block_on` thread is not a worker) and await them.
pub fn on_tokio_mt<F, Fut>(make: F) -> Runner
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = u64>,
{
    Runner::InProcess(Box::new(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(TOKIO_MT_WORKERS)
            .build()
            .expect("build tokio multi-thread runtime");
        Box::new(move || rt.block_on(make())) as RunFn
    }))
}
