//! A worker's parker: sleep until unparked (or a deadline), with a token so
//! an unpark that arrives before the park is not lost and spurious condvar
//! wake-ups never return early.
//!
//! A worker that holds its runtime's I/O poll sleeps in it instead
//! ([`Parker::park_polling`]): `polling` says so, and an unpark that finds
//! it set tells its caller to wake the poll (`Shared::unpark`), since the
//! condvar would not reach that thread.
//!
//! Under loom a timed park waits untimed: loom's `Condvar::wait_timeout`
//! never times out, and its `Instant` never passes a deadline
//! (`crate::loom::Instant`). A worker parked for a tick then sleeps until
//! woken (for work, as a watchdog, or by shutdown, which unparks every
//! worker), so the models never depend on a tick coming. No I/O driver
//! exists under loom.
//!
//! # Invariants
//!
//! * `token` and `polling` change under the lock; `polling` is set before
//!   the poll starts and cleared after it returns, so an unpark in between
//!   sees it and wakes the poll (an eventfd write, which a poll that has not
//!   started yet returns on at once).

use crate::loom::{Condvar, Instant, Mutex, lock};

#[derive(Default)]
struct State {
    /// The unpark token: set by `unpark`, consumed by a park.
    token: bool,
    /// The worker sleeps in its runtime's I/O poll.
    polling: bool,
}

#[derive(Default)]
pub(crate) struct Parker {
    state: Mutex<State>,
    cv: Condvar,
}

impl Parker {
    /// Sleeps until unparked or `deadline` passes; consumes the token.
    pub(crate) fn park(&self, deadline: Option<Instant>) {
        let mut state = lock(&self.state);
        #[cfg(loom)]
        let deadline: Option<Instant> = deadline.and(None);
        while !state.token {
            match deadline {
                None => {
                    state = self.cv.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break;
                    }
                    state = self
                        .cv
                        .wait_timeout(state, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        state.token = false;
    }

    /// Sleeps in `poll` (the I/O driver's, given the time left before
    /// `deadline`) unless the token is set; consumes the token. Returns
    /// what `poll` returned (0 if it did not run). The poll may return
    /// early, for I/O: the caller looks at its queues either way.
    #[cfg(not(loom))]
    pub(crate) fn park_polling(
        &self,
        deadline: Option<Instant>,
        poll: impl FnOnce(Option<std::time::Duration>) -> usize,
    ) -> usize {
        {
            let mut state = lock(&self.state);
            if std::mem::take(&mut state.token) {
                return 0;
            }
            state.polling = true;
        }
        let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let n = poll(timeout);
        let mut state = lock(&self.state);
        state.polling = false;
        state.token = false;
        n
    }

    /// Sets the token and wakes the parked thread, if any. Returns whether
    /// that thread sleeps in the I/O poll, which the caller must wake.
    pub(crate) fn unpark(&self) -> bool {
        let polling = {
            let mut state = lock(&self.state);
            state.token = true;
            state.polling
        };
        if !polling {
            self.cv.notify_one();
        }
        polling
    }
}
