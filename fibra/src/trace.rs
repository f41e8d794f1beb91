//! Tracing hooks (feature `tracing`): spans and events for the `tracing`
//! crate, under the target `fibra`. Without the feature every hook expands
//! to nothing, so the code compiled is the same as without hooks.
//!
//! What is reported, all at the `TRACE` level:
//!
//! | what | kind | where | fields |
//! |---|---|---|---|
//! | `spawn` | event | a task is spawned | `task_id` |
//! | `poll` | span | around each poll of a task by a worker | `task_id`, `worker` |
//! | `complete` | event | a task finished (completed, panicked, aborted, cancelled) | `task_id` |
//! | `commit` | event | a perform committed (try phase, or a leaf after blocking) | `leaf` (after blocking) |
//! | `park` | event | a worker goes to sleep for lack of work | `worker` |
//! | `steal` | event | an idle worker found work elsewhere | `worker` |

/// A `TRACE` event under the target `fibra`; nothing without the feature
/// `tracing` (its arguments are not evaluated).
macro_rules! event {
    ($($args:tt)*) => {
        #[cfg(feature = "tracing")]
        ::tracing::trace!(target: "fibra", $($args)*);
    };
}
pub(crate) use event;

/// Runs `$body` inside an entered `TRACE` span `$name` under the target
/// `fibra`, with `$fields`; just `$body` without the feature `tracing`.
macro_rules! in_span {
    ($name:literal, { $($fields:tt)* }, $body:expr) => {{
        #[cfg(feature = "tracing")]
        let _entered = ::tracing::trace_span!(target: "fibra", $name, $($fields)*).entered();
        $body
    }};
}
pub(crate) use in_span;
