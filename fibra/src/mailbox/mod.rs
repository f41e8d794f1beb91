//! Erlang/Racket-style mailboxes: asynchronous, typed, one receiver.
//!
//! A [`Mailbox<M>`] is an inbox with one owner (usually the task it belongs
//! to) and any number of [`Addr<M>`]esses that send to it. A send never
//! blocks: it enqueues the message (one compare-and-swap on the queue's
//! tail; a block of slots is allocated once every 31 messages) and wakes
//! the owner if it waits. The owner takes messages in order with
//! [`recv`](Mailbox::recv), or selectively with
//! [`recv_matching`](Mailbox::recv_matching) (Erlang's `receive` with a
//! pattern: the first message the predicate accepts; the others stay, in
//! their order). Every receive is also an op ([`Mailbox::recv_op`],
//! [`Mailbox::recv_matching_op`]), so it composes with channels, timeouts and
//! joins in a choice (Racket's `thread-receive-evt`). A mailbox is also a
//! `futures_core::Stream` of its messages.
//!
//! [`spawn_actor`](crate::spawn_actor) starts a task that owns a new mailbox and returns its
//! address; [`Addr::exited_op`] becomes ready when that task ends (Erlang's
//! monitor), so a supervisor can wait for messages and deaths at once.
//! [`mailbox`] makes a mailbox not tied to a task (for OS threads, or any
//! executor); [`bounded_mailbox`] one with a capacity, whose
//! [`Addr::send_op`] waits for room.
//!
//! # Examples
//!
//! A counter actor, and a request with a reply channel in the message:
//!
//! ```
//! use fibra::Addr;
//!
//! enum Msg {
//!     Add(u64),
//!     Get(fibra::Sender<u64>),
//! }
//!
//! fibra::run(async {
//!     let counter: Addr<Msg> = fibra::spawn_actor(|mut mb| async move {
//!         let mut total = 0;
//!         while let Some(msg) = mb.recv().await {
//!             match msg {
//!                 Msg::Add(n) => total += n,
//!                 Msg::Get(reply) => {
//!                     let _ = reply.send(total).await;
//!                 }
//!             }
//!         }
//!     });
//!     for n in 1..=10 {
//!         counter.send(Msg::Add(n)).unwrap();
//!     }
//!     let (reply, answer) = fibra::bounded(1);
//!     counter.send(Msg::Get(reply)).unwrap();
//!     assert_eq!(answer.recv().await, Ok(55));
//! });
//! ```
//!
//! A supervisor that restarts a worker each time it crashes, waiting for
//! either the worker's acknowledgement or its death:
//!
//! ```
//! use fibra::{Addr, Exit, Op, choose, spawn_actor};
//!
//! // Acknowledges each job to `boss`; crashes on 13.
//! fn start_worker(boss: Addr<u32>) -> Addr<u32> {
//!     spawn_actor(move |mut mb| async move {
//!         while let Some(job) = mb.recv().await {
//!             assert!(job != 13, "unlucky job");
//!             boss.send(job).unwrap();
//!         }
//!     })
//! }
//!
//! fibra::run(async {
//!     let (me, mut acks) = fibra::mailbox::<u32>();
//!     let mut worker = start_worker(me.clone());
//!     let (mut done, mut restarts) = (Vec::new(), 0);
//!     for job in [1, 13, 2, 13, 3] {
//!         worker.send(job).unwrap();
//!         let event = choose((
//!             acks.recv_op().wrap(Ok),
//!             worker.exited_op().wrap(Err),
//!         ))
//!         .await;
//!         match event {
//!             Ok(ack) => done.push(ack.unwrap()),
//!             Err(Exit::Panicked(_)) => {
//!                 restarts += 1;
//!                 worker = start_worker(me.clone());
//!             }
//!             Err(other) => panic!("worker ended: {other:?}"),
//!         }
//!     }
//!     assert_eq!(done, [1, 2, 3]);
//!     assert_eq!(restarts, 2);
//! });
//! ```

mod actor;
mod call;
mod inner_arc;
mod link;
mod ops;
pub mod pg;
mod queue;
mod recv;
mod registry;
mod stream;

#[cfg(all(test, loom))]
mod loom_models;

pub use crate::chan::RecvTimeoutError;
pub use actor::Exit;
pub(crate) use actor::{OnEnd, actor, supervised_addr, supervised_life};
pub use call::{Call, CallError, Reply, ReplyOp};
pub use link::{ActorId, ExitSignal};
pub use ops::{RecvMatchingOp, RecvOp, SendOp};
pub use recv::Recv;
pub use registry::{LookupError, RegisterError, register, registered, unregister, whereis};

use crate::chan::{TryRecvError, TrySendError};
use crate::loom::{AtomicBool, AtomicUsize, Mutex, Ordering, lock};
use crate::op::Op;
use crate::sync::{IVar, Semaphore, TryAcquireError};
pub(crate) use inner_arc::{Block, InnerArc};
use queue::Queue;
use std::collections::VecDeque;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::time::Duration;

/// What every address and the mailbox share.
///
/// Invariants:
/// * `queue` has one consumer: the `Mailbox` (its methods take `&mut self`),
///   or `Inner`'s drop. The consumer parks in the queue itself (see
///   `queue.rs`); a push wakes it.
/// * `addrs` and `closed` change without a push: whoever changes them then
///   pokes the queue (`Queue::poke`), and a receiver reads them inside its
///   parking attempt, so either it sees the change or it is woken.
/// * `addrs` counts live `Addr` handles. Every push by a handle happens
///   before its decrement (AcqRel), so a receiver that reads 0 (Acquire)
///   and then finds the queue empty knows no message can come any more —
///   unless the owner makes a new address, which it cannot while it waits.
/// * `closed` is set once (the owner closed or dropped the mailbox, or its
///   task ended); afterwards sends fail and return the message. A send that
///   read `closed == false` may still enqueue after the owner drained the
///   queue: that message is dropped with the queue, like any message left
///   in a mailbox whose owner is gone.
/// * `exit` is filled once, when the owning task ends (or, for a mailbox
///   not tied to a task, when it closes), after `closed` is set. A
///   supervised child's mailbox outlives its task's lives: its `exit` is
///   filled when its supervisor stops it for good.
/// * `ctl` and `killed`: links, kills, trapped exits and registered names
///   (`link.rs` states their invariants).
pub(crate) struct Inner<M> {
    queue: Queue<M>,
    addrs: AtomicUsize,
    closed: AtomicBool,
    /// Free room of a bounded mailbox: one permit per message it can still
    /// take. A sender takes one; the receiver gives one back per message it
    /// takes out. Boxed: most mailboxes are unbounded, and a `Semaphore`
    /// inline would make each of them 80 bytes bigger.
    room: Option<Box<Semaphore>>,
    /// How the owning task ended; `Monitor`s hold the `Inner` to read it.
    exit: IVar<Exit>,
    ctl: Mutex<link::Control<M>>,
    /// A kill was requested for the current life (`link.rs`).
    killed: AtomicBool,
}

impl<M> Inner<M> {
    /// A new mailbox, built in its allocation (`block`, or the system
    /// allocator's): it holds the queue's first block, so building it on
    /// the stack and moving it in would copy a few hundred bytes per
    /// mailbox.
    fn new_arc(
        capacity: Option<usize>,
        is_task: bool,
        supervised: bool,
        block: Option<Block>,
    ) -> InnerArc<M> {
        // SAFETY: `init` writes every field; `block` holds the layout
        // (`actor`'s caller asked for `InnerArc::layout`).
        let arc =
            unsafe { InnerArc::new_with(block, |p| Self::init(p, capacity, is_task, supervised)) };
        // SAFETY: the queue lies where it stays (in the allocation), not
        // shared yet.
        unsafe { arc.queue.settle() };
        arc
    }

    /// Initialises a mailbox where it lies.
    ///
    /// # Safety
    ///
    /// `p` is valid for writes of an `Inner<M>`.
    unsafe fn init(p: *mut Self, capacity: Option<usize>, is_task: bool, supervised: bool) {
        // Fails to compile if a field is added without its write below.
        #[allow(dead_code)]
        fn every_field<M>(i: Inner<M>) {
            let Inner {
                queue: _,
                addrs: _,
                closed: _,
                room: _,
                exit: _,
                ctl: _,
                killed: _,
            } = i;
        }
        use std::ptr::addr_of_mut;
        // SAFETY (every write): `p` is valid for writes.
        unsafe {
            Queue::init(addr_of_mut!((*p).queue));
            addr_of_mut!((*p).addrs).write(AtomicUsize::new(1));
            addr_of_mut!((*p).closed).write(AtomicBool::new(false));
            addr_of_mut!((*p).room).write(capacity.map(|c| Box::new(Semaphore::new(c))));
            addr_of_mut!((*p).exit).write(IVar::new());
            addr_of_mut!((*p).ctl).write(link::Control::new(is_task, supervised));
            addr_of_mut!((*p).killed).write(AtomicBool::new(false));
        }
    }

    fn is_closed(&self) -> bool {
        // Acquire: pairs with the Release half of `close`'s swap.
        self.closed.load(Ordering::Acquire)
    }

    /// Enqueues a message whose room (if bounded) is already taken.
    fn deliver(&self, msg: M) -> Result<(), M> {
        if self.is_closed() {
            if let Some(room) = &self.room {
                room.release(1);
            }
            return Err(msg);
        }
        self.queue.push(msg);
        Ok(())
    }

    /// Sets `closed` and fails every sender waiting for room. Returns
    /// whether this call closed it.
    fn close(&self) -> bool {
        if !self.close_by_receiver() {
            return false;
        }
        // A receiver waiting with no message must learn it can stop.
        self.wake_receiver();
        true
    }

    /// `close` by the receiver itself (the `Mailbox`, through `&mut`):
    /// it is not in a receive, so there is nobody to wake.
    fn close_by_receiver(&self) -> bool {
        // AcqRel: Release orders what the closer did before closing before
        // a reader's Acquire of `closed`; Acquire lets a second closer see
        // the first's.
        if self.closed.swap(true, Ordering::AcqRel) {
            return false;
        }
        if let Some(room) = &self.room {
            room.close();
        }
        true
    }

    /// After a change the receiver must see (`closed`, `addrs`): wake it if
    /// it is parked, or make its parking attempt look again.
    fn wake_receiver(&self) {
        self.queue.poke();
    }
}

/// Creates a mailbox not tied to any task: its address and the receiving
/// end. Use it from OS threads, from other executors, or to hand a task its
/// inbox yourself ([`spawn_actor`](crate::spawn_actor) does this for you).
///
/// ```
/// let (addr, mut mb) = fibra::mailbox();
/// addr.send("hello").unwrap();
/// assert_eq!(mb.try_recv(), Ok("hello"));
/// ```
pub fn mailbox<M>() -> (Addr<M>, Mailbox<M>) {
    make(None, false, None)
}

/// Creates a mailbox that holds at most `capacity` messages: a
/// [`send`](Addr::send) to a full one fails with [`TrySendError::Full`],
/// and [`send_op`](Addr::send_op) waits for room (back-pressure).
///
/// # Panics
///
/// If `capacity` is 0 (a mailbox that could never take a message) or above
/// [`sync::MAX_PERMITS`](crate::sync::MAX_PERMITS).
///
/// ```
/// use fibra::TrySendError;
///
/// let (addr, mut mb) = fibra::bounded_mailbox(1);
/// addr.send(1).unwrap();
/// assert_eq!(addr.send(2), Err(TrySendError::Full(2)));
/// assert_eq!(mb.try_recv(), Ok(1));
/// addr.send(2).unwrap();
/// ```
pub fn bounded_mailbox<M>(capacity: usize) -> (Addr<M>, Mailbox<M>) {
    assert!(
        capacity > 0,
        "a bounded mailbox needs a capacity of at least 1"
    );
    make(Some(capacity), false, None)
}

/// A new mailbox, in `block` if given (it holds `InnerArc::<M>::layout`).
fn make<M>(capacity: Option<usize>, is_task: bool, block: Option<Block>) -> (Addr<M>, Mailbox<M>) {
    let inner = Inner::new_arc(capacity, is_task, false, block);
    (
        Addr {
            inner: inner.clone(),
        },
        Mailbox {
            inner,
            stash: VecDeque::new(),
            owned_by_task: is_task,
            supervised: false,
        },
    )
}

/// The address of a [`Mailbox`]: send messages to it from anywhere.
///
/// Clonable and `Send`; two addresses are equal when they name the same
/// mailbox, and an address prints as `Addr(0x…)`, an identity stable for
/// the mailbox's life. `Eq` and `Hash` use only that identity, which never
/// changes, so addresses are sound map keys (clippy's `mutable_key_type`
/// lint cannot see that and may be allowed for them).
///
/// ```
/// use std::collections::HashSet;
///
/// let (addr, mut mb) = fibra::mailbox::<&str>();
/// let copy = addr.clone();
/// assert_eq!(addr, copy); // the same mailbox
/// let mut known = HashSet::new();
/// known.insert(addr.clone());
/// assert!(known.contains(&copy));
/// std::thread::spawn(move || copy.send("from a thread").unwrap()).join().unwrap();
/// assert_eq!(mb.try_recv(), Ok("from a thread"));
/// ```
pub struct Addr<M> {
    inner: InnerArc<M>,
}

impl<M> Addr<M> {
    /// Sends `msg` without ever blocking. Fails, handing the message back,
    /// if the mailbox is closed (its task ended)
    /// ([`TrySendError::Disconnected`]), or if it is bounded and full
    /// ([`TrySendError::Full`]).
    ///
    /// ```
    /// let (addr, mb) = fibra::mailbox();
    /// addr.send(1).unwrap();
    /// drop(mb);
    /// assert_eq!(addr.send(2).unwrap_err().into_inner(), 2);
    /// ```
    pub fn send(&self, msg: M) -> Result<(), TrySendError<M>> {
        let inner = &*self.inner;
        if let Some(room) = &inner.room {
            match room.try_acquire() {
                Ok(p) => p.forget(),
                Err(TryAcquireError::NoPermits) => return Err(TrySendError::Full(msg)),
                Err(TryAcquireError::Closed) => return Err(TrySendError::Disconnected(msg)),
            }
        }
        inner.deliver(msg).map_err(TrySendError::Disconnected)
    }

    /// The op of sending `msg`: on a bounded mailbox it commits when there is
    /// room (back-pressure); on an unbounded one at once. Yields
    /// `Err(SendError(msg))` if the mailbox is closed. If the op is never
    /// performed, or [`try_perform`](crate::Op::try_perform) hands it back,
    /// [`SendOp::into_value`] gives the message back; a send op that loses a
    /// performed choice is dropped with the choice, message included (as for
    /// channel sends).
    ///
    /// ```
    /// # fibra::run(async {
    /// let (addr, mut mb) = fibra::bounded_mailbox(1);
    /// addr.send_op(1).await.unwrap();
    /// let sender = fibra::spawn(async move { addr.send_op(2).await }); // waits for room
    /// assert_eq!(mb.recv().await, Some(1));
    /// assert_eq!(mb.recv().await, Some(2));
    /// sender.await.unwrap().unwrap();
    /// # });
    /// ```
    pub fn send_op(&self, msg: M) -> SendOp<'_, M> {
        SendOp::new(&self.inner, msg)
    }

    /// Whether the mailbox is closed: sends fail from now on.
    ///
    /// ```
    /// let (addr, mb) = fibra::mailbox::<u8>();
    /// assert!(!addr.is_closed());
    /// drop(mb);
    /// assert!(addr.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The op that becomes ready when the mailbox's task ends (Erlang's
    /// monitor), yielding how it ended. For a mailbox made by [`mailbox`],
    /// when the mailbox is closed or dropped ([`Exit::Closed`]).
    ///
    /// By then the death is complete: its links were signalled (a trapping
    /// actor has the [`ExitSignal`] in its mailbox) and its registered names
    /// are free to take again.
    ///
    /// ```
    /// use fibra::Exit;
    ///
    /// fibra::run(async {
    ///     let addr = fibra::spawn_actor(|mut mb| async move {
    ///         let n: u32 = mb.recv().await.unwrap();
    ///         assert!(n < 10, "too big");
    ///     });
    ///     addr.send(99).unwrap();
    ///     match addr.exited_op().await {
    ///         Exit::Panicked(msg) => assert!(msg.contains("too big")),
    ///         other => panic!("{other:?}"),
    ///     }
    /// });
    /// ```
    pub fn exited_op(&self) -> crate::sync::GetOp<'_, Exit> {
        self.inner.exit.get_op()
    }

    /// Waits until the mailbox's task ends; see [`exited_op`](Self::exited_op).
    ///
    /// ```
    /// fibra::run(async {
    ///     let addr = fibra::spawn_actor(|mut mb: fibra::Mailbox<u8>| async move {
    ///         mb.recv().await;
    ///     });
    ///     addr.send(1).unwrap();
    ///     assert_eq!(addr.exited().await, fibra::Exit::Normal);
    /// });
    /// ```
    pub async fn exited(&self) -> Exit {
        self.exited_op().await
    }

    /// How the mailbox's task ended, if it did.
    ///
    /// ```
    /// let (addr, mb) = fibra::mailbox::<u8>();
    /// assert_eq!(addr.try_exited(), None);
    /// drop(mb);
    /// assert_eq!(addr.try_exited(), Some(fibra::Exit::Closed));
    /// ```
    pub fn try_exited(&self) -> Option<Exit> {
        self.inner.exit.try_get()
    }

    /// A handle that watches the task's end without being an address: it
    /// does not keep the mailbox open (an actor whose addresses are all gone
    /// still sees `recv` return `None`), and it is not generic, so monitors
    /// of actors of different message types fit in one collection. It
    /// keeps the mailbox's memory (a few hundred bytes, its first block of
    /// messages included) until it is dropped.
    ///
    /// ```
    /// use fibra::Exit;
    ///
    /// fibra::run(async {
    ///     let addr = fibra::spawn_actor(|mut mb| async move {
    ///         while let Some(()) = mb.recv().await {}
    ///     });
    ///     let monitor = addr.monitor();
    ///     drop(addr); // the actor's recv returns None: it ends
    ///     assert_eq!(monitor.exited().await, Exit::Normal);
    /// });
    /// ```
    pub fn monitor(&self) -> Monitor
    where
        M: Send + 'static,
    {
        Monitor {
            exit: Box::new(self.inner.clone()),
        }
    }

    /// This mailbox's identity, as [`ExitSignal::from`] names it.
    ///
    /// ```
    /// let (a, mb) = fibra::mailbox::<()>();
    /// assert_eq!(a.id(), mb.addr().id());
    /// assert_ne!(a.id(), fibra::mailbox::<()>().0.id());
    /// ```
    pub fn id(&self) -> ActorId {
        self.inner.actor_id()
    }

    /// Links this mailbox's actor with `other`'s (Erlang's `link`): when
    /// either ends, the other receives an exit signal. An actor that traps
    /// exits ([`Mailbox::trap_exits`]) gets it as a message; otherwise a
    /// death other than [`Exit::Normal`] kills it (see [`kill`](Self::kill))
    /// with [`Exit::Linked`], which its own links then see in turn
    /// ([`Exit::Normal`] and [`Exit::Closed`] kill nobody). A link
    /// is symmetric, made once however often it is asked for, and removed
    /// by [`unlink`](Self::unlink) or by either death. Linking to an actor
    /// that already ended signals at once, as that death would have.
    ///
    /// A mailbox made by [`mailbox`] (not an actor's) links too: a kill
    /// closes it, and its close or drop is its death ([`Exit::Closed`]).
    ///
    /// ```
    /// use fibra::Exit;
    ///
    /// fibra::run(async {
    ///     let worker = fibra::spawn_actor(|mut mb| async move {
    ///         let n: u32 = mb.recv().await.unwrap();
    ///         assert!(n != 13, "unlucky");
    ///     });
    ///     let partner = fibra::spawn_actor(|mut mb| async move {
    ///         while let Some(()) = mb.recv().await {} // waits forever
    ///     });
    ///     partner.link(&worker);
    ///     worker.send(13).unwrap();
    ///     let died = Exit::Panicked("unlucky".into());
    ///     assert_eq!(worker.exited().await, died);
    ///     assert_eq!(partner.exited().await, Exit::Linked(Box::new(died)));
    /// });
    /// ```
    pub fn link<N: Send + 'static>(&self, other: &Addr<N>)
    where
        M: Send + 'static,
    {
        link::link(&self.inner, &other.inner);
    }

    /// Removes the link between this mailbox's actor and `other`'s, if any.
    ///
    /// ```
    /// let (a, _ma) = fibra::mailbox::<()>();
    /// let (b, mb) = fibra::mailbox::<()>();
    /// a.link(&b);
    /// a.unlink(&b);
    /// drop(mb); // b's death no longer reaches a
    /// assert!(!a.is_closed());
    /// ```
    pub fn unlink<N: Send + 'static>(&self, other: &Addr<N>)
    where
        M: Send + 'static,
    {
        link::unlink(&self.inner, &other.inner);
    }

    /// Kills the actor (Erlang's `exit(Pid, kill)`): its task is woken if
    /// it waits, and at its next poll its body is dropped — not interrupted
    /// mid-poll, as [`JoinHandle::abort`](crate::JoinHandle::abort) — which
    /// closes its mailbox (the messages still inside are dropped) and ends
    /// it with [`Exit::Killed`]; its links see that exit. Killing an actor
    /// that already ended does nothing; a kill cannot be trapped. A
    /// supervised child's life is killed, and its supervisor decides what
    /// follows (see [`Supervisor`](crate::actors::Supervisor)).
    ///
    /// A mailbox made by [`mailbox`] is closed at once instead.
    ///
    /// ```
    /// use fibra::Exit;
    ///
    /// fibra::run(async {
    ///     let stuck = fibra::spawn_actor(|_mb: fibra::Mailbox<()>| std::future::pending::<()>());
    ///     stuck.kill();
    ///     assert_eq!(stuck.exited().await, Exit::Killed);
    /// });
    /// ```
    pub fn kill(&self) {
        self.inner.kill(Exit::Killed);
    }

    fn ptr(&self) -> *const Inner<M> {
        InnerArc::as_ptr(&self.inner)
    }
}

impl<M> Clone for Addr<M> {
    fn clone(&self) -> Self {
        // Relaxed, like `Arc::clone`: this handle keeps the count above 0.
        self.inner.addrs.fetch_add(1, Ordering::Relaxed);
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<M> Drop for Addr<M> {
    fn drop(&mut self) {
        // AcqRel: our pushes happen before a receiver's Acquire read of 0.
        if self.inner.addrs.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.wake_receiver();
        }
    }
}

impl<M> PartialEq for Addr<M> {
    fn eq(&self, other: &Self) -> bool {
        self.ptr() == other.ptr()
    }
}

impl<M> Eq for Addr<M> {}

impl<M> Hash for Addr<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.ptr().hash(state);
    }
}

impl<M> fmt::Debug for Addr<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Addr({:p})", self.ptr())
    }
}

impl<M> fmt::Display for Addr<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Watches how a mailbox's task ends, without keeping the mailbox open:
/// made by [`Addr::monitor`].
///
/// ```
/// fibra::run(async {
///     let addr = fibra::spawn_actor(|mut mb: fibra::Mailbox<u8>| async move {
///         while mb.recv().await.is_some() {}
///     });
///     let monitor: fibra::Monitor = addr.monitor();
///     drop(addr); // a monitor does not keep the actor's mailbox open
///     assert_eq!(monitor.exited().await, fibra::Exit::Normal);
/// });
/// ```
pub struct Monitor {
    /// The mailbox (not an address: it does not keep the mailbox open),
    /// whatever its message type.
    exit: Box<dyn Exited>,
}

/// A mailbox seen from a monitor: its exit, whatever its message type.
trait Exited: Send + Sync {
    fn exit(&self) -> &IVar<Exit>;
    fn clone_box(&self) -> Box<dyn Exited>;
}

impl<M: Send + 'static> Exited for InnerArc<M> {
    fn exit(&self) -> &IVar<Exit> {
        &self.exit
    }

    fn clone_box(&self) -> Box<dyn Exited> {
        Box::new(self.clone())
    }
}

impl Clone for Monitor {
    fn clone(&self) -> Self {
        Monitor {
            exit: self.exit.clone_box(),
        }
    }
}

impl Monitor {
    /// The op that becomes ready when the task ends; see [`Addr::exited_op`].
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased};
    ///
    /// let (addr, mb) = fibra::mailbox::<u8>();
    /// let monitor = addr.monitor();
    /// let now = || choose_biased((monitor.exited_op().wrap(Some), always(None))).perform();
    /// assert_eq!(now(), None); // still open
    /// drop(mb);
    /// assert_eq!(now(), Some(fibra::Exit::Closed));
    /// ```
    pub fn exited_op(&self) -> crate::sync::GetOp<'_, Exit> {
        self.exit.exit().get_op()
    }

    /// Waits until the task ends.
    ///
    /// ```
    /// let (addr, mb) = fibra::mailbox::<u8>();
    /// let monitor = addr.monitor();
    /// drop(mb);
    /// let exit = futures::executor::block_on(monitor.exited());
    /// assert_eq!(exit, fibra::Exit::Closed);
    /// ```
    pub async fn exited(&self) -> Exit {
        self.exited_op().await
    }

    /// How the task ended, if it did.
    ///
    /// ```
    /// let (addr, mb) = fibra::mailbox::<u8>();
    /// let monitor = addr.monitor();
    /// assert_eq!(monitor.try_exited(), None);
    /// drop(mb);
    /// assert_eq!(monitor.try_exited(), Some(fibra::Exit::Closed));
    /// ```
    pub fn try_exited(&self) -> Option<Exit> {
        self.exit.exit().try_get()
    }
}

impl fmt::Debug for Monitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Monitor")
            .field("exit", &self.try_exited())
            .finish()
    }
}

/// The receiving end of a mailbox: one owner takes the messages.
///
/// Every receive is cancel-safe: a message is taken only by the receive
/// that returns it. Messages skipped by a selective receive stay, in their
/// order, for later receives. Dropping the mailbox closes it: later sends
/// fail and hand their message back, and the messages still inside are
/// dropped (as in Erlang when a process ends).
///
/// ```
/// fibra::run(async {
///     let (addr, mut mb) = fibra::mailbox::<String>();
///     addr.send("one".into()).unwrap();
///     addr.send("two".into()).unwrap();
///     drop(addr); // no address left: receives drain, then return None
///     let mut got = Vec::new();
///     while let Some(m) = mb.recv().await {
///         got.push(m);
///     }
///     assert_eq!(got, ["one", "two"]);
/// });
/// ```
pub struct Mailbox<M> {
    inner: InnerArc<M>,
    /// Messages taken out of the queue but not yet received: skipped by a
    /// selective receive, or put back by a receive that lost a choice. They
    /// come before everything still in the queue.
    stash: VecDeque<M>,
    /// Set by `spawn_actor`: the task's end, not the mailbox's drop, fills
    /// `exit`.
    owned_by_task: bool,
    /// One life of a supervised child: dropping it leaves the mailbox open
    /// and hands the stash to the next life.
    supervised: bool,
}

impl<M> Mailbox<M> {
    /// A new address of this mailbox (to hand out, or to send to itself).
    ///
    /// ```
    /// let (_, mut mb) = fibra::mailbox();
    /// mb.addr().send("note to self").unwrap();
    /// assert_eq!(mb.try_recv(), Ok("note to self"));
    /// ```
    pub fn addr(&self) -> Addr<M> {
        self.inner.addrs.fetch_add(1, Ordering::Relaxed);
        Addr {
            inner: self.inner.clone(),
        }
    }

    /// Traps exits (Erlang's `process_flag(trap_exit, true)`): from now on
    /// the death of a linked actor ([`Addr::link`]) does not kill this one
    /// but arrives as a message, `into(signal)`, queued after every message
    /// that actor sent before it ended — so it is received with
    /// [`recv`](Self::recv) or, in a choice, [`recv_op`](Self::recv_op) /
    /// [`recv_matching_op`](Self::recv_matching_op). Normal deaths arrive
    /// too. A panic in `into` kills this actor ([`Exit::Panicked`]).
    ///
    /// # Panics
    ///
    /// On a mailbox made by [`bounded_mailbox`]: a signal must never be
    /// refused for want of room.
    ///
    /// ```
    /// use fibra::{Exit, ExitSignal};
    ///
    /// enum Msg {
    ///     Work(u32),
    ///     Died(ExitSignal),
    /// }
    ///
    /// fibra::run(async {
    ///     let (me, mut mb) = fibra::mailbox::<Msg>();
    ///     mb.trap_exits(Msg::Died);
    ///     let worker = fibra::spawn_actor(|mut wmb| async move {
    ///         let _: Option<()> = wmb.recv().await;
    ///         panic!("worker gave up");
    ///     });
    ///     me.link(&worker);
    ///     me.send(Msg::Work(1)).unwrap();
    ///     worker.send(()).unwrap();
    ///     assert!(matches!(mb.recv().await, Some(Msg::Work(1))));
    ///     match mb.recv().await {
    ///         Some(Msg::Died(s)) => {
    ///             assert_eq!(s.from, worker.id());
    ///             assert_eq!(s.exit, Exit::Panicked("worker gave up".into()));
    ///         }
    ///         _ => panic!("expected the worker's exit signal"),
    ///     }
    /// });
    /// ```
    pub fn trap_exits(&mut self, into: impl Fn(ExitSignal) -> M + Send + Sync + 'static) {
        assert!(
            self.inner.room.is_none(),
            "a bounded mailbox cannot trap exits: a signal must never wait for room"
        );
        lock(&self.inner.ctl).rare().trap = Some(std::sync::Arc::new(into));
    }

    /// Stops trapping exits: a linked death kills this actor again.
    ///
    /// ```
    /// let (_, mut mb) = fibra::mailbox::<fibra::ExitSignal>();
    /// mb.trap_exits(|s| s);
    /// mb.untrap_exits();
    /// ```
    pub fn untrap_exits(&mut self) {
        if let Some(rare) = lock(&self.inner.ctl).rare.as_mut() {
            rare.trap = None;
        }
    }

    /// Links this mailbox's actor with `other`'s: see [`Addr::link`].
    ///
    /// ```
    /// use fibra::Exit;
    ///
    /// fibra::run(async {
    ///     let (me, mb) = fibra::mailbox::<()>();
    ///     let worker = fibra::spawn_actor(|mut wmb| async move {
    ///         let _: Option<()> = wmb.recv().await;
    ///         panic!("crashed");
    ///     });
    ///     mb.link(&worker);
    ///     worker.send(()).unwrap();
    ///     // Not trapping exits: the crash kills (closes) this mailbox.
    ///     let crashed = Exit::Panicked("crashed".into());
    ///     assert_eq!(me.exited().await, Exit::Linked(Box::new(crashed)));
    ///     assert!(me.is_closed());
    /// });
    /// ```
    pub fn link<N: Send + 'static>(&self, other: &Addr<N>)
    where
        M: Send + 'static,
    {
        link::link(&self.inner, &other.inner);
    }

    /// Waits for the next message. `None` once the mailbox is closed or no
    /// address is left, and it is empty.
    ///
    /// Cancel-safe: a message is taken only when the future returns it. A
    /// plain wait, cheaper than [`recv_op`](Self::recv_op) (which is for
    /// choices).
    ///
    /// ```
    /// let (addr, mut mb) = fibra::mailbox();
    /// addr.send(1).unwrap();
    /// drop(addr);
    /// futures::executor::block_on(async {
    ///     assert_eq!(mb.recv().await, Some(1));
    ///     assert_eq!(mb.recv().await, None); // no address left
    /// });
    /// ```
    pub fn recv(&mut self) -> Recv<'_, M> {
        Recv::new(self)
    }

    /// Waits for the next message, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let (addr, mut mb) = fibra::mailbox::<u32>();
    /// std::thread::spawn(move || addr.send(7).unwrap());
    /// assert_eq!(mb.recv_blocking(), Some(7));
    /// assert_eq!(mb.recv_blocking(), None); // the thread's address is gone
    /// ```
    pub fn recv_blocking(&mut self) -> Option<M> {
        self.recv_op().perform()
    }

    /// Takes the next message if there is one now.
    ///
    /// ```
    /// use fibra::TryRecvError;
    ///
    /// let (addr, mut mb) = fibra::mailbox::<u32>();
    /// assert_eq!(mb.try_recv(), Err(TryRecvError::Empty));
    /// addr.send(1).unwrap();
    /// assert_eq!(mb.try_recv(), Ok(1));
    /// drop(addr);
    /// assert_eq!(mb.try_recv(), Err(TryRecvError::Disconnected));
    /// ```
    pub fn try_recv(&mut self) -> Result<M, TryRecvError> {
        match self.take_delivered() {
            Some(m) => Ok(m),
            // Look once more: a message sent before the last address went is
            // visible now.
            None if self.is_disconnected() => {
                self.take_delivered().ok_or(TryRecvError::Disconnected)
            }
            None => Err(TryRecvError::Empty),
        }
    }

    /// Waits at most `timeout` for the next message.
    ///
    /// ```
    /// use fibra::RecvTimeoutError;
    /// use std::time::Duration;
    ///
    /// # fibra::run(async {
    /// let (addr, mut mb) = fibra::mailbox::<u8>();
    /// let t = Duration::from_millis(5);
    /// assert_eq!(mb.recv_timeout(t).await, Err(RecvTimeoutError::Timeout));
    /// addr.send(1).unwrap();
    /// assert_eq!(mb.recv_timeout(t).await, Ok(1));
    /// drop(addr);
    /// assert_eq!(mb.recv_timeout(t).await, Err(RecvTimeoutError::Disconnected));
    /// # });
    /// ```
    pub async fn recv_timeout(&mut self, timeout: Duration) -> Result<M, RecvTimeoutError> {
        match crate::time::timeout(self.recv_op(), timeout).await {
            Ok(Some(m)) => Ok(m),
            Ok(None) => Err(RecvTimeoutError::Disconnected),
            Err(_) => Err(RecvTimeoutError::Timeout),
        }
    }

    /// The op of receiving the next message (Racket's `thread-receive-evt`):
    /// yields `Some(message)`, or `None` once the mailbox is closed or no
    /// address is left, and it is empty.
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased};
    ///
    /// let (addr, mut mb) = fibra::mailbox();
    /// addr.send(5).unwrap();
    /// let got = choose_biased((mb.recv_op(), always(None))).perform();
    /// assert_eq!(got, Some(5));
    /// ```
    pub fn recv_op(&mut self) -> RecvOp<'_, M> {
        RecvOp::new(self)
    }

    /// Waits for the first message that `pred` accepts and takes it; the
    /// messages before it stay in the mailbox, in order (Erlang's selective
    /// `receive`). `None` once the mailbox is closed or no address is left,
    /// and no message matches.
    ///
    /// Each message is examined once per selective receive, however often
    /// the receive wakes: the cost follows the messages examined, not the
    /// size of the mailbox.
    ///
    /// ```
    /// # fibra::run(async {
    /// let (addr, mut mb) = fibra::mailbox();
    /// for m in ["a1", "b1", "a2", "b2"] {
    ///     addr.send(m).unwrap();
    /// }
    /// assert_eq!(mb.recv_matching(|m| m.starts_with('b')).await, Some("b1"));
    /// assert_eq!(mb.recv().await, Some("a1"));
    /// assert_eq!(mb.recv().await, Some("a2"));
    /// assert_eq!(mb.recv().await, Some("b2"));
    /// # });
    /// ```
    pub async fn recv_matching<P: FnMut(&M) -> bool>(&mut self, pred: P) -> Option<M> {
        self.recv_matching_op(pred).await
    }

    /// The op of a selective receive: see [`recv_matching`](Self::recv_matching).
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased};
    ///
    /// let (addr, mut mb) = fibra::mailbox();
    /// for m in [1, 10, 2, 20] {
    ///     addr.send(m).unwrap();
    /// }
    /// let big = choose_biased((mb.recv_matching_op(|&m| m >= 10), always(None))).perform();
    /// assert_eq!(big, Some(10));
    /// assert_eq!(mb.try_recv(), Ok(1)); // skipped messages stay, in order
    /// ```
    pub fn recv_matching_op<P: FnMut(&M) -> bool>(&mut self, pred: P) -> RecvMatchingOp<'_, M, P> {
        RecvMatchingOp::new(self, pred)
    }

    /// Takes the first message that `pred` accepts, if there is one now.
    ///
    /// ```
    /// let (addr, mut mb) = fibra::mailbox();
    /// for m in ["a", "b", "c"] {
    ///     addr.send(m).unwrap();
    /// }
    /// assert_eq!(mb.try_recv_matching(|m| *m == "b"), Some("b"));
    /// assert_eq!(mb.try_recv_matching(|m| *m == "z"), None);
    /// assert_eq!(mb.try_recv(), Ok("a"));
    /// ```
    pub fn try_recv_matching(&mut self, mut pred: impl FnMut(&M) -> bool) -> Option<M> {
        let mut seen = 0;
        let i = self.find_matching(&mut seen, &mut pred)?;
        self.release_room(1);
        self.stash.remove(i)
    }

    /// Messages waiting now (a snapshot; senders may be adding more).
    ///
    /// ```
    /// let (addr, mut mb) = fibra::mailbox();
    /// addr.send(1).unwrap();
    /// addr.send(2).unwrap();
    /// assert_eq!(mb.len(), 2);
    /// ```
    pub fn len(&mut self) -> usize {
        self.pull_all();
        self.stash.len()
    }

    /// Whether no message is waiting now.
    ///
    /// ```
    /// let (addr, mut mb) = fibra::mailbox();
    /// assert!(mb.is_empty());
    /// addr.send(()).unwrap();
    /// assert!(!mb.is_empty());
    /// ```
    pub fn is_empty(&mut self) -> bool {
        self.len() == 0
    }

    /// Closes the mailbox: sends fail from now on and hand their message
    /// back; the messages already inside can still be received.
    ///
    /// ```
    /// let (addr, mut mb) = fibra::mailbox();
    /// addr.send(1).unwrap();
    /// mb.close();
    /// assert_eq!(addr.send(2).unwrap_err().into_inner(), 2); // sends fail now
    /// assert_eq!(mb.try_recv(), Ok(1)); // what was inside can still be received
    /// ```
    pub fn close(&mut self) {
        self.inner.close_by_receiver();
        if !self.owned_by_task {
            self.inner.end_for_good(Exit::Closed);
        }
    }

    // Internals shared with the ops.

    /// The next message: the stash first, then the queue.
    #[inline(always)]
    fn take_next(&mut self) -> Option<M> {
        if let Some(m) = self.stash.pop_front() {
            return Some(m);
        }
        // SAFETY: `&mut self`: we are the single consumer.
        unsafe { self.inner.queue.pop() }
    }

    /// The next message, received: its room (if bounded) is given back.
    /// Inlined: it is every receive's fast path (measured, issue 18's
    /// entry in `docs/bench/LOG.md`).
    #[inline(always)]
    fn take_delivered(&mut self) -> Option<M> {
        let m = self.take_next()?;
        self.release_room(1);
        Some(m)
    }

    /// Moves every queued message into the stash.
    fn pull_all(&mut self) {
        // SAFETY: `&mut self`: we are the single consumer.
        while let Some(m) = unsafe { self.inner.queue.pop() } {
            self.stash.push_back(m);
        }
    }

    /// The stash index of the first message `pred` accepts, examining the
    /// stash from `*seen` and then the queue (moving what it examines into
    /// the stash first, so a panicking predicate loses nothing).
    fn find_matching(
        &mut self,
        seen: &mut usize,
        pred: &mut impl FnMut(&M) -> bool,
    ) -> Option<usize> {
        loop {
            while *seen < self.stash.len() {
                if pred(&self.stash[*seen]) {
                    return Some(*seen);
                }
                *seen += 1;
            }
            // SAFETY: `&mut self`: we are the single consumer.
            self.stash.push_back(unsafe { self.inner.queue.pop() }?);
        }
    }

    /// No message can arrive any more: closed, or no address left.
    fn is_disconnected(&self) -> bool {
        // Acquire: every push by a handle happens before its last decrement.
        self.inner.is_closed() || self.inner.addrs.load(Ordering::Acquire) == 0
    }

    fn release_room(&self, n: usize) {
        if let Some(room) = &self.inner.room {
            room.release(n);
        }
    }

    /// Parks the receiver (see `Queue::park`); `false` if messages came or
    /// nothing can come any more: look again.
    fn park(&self, waker: &std::task::Waker) -> bool {
        // SAFETY: `&self` of the mailbox, whose receive ops hold it by
        // `&mut`: we are the single consumer.
        unsafe { self.inner.queue.park(waker, || self.is_disconnected()) }
    }

    fn unpark(&self) {
        // SAFETY: as for `park`.
        unsafe { self.inner.queue.unpark() }
    }
}

// Nothing in a mailbox is ever pinned (its messages move in and out of the
// stash freely), so pinning one promises nothing: its `Stream` impl takes
// `Pin<&mut Self>` and uses it as `&mut Self`.
impl<M> Unpin for Mailbox<M> {}

impl<M> Drop for Mailbox<M> {
    fn drop(&mut self) {
        if self.supervised {
            // The next life receives what this one took out but did not
            // receive, then the queue.
            let stash = std::mem::take(&mut self.stash);
            lock(&self.inner.ctl).rare().handover = stash;
            // SAFETY: we are the single consumer until the next life.
            unsafe { self.inner.queue.forget_waker() };
            return;
        }
        self.inner.close_by_receiver();
        if !self.owned_by_task {
            self.inner.end_for_good(Exit::Closed);
        }
        self.pull_all();
        // SAFETY: we are the single consumer, and it is going away.
        unsafe { self.inner.queue.forget_waker() };
        // The stash (and what was queued) drops with `self`.
    }
}

impl<M> fmt::Debug for Mailbox<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mailbox")
            .field("addr", &InnerArc::as_ptr(&self.inner))
            .field("stashed", &self.stash.len())
            .field("closed", &self.inner.is_closed())
            .finish()
    }
}
