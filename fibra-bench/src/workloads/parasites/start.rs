//! How fibra's rows start the work's computations: as tasks
//! (`fibra::spawn`, [`AsTask`]) or as parasites (`fibra::spawn_eager`,
//! [`AsParasite`]). Each workload's fibra code takes an `impl Start`, so
//! both rows run the same source, and each is compiled for its own way of
//! starting, as a user's code calling `spawn` or `spawn_eager` would be (a
//! choice made at run time would merge the two kinds of handle at every
//! start and keep both on the stack).

/// How a fibra row starts a computation.
pub trait Start: Copy + Send + Sync + 'static {
    /// Starts `future` and returns its join handle.
    fn start<F>(self, future: F) -> fibra::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;
}

/// `fibra::spawn`: queued as a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsTask;

/// `fibra::spawn_eager`: a parasite, polled inline first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsParasite;

impl Start for AsTask {
    #[inline]
    fn start<F>(self, future: F) -> fibra::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        fibra::spawn(future)
    }
}

impl Start for AsParasite {
    #[inline]
    fn start<F>(self, future: F) -> fibra::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        fibra::spawn_eager(future)
    }
}

/// `for_each_start!(start => { .. })`: runs the block twice in a test,
/// with `start` bound to [`AsTask`], then to [`AsParasite`].
#[cfg(test)]
macro_rules! for_each_start {
    ($start:ident => $body:block) => {{
        {
            let $start = $crate::workloads::parasites::start::AsTask;
            $body
        }
        {
            let $start = $crate::workloads::parasites::start::AsParasite;
            $body
        }
    }};
}
#[cfg(test)]
pub(crate) use for_each_start;
