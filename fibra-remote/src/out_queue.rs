//! The node's outgoing queue: every `send`, reply and control message on
//! its way to the publisher task, bounded for what users send.
//!
//! Invariants:
//! * One mutex guards the queue, the count of bounded entries and the
//!   publisher's waker; a push and a take are each one critical section,
//!   so the queue's order is the order of the pushes (the publisher numbers
//!   casts in that order: see `node.rs`).
//! * A bounded push (a cast or a reply) fails with `Full`, handing the
//!   message back, when `capacity` bounded entries are waiting; it never
//!   waits. Control messages (the `Stopping` heartbeat, flush markers) are
//!   never refused for room.
//! * The publisher takes the whole queue at once (the bound then counts
//!   from zero again). When the queue is empty it leaves its waker and
//!   sleeps; a push takes that waker under the lock and wakes it after
//!   unlocking. No push is missed: either the publisher's take (under the
//!   lock) sees the entry, or the push (after it, under the lock) sees the
//!   waker.

use crate::node::Outgoing;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::task::{Poll, Waker};

/// Why a push was refused (the caller still holds the user's message:
/// the queued form, an encoded buffer, is dropped).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PushError {
    /// `capacity` bounded messages are waiting.
    Full,
    /// The node is closed.
    Closed,
}

pub(crate) struct OutQueue {
    state: Mutex<State>,
    capacity: usize,
}

struct State {
    items: VecDeque<Outgoing>,
    /// Bounded entries in `items`.
    bounded: usize,
    /// The publisher, asleep on an empty queue.
    waker: Option<Waker>,
    closed: bool,
}

impl OutQueue {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
                bounded: 0,
                waker: None,
                closed: false,
            }),
            capacity,
        }
    }

    /// Queues `msg`; `bounded` for what users send (see the invariants).
    pub(crate) fn push(&self, msg: Outgoing, bounded: bool) -> Result<(), PushError> {
        let mut st = self.state.lock().unwrap();
        if st.closed {
            return Err(PushError::Closed);
        }
        if bounded {
            if st.bounded >= self.capacity {
                return Err(PushError::Full);
            }
            st.bounded += 1;
        }
        st.items.push_back(msg);
        let waker = st.waker.take();
        drop(st);
        if let Some(w) = waker {
            w.wake();
        }
        Ok(())
    }

    /// Queues a control message even on a closed queue (the node's own
    /// goodbye, queued by `close` after it closed the queue to users).
    pub(crate) fn push_control(&self, msg: Outgoing) {
        let mut st = self.state.lock().unwrap();
        st.items.push_back(msg);
        let waker = st.waker.take();
        drop(st);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Refuses every later push (`Closed`); what is queued stays.
    pub(crate) fn close(&self) {
        self.state.lock().unwrap().closed = true;
    }

    /// Moves everything queued into `batch` (empty on entry), waiting for
    /// at least one entry.
    pub(crate) async fn take(&self, batch: &mut VecDeque<Outgoing>) {
        debug_assert!(batch.is_empty());
        std::future::poll_fn(|cx| {
            let mut st = self.state.lock().unwrap();
            if st.items.is_empty() {
                st.waker = Some(cx.waker().clone());
                return Poll::Pending;
            }
            st.waker = None;
            std::mem::swap(&mut st.items, batch);
            st.bounded = 0;
            Poll::Ready(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_nats::Subject;

    fn raw(n: u8) -> Outgoing {
        Outgoing::Raw {
            subject: Subject::from("s"),
            buf: vec![n],
        }
    }

    fn byte(o: &Outgoing) -> u8 {
        match o {
            Outgoing::Raw { buf, .. } => buf[0],
            _ => panic!("not raw"),
        }
    }

    #[test]
    fn full_hands_the_message_back_and_control_messages_pass() {
        let q = OutQueue::new(2);
        assert!(q.push(raw(1), true).is_ok());
        assert!(q.push(raw(2), true).is_ok());
        assert_eq!(q.push(raw(3), true), Err(PushError::Full));
        // Not bounded: room or not, it goes.
        assert!(q.push(raw(4), false).is_ok());
        let mut batch = VecDeque::new();
        fibra::block_on(q.take(&mut batch));
        assert_eq!(batch.iter().map(byte).collect::<Vec<_>>(), [1, 2, 4]);
        // Taken: room again.
        assert!(q.push(raw(5), true).is_ok());
        q.close();
        assert_eq!(q.push(raw(6), false), Err(PushError::Closed));
        q.push_control(raw(7));
        batch.clear();
        fibra::block_on(q.take(&mut batch));
        assert_eq!(batch.iter().map(byte).collect::<Vec<_>>(), [5, 7]);
    }

    #[test]
    fn a_sleeping_taker_is_woken_by_a_push_from_another_thread() {
        for capacity in [1, 1 << 10] {
            let q = std::sync::Arc::new(OutQueue::new(capacity));
            let pusher = q.clone();
            let t = std::thread::spawn(move || {
                for n in 0..200u8 {
                    while pusher.push(raw(n), true).is_err() {
                        std::thread::yield_now();
                    }
                }
            });
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let got = rt.block_on(async {
                let mut got = Vec::new();
                let mut batch = VecDeque::new();
                while got.len() < 200 {
                    q.take(&mut batch).await;
                    got.extend(batch.drain(..).map(|m| byte(&m)));
                }
                got
            });
            t.join().unwrap();
            assert_eq!(got, (0..200u8).collect::<Vec<_>>());
        }
    }
}
