//! How fibra's rows start the work's computations: as tasks
//! (`fibra::spawn`) or as parasites (`fibra::spawn_eager`). Each workload's
//! fibra code takes a [`Start`], so both rows run the same code.

/// How a fibra row starts a computation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// `fibra::spawn`: queued as a task.
    Task,
    /// `fibra::spawn_eager`: a parasite, polled inline first.
    Parasite,
}

#[cfg(feature = "fibra-rt")]
impl Start {
    /// Starts `future` and returns its join handle.
    pub fn start<F>(self, future: F) -> fibra::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self {
            Self::Task => fibra::spawn(future),
            Self::Parasite => fibra::spawn_eager(future),
        }
    }
}
