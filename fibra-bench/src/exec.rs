//! Execution contexts for in-process rows: plain OS threads, tokio runtimes
//! and fibra's own runtime. Each helper turns "do the work once" into a
//! [`Runner`] whose untimed setup builds the context once per row.

use std::future::Future;

use crate::case::{Case, RunFn, Runner, Spec};
use crate::system::System;

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

/// Awaits every tokio task in order and sums what they return; a task that
/// panicked makes the run panic (an error naming the row).
pub async fn tokio_join_sum(
    handles: impl IntoIterator<Item = tokio::task::JoinHandle<u64>>,
) -> u64 {
    let mut sum = 0;
    for handle in handles {
        sum += handle.await.expect("tokio task failed");
    }
    sum
}

/// The rows on fibra's own runtime, in table order: default workers (or
/// `--workers`), 1 worker, current-thread.
pub const FIBRA_RUNTIME_SYSTEMS: [System; 3] = [System::Fibra, System::Fibra1, System::FibraCt];

/// Why the rows on fibra's own runtime are skipped in this build.
#[cfg(not(feature = "fibra-rt"))]
pub const NO_FIBRA_RT: &str = "fibra runtime rows (fibra, fibra-1, fibra-ct): \
     fibra-bench was built without its `fibra-rt` feature";

/// The rows of `spec` on fibra's own runtime (see [`fibra_rows!`]), for a
/// build without the `fibra-rt` feature: listed, and skipped with a note.
#[cfg(not(feature = "fibra-rt"))]
pub fn fibra_rows_unavailable(spec: &Spec) -> Vec<Case> {
    FIBRA_RUNTIME_SYSTEMS
        .iter()
        .map(|&system| spec.on(system, Runner::Unavailable(NO_FIBRA_RT)))
        .collect()
}

/// How a runtime row builds fibra's runtime.
#[cfg(feature = "fibra-rt")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FibraFlavour {
    /// Multi-thread; `None`: the default number of workers.
    Multi(Option<usize>),
    /// Multi-thread like [`Self::Multi`], with parasite inflation off
    /// (`Builder::parasite_inflation(false)`).
    MultiNoInflation(Option<usize>),
    /// Current-thread.
    CurrentThread,
}

#[cfg(feature = "fibra-rt")]
impl FibraFlavour {
    /// The flavour of a row on `system` (one of [`FIBRA_RUNTIME_SYSTEMS`]);
    /// `workers` is `--workers`, used by the `fibra` row.
    pub fn of(system: System, workers: Option<usize>) -> Option<Self> {
        match system {
            System::Fibra => Some(Self::Multi(workers)),
            System::Fibra1 => Some(Self::Multi(Some(1))),
            System::FibraCt => Some(Self::CurrentThread),
            _ => None,
        }
    }

    /// Builds the runtime.
    pub fn build(self) -> fibra::Runtime {
        let multi = |workers: Option<usize>| match workers {
            Some(workers) => fibra::Runtime::builder().workers(workers),
            None => fibra::Runtime::builder(),
        };
        match self {
            Self::Multi(workers) => multi(workers).build(),
            Self::MultiNoInflation(workers) => multi(workers).parasite_inflation(false).build(),
            Self::CurrentThread => fibra::Runtime::builder().current_thread().build(),
        }
        .expect("build fibra runtime")
    }
}

/// A row run by `block_on(make())` on a fibra runtime of `flavour`, built
/// once for the row. The future should spawn its tasks and await them.
#[cfg(feature = "fibra-rt")]
pub fn on_fibra<F, Fut>(flavour: FibraFlavour, make: F) -> Runner
where
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = u64> + Send + 'static,
{
    Runner::InProcess(Box::new(move || {
        let rt = flavour.build();
        Box::new(move || rt.block_on(make())) as RunFn
    }))
}

/// The rows of `spec` on fibra's own runtime (see [`fibra_rows!`]).
#[cfg(feature = "fibra-rt")]
pub fn fibra_runtime_rows<F, Fut>(spec: &Spec, workers: Option<usize>, make: F) -> Vec<Case>
where
    F: Fn() -> Fut + Clone + 'static,
    Fut: Future<Output = u64> + Send + 'static,
{
    FIBRA_RUNTIME_SYSTEMS
        .iter()
        .map(|&system| {
            let flavour = FibraFlavour::of(system, workers).expect("a fibra runtime row");
            spec.on(system, on_fibra(flavour, make.clone()))
        })
        .collect()
}

/// Awaits every fibra task in order and sums what they return.
#[cfg(feature = "fibra-rt")]
pub async fn fibra_join_sum(handles: impl IntoIterator<Item = fibra::JoinHandle<u64>>) -> u64 {
    let mut sum = 0;
    for handle in handles {
        sum += handle.await.expect("fibra task failed");
    }
    sum
}

/// `fibra_rows!(spec, config, make)`: the three rows of `spec` on fibra's own
/// runtime ([`FIBRA_RUNTIME_SYSTEMS`]), each run by `block_on(make())`.
/// Without the `fibra-rt` feature, `make` is not even compiled (it names
/// fibra's runtime API) and the rows are skipped with a note.
macro_rules! fibra_rows {
    ($spec:expr, $config:expr, $make:expr) => {{
        #[cfg(feature = "fibra-rt")]
        let rows = $crate::exec::fibra_runtime_rows($spec, $config.workers, $make);
        #[cfg(not(feature = "fibra-rt"))]
        let rows = {
            let _ = $config;
            $crate::exec::fibra_rows_unavailable($spec)
        };
        rows
    }};
}
pub(crate) use fibra_rows;

/// `fibra_row!(spec, config, system, make)`: one row of `spec` on fibra's
/// multi-thread runtime with default workers (or `--workers`, like the
/// `fibra` row), under the name `system` (a variant such as
/// `fibra-parasite`), run by `block_on(make())`. Without the `fibra-rt`
/// feature, `make` is not compiled and the row is skipped with a note.
/// `fibra_row!(spec, config, system, flavour, make)` names the runtime's
/// flavour (a [`FibraFlavour`] variant taking the workers).
macro_rules! fibra_row {
    ($spec:expr, $config:expr, $system:expr, $make:expr) => {
        $crate::exec::fibra_row!($spec, $config, $system, Multi, $make)
    };
    ($spec:expr, $config:expr, $system:expr, $flavour:ident, $make:expr) => {{
        #[cfg(feature = "fibra-rt")]
        let row = $spec.on(
            $system,
            $crate::exec::on_fibra($crate::exec::FibraFlavour::$flavour($config.workers), $make),
        );
        #[cfg(not(feature = "fibra-rt"))]
        let row = {
            let _ = $config;
            $spec.on(
                $system,
                $crate::case::Runner::Unavailable($crate::exec::NO_FIBRA_RT),
            )
        };
        row
    }};
}
pub(crate) use fibra_row;
