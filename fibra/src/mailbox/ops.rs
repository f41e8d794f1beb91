//! The mailbox ops: receiving (in order or selectively) and sending with
//! back-pressure.
//!
//! A receive never publishes a record that a sender could commit: it parks
//! its waker in the mailbox's queue, and when woken looks again and
//! commits *itself* (`W -> C -> SYNCED`, `Op::repoll`). So a message is
//! taken only after the receive won its own opstate — if another branch of
//! the choice won, the message stays where it was, in its place.
//!
//! Receive ops hold `&mut Mailbox`: one receive at a time, statically.

use super::{InnerArc, Mailbox};
use crate::chan::SendError;
use crate::op::{BlockCx, Op, sealed::Sealed};
use crate::sync::AcquireOp;
use std::pin::Pin;

/// What a look at the mailbox found.
enum Look<M> {
    /// A message taken out of the queue (it belongs at the stash's front).
    Taken(M),
    /// A match at this stash index, not yet removed.
    At(usize),
    /// Nothing now, and nothing can come: yield `None`.
    Disconnected,
    Nothing,
}

/// The state every receive op carries.
struct Receiving<'a, M> {
    mb: &'a mut Mailbox<M>,
    /// The committed result and the stash index it came from (to put it
    /// back in place if the perform is dropped after the commit).
    got: Option<(Option<M>, usize)>,
    parked: bool,
}

impl<'a, M> Receiving<'a, M> {
    fn new(mb: &'a mut Mailbox<M>) -> Self {
        Self {
            mb,
            got: None,
            parked: false,
        }
    }

    /// Looks with `find`, and once more after learning that nothing can
    /// come any more (a message pushed before the last address went is
    /// visible by then).
    fn look(&mut self, find: &mut impl FnMut(&mut Mailbox<M>) -> Look<M>) -> Look<M> {
        match find(self.mb) {
            Look::Nothing if self.mb.is_disconnected() => match find(self.mb) {
                Look::Nothing => Look::Disconnected,
                found => found,
            },
            found => found,
        }
    }

    /// Takes what `look` found, for a perform that committed (or has nothing
    /// published).
    fn take(&mut self, found: Look<M>) -> Option<(Option<M>, usize)> {
        match found {
            Look::Taken(m) => Some((Some(m), 0)),
            Look::At(i) => Some((Some(self.mb.stash.remove(i).expect("found index")), i)),
            Look::Disconnected => Some((None, 0)),
            Look::Nothing => None,
        }
    }

    fn deliver(&mut self, got: Option<M>) -> Option<M> {
        if got.is_some() {
            self.mb.release_room(1);
        }
        got
    }

    fn try_now(&mut self, mut find: impl FnMut(&mut Mailbox<M>) -> Look<M>) -> Option<Option<M>> {
        let found = self.look(&mut find);
        let (got, _) = self.take(found)?;
        Some(self.deliver(got))
    }

    /// The block phase (`fresh`: right after the optimistic look, so park
    /// at once: the park fails if anything came since) and every later poll:
    /// look; if nothing, park, which fails if anything came (or nothing more
    /// can come) since the look; commit ourselves on a find.
    fn poll(
        &mut self,
        cx: BlockCx<'_>,
        fresh: bool,
        mut find: impl FnMut(&mut Mailbox<M>) -> Look<M>,
    ) {
        let mut look = !fresh;
        let found = loop {
            if look {
                match self.look(&mut find) {
                    Look::Nothing => {}
                    found => break found,
                }
            }
            look = true;
            if self.mb.park(cx.waker) {
                // Nothing came since we looked and something can still
                // come: the next push (or a close) wakes us.
                self.parked = true;
                return;
            }
            // Messages arrived since we looked, or nothing more can come:
            // look again.
        };
        if cx.claim().is_ok() {
            self.got = self.take(found);
            self.unpark();
            cx.state.commit_own(cx.leaf);
        } else if let Look::Taken(m) = found {
            // Another branch committed: the message goes back in its place.
            self.mb.stash.push_front(m);
        }
    }

    fn finish(&mut self) -> Option<M> {
        let (got, _) = self.got.take().expect("a committed receive has its result");
        self.deliver(got)
    }

    fn abandon(&mut self) {
        if let Some((Some(m), i)) = self.got.take() {
            self.mb.stash.insert(i, m);
        }
        self.unpark();
    }

    fn unpark(&mut self) {
        if std::mem::take(&mut self.parked) {
            self.mb.unpark();
        }
    }
}

fn next<M>(mb: &mut Mailbox<M>) -> Look<M> {
    match mb.take_next() {
        Some(m) => Look::Taken(m),
        None => Look::Nothing,
    }
}

/// The op of receiving the next message: made by
/// [`Mailbox::recv_op`](crate::Mailbox::recv_op).
///
/// Yields `Some(message)`, or `None` once the mailbox is closed or no
/// address is left, and it is empty.
///
/// ```
/// use fibra::{Op, select};
/// use std::time::Duration;
///
/// fibra::run(async {
///     let (addr, mut mb) = fibra::mailbox::<u32>();
///     addr.send(3).unwrap();
///     let got = select! {
///         m = mb.recv_op() => m,
///         () = fibra::time::after(Duration::from_secs(5)) => None,
///     };
///     assert_eq!(got, Some(3));
///     drop(addr);
///     assert_eq!(mb.recv_op().await, None); // no address left
/// });
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct RecvOp<'a, M> {
    rx: Receiving<'a, M>,
}

impl<'a, M> RecvOp<'a, M> {
    pub(super) fn new(mb: &'a mut Mailbox<M>) -> Self {
        Self {
            rx: Receiving::new(mb),
        }
    }
}

impl<M> Sealed for RecvOp<'_, M> {}

// Nothing in a receive op is pinned: no record points into it (the mailbox
// holds only a waker), and messages are moved in and out by value.
impl<M> Unpin for RecvOp<'_, M> {}

impl<M> Op for RecvOp<'_, M> {
    type Output = Option<M>;

    fn commits_remotely(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Option<M>> {
        self.get_mut().rx.try_now(next)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.get_mut().rx.poll(cx, true, next);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        self.get_mut().rx.poll(cx, false, next);
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Option<M> {
        self.get_mut().rx.finish()
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        self.get_mut().rx.abandon();
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.get_mut().rx.unpark();
    }
}

/// The op of a selective receive: made by
/// [`Mailbox::recv_matching_op`](crate::Mailbox::recv_matching_op).
///
/// Yields the first message the predicate accepts (the others stay, in
/// order), or `None` once the mailbox is closed or no address is left, and
/// no message matches. Each message is examined at most once per op.
///
/// ```
/// use fibra::Op;
///
/// let (addr, mut mb) = fibra::mailbox();
/// for m in [("log", 1), ("reply", 2), ("log", 3)] {
///     addr.send(m).unwrap();
/// }
/// let reply = mb.recv_matching_op(|(kind, _)| *kind == "reply").perform();
/// assert_eq!(reply, Some(("reply", 2)));
/// assert_eq!(mb.len(), 2); // the logs stay
/// ```
#[must_use = "an op does nothing unless performed"]
pub struct RecvMatchingOp<'a, M, P> {
    rx: Receiving<'a, M>,
    pred: P,
    /// Stash entries before this index were examined and rejected.
    seen: usize,
}

impl<'a, M, P: FnMut(&M) -> bool> RecvMatchingOp<'a, M, P> {
    pub(super) fn new(mb: &'a mut Mailbox<M>, pred: P) -> Self {
        Self {
            rx: Receiving::new(mb),
            pred,
            seen: 0,
        }
    }

    fn split(
        self: Pin<&mut Self>,
    ) -> (
        &mut Receiving<'a, M>,
        impl FnMut(&mut Mailbox<M>) -> Look<M>,
    ) {
        let this = self.get_mut();
        let (pred, seen) = (&mut this.pred, &mut this.seen);
        let find = move |mb: &mut Mailbox<M>| match mb.find_matching(seen, pred) {
            Some(i) => Look::At(i),
            None => Look::Nothing,
        };
        (&mut this.rx, find)
    }
}

impl<M, P> Sealed for RecvMatchingOp<'_, M, P> {}

// As for `RecvOp`: nothing is pinned (the predicate is called by `&mut`).
impl<M, P> Unpin for RecvMatchingOp<'_, M, P> {}

impl<M, P: FnMut(&M) -> bool> Op for RecvMatchingOp<'_, M, P> {
    type Output = Option<M>;

    fn commits_remotely(&self) -> bool {
        false
    }

    fn try_now(self: Pin<&mut Self>) -> Option<Option<M>> {
        let (rx, find) = self.split();
        rx.try_now(find)
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (rx, find) = self.split();
        rx.poll(cx, true, find);
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        let (rx, find) = self.split();
        rx.poll(cx, false, find);
    }

    fn finish(self: Pin<&mut Self>, _leaf: usize) -> Option<M> {
        self.get_mut().rx.finish()
    }

    fn abandon(self: Pin<&mut Self>, _leaf: usize) {
        self.get_mut().rx.abandon();
    }

    fn withdraw(self: Pin<&mut Self>) {
        self.get_mut().rx.unpark();
    }
}

pin_project_lite::pin_project! {
    /// The op of sending to a mailbox: made by
    /// [`Addr::send_op`](crate::Addr::send_op). On a bounded mailbox it waits
    /// for room; yields `Err(SendError(msg))` if the mailbox is closed.
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased};
    ///
    /// let (addr, mut mb) = fibra::bounded_mailbox::<u8>(1);
    /// addr.send(1).unwrap(); // full
    /// // A send op waits for room; in a choice, `always` wins while it is full.
    /// let sent = choose_biased((addr.send_op(2).wrap(|r| r.is_ok()), always(false))).perform();
    /// assert!(!sent);
    /// assert_eq!(mb.try_recv(), Ok(1));
    /// assert_eq!(addr.send_op(2).perform(), Ok(()));
    /// ```
    #[must_use = "an op does nothing unless performed"]
    pub struct SendOp<'a, M> {
        inner: &'a InnerArc<M>,
        msg: Option<M>,
        #[pin]
        room: Option<AcquireOp<'a>>,
    }
}

impl<'a, M> SendOp<'a, M> {
    pub(super) fn new(inner: &'a InnerArc<M>, msg: M) -> Self {
        Self {
            inner,
            msg: Some(msg),
            room: inner.room.as_ref().map(|r| r.acquire_op()),
        }
    }

    /// The message of an op that did not commit (never performed, or lost a
    /// choice).
    ///
    /// # Panics
    ///
    /// If the op committed (the message was sent).
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased};
    ///
    /// let (addr, _mb) = fibra::bounded_mailbox(1);
    /// addr.send(0).unwrap(); // now full
    /// match addr.send_op(1).try_perform() {
    ///     Ok(_) => unreachable!("full"),
    ///     Err(op) => assert_eq!(op.into_value(), 1),
    /// }
    /// ```
    pub fn into_value(self) -> M {
        self.msg.expect("the message was sent")
    }

    fn send(self: Pin<&mut Self>) -> Result<(), SendError<M>> {
        let this = self.project();
        let msg = this.msg.take().expect("send op performed twice");
        this.inner.deliver(msg).map_err(SendError)
    }

    fn fail(self: Pin<&mut Self>) -> Result<(), SendError<M>> {
        let msg = self.project().msg.take().expect("send op performed twice");
        Err(SendError(msg))
    }
}

impl<M> Sealed for SendOp<'_, M> {}

impl<M> Op for SendOp<'_, M> {
    type Output = Result<(), SendError<M>>;

    fn prepare(self: Pin<&mut Self>) {
        if let Some(room) = self.project().room.as_pin_mut() {
            room.prepare();
        }
    }

    fn try_now(mut self: Pin<&mut Self>) -> Option<Self::Output> {
        if self.inner.is_closed() {
            return Some(self.fail());
        }
        match self.as_mut().project().room.as_pin_mut() {
            None => Some(self.send()),
            Some(room) => match room.try_now()? {
                Ok(permit) => {
                    permit.forget();
                    Some(self.send())
                }
                Err(_) => Some(self.fail()),
            },
        }
    }

    fn block(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(room) = self.project().room.as_pin_mut() {
            room.block(cx);
        }
    }

    fn repoll(self: Pin<&mut Self>, cx: BlockCx<'_>) {
        if let Some(room) = self.project().room.as_pin_mut() {
            room.repoll(cx);
        }
    }

    fn finish(mut self: Pin<&mut Self>, leaf: usize) -> Self::Output {
        let room = self.as_mut().project().room.as_pin_mut();
        match room.map(|r| r.finish(leaf)) {
            Some(Ok(permit)) => {
                permit.forget();
                self.send()
            }
            Some(Err(_)) => self.fail(),
            None => self.send(),
        }
    }

    fn abandon(self: Pin<&mut Self>, leaf: usize) {
        if let Some(room) = self.project().room.as_pin_mut() {
            room.abandon(leaf);
        }
    }

    fn withdraw(self: Pin<&mut Self>) {
        if let Some(room) = self.project().room.as_pin_mut() {
            room.withdraw();
        }
    }
}

crate::op::op_into_future! {
    impl['a, M] RecvOp<'a, M>;
    impl['a, M, P: FnMut(&M) -> bool] RecvMatchingOp<'a, M, P>;
    impl['a, M] SendOp<'a, M>;
}
