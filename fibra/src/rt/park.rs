//! A worker's parker: sleep until unparked (or a deadline), with a token so
//! an unpark that arrives before the park is not lost and spurious condvar
//! wake-ups never return early.
//!
//! Under loom a timed park waits untimed: loom's `Condvar::wait_timeout`
//! never times out, and its `Instant` never passes a deadline
//! (`crate::loom::Instant`). A worker parked for a tick then sleeps until
//! woken (for work, as a watchdog, or by shutdown, which unparks every
//! worker), so the models never depend on a tick coming.

use crate::loom::{Condvar, Instant, Mutex, lock};

#[derive(Default)]
pub(crate) struct Parker {
    /// The unpark token: set by `unpark`, consumed by `park`.
    token: Mutex<bool>,
    cv: Condvar,
}

impl Parker {
    /// Sleeps until unparked or `deadline` passes; consumes the token.
    pub(crate) fn park(&self, deadline: Option<Instant>) {
        let mut token = lock(&self.token);
        #[cfg(loom)]
        let deadline: Option<Instant> = deadline.and(None);
        while !*token {
            match deadline {
                None => {
                    token = self.cv.wait(token).unwrap_or_else(|e| e.into_inner());
                }
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break;
                    }
                    token = self
                        .cv
                        .wait_timeout(token, d - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
        *token = false;
    }

    /// Sets the token and wakes the parked thread, if any.
    pub(crate) fn unpark(&self) {
        *lock(&self.token) = true;
        self.cv.notify_one();
    }
}
