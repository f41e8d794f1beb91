//! Links, kills and trapped exits: what an actor's death does to the actors
//! linked to it (Erlang's `link`, `exit(Pid, kill)` and `trap_exit`).
//!
//! Invariants:
//! * Each mailbox has one `Control`, behind its own lock (`Inner::ctl`). The
//!   lock is never held while user code runs (a trap converter) or while a
//!   waker is woken, and never while another mailbox's lock is taken —
//!   except in `link`, which takes two, lower address first.
//! * A link is symmetric: `a` is in `b.links` iff `b` is in `a.links`, both
//!   changed under both locks (`link`, `unlink`). A death takes its own
//!   list (setting `dead` in the same critical section), then signals each
//!   peer, which removes the dead one from its list under its own lock. So
//!   a link racing a death either is made while both live (the death finds
//!   it) or sees one side `dead` and signals the other at once: a linked
//!   death is never missed, and delivered once (loom model
//!   `loom_link_racing_both_deaths`).
//! * A mailbox's final end (`end_for_good`) publishes its exit only after
//!   the death signalled its links and freed its names: whoever sees the
//!   exit sees those done (loom model `loom_exit_seen_after_the_links_are_signalled`).
//!   A link made in between finds the life `dead` but no exit yet; it
//!   joins the list as if the life were alive, and the end drains the list
//!   once more after publishing, under the lock, so a later link sees the
//!   exit and signals itself.
//! * `dead` is true from the current life's end until a supervisor starts
//!   the next one (`revive`); a dead life takes no kill or name.
//! * `killed` (atomic) mirrors `kill.is_some()` for the actor's task, which
//!   reads it at the start of every poll without the lock. A kill sets it
//!   under the lock and then wakes the task's registered waker; the task
//!   registers its waker under the lock and then reads `killed`: either the
//!   kill sees the waker, or the task sees the flag.

use super::{Exit, Inner, InnerArc};
use crate::loom::{Mutex, Ordering, lock};
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::Waker;

/// Identifies an actor (its mailbox) in an [`ExitSignal`]: compare it with
/// [`Addr::id`](super::Addr::id). Unique among live mailboxes; a mailbox
/// freed may see its id reused by a later one.
///
/// ```
/// let (a, _ma) = fibra::mailbox::<()>();
/// let (b, _mb) = fibra::mailbox::<()>();
/// assert_eq!(a.id(), a.clone().id());
/// assert_ne!(a.id(), b.id());
/// assert!(a.id().to_string().starts_with("Actor(0x"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActorId(pub(crate) usize);

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Actor({:#x})", self.0)
    }
}

/// An address's identity, as [`Addr::id`](super::Addr::id) gives it (so
/// that calls naming an actor, such as
/// [`SupervisorRef::terminate_child`](crate::SupervisorRef::terminate_child),
/// take `&addr`).
///
/// ```
/// let (a, _ma) = fibra::mailbox::<()>();
/// assert_eq!(fibra::ActorId::from(&a), a.id());
/// ```
impl<M> From<&super::Addr<M>> for ActorId {
    fn from(addr: &super::Addr<M>) -> Self {
        addr.id()
    }
}

/// A linked actor's death, delivered as a message to an actor that traps
/// exits ([`Mailbox::trap_exits`](super::Mailbox::trap_exits)).
///
/// ```
/// use fibra::{Exit, ExitSignal};
///
/// let (me, mut mb) = fibra::mailbox::<ExitSignal>();
/// mb.trap_exits(|signal| signal);
/// let (other, other_mb) = fibra::mailbox::<()>();
/// me.link(&other);
/// drop(other_mb); // its end: closed
/// let signal = mb.try_recv().unwrap();
/// assert_eq!((signal.from, signal.exit), (other.id(), Exit::Closed));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExitSignal {
    /// The actor that ended.
    pub from: ActorId,
    /// How it ended.
    pub exit: Exit,
}

/// Turns an exit signal into a message of the trapping mailbox. A `std`
/// `Arc` (loom's cannot hold a closure): it is immutable, shared only to
/// call it outside the lock.
pub(crate) type Trap<M> = std::sync::Arc<dyn Fn(ExitSignal) -> M + Send + Sync>;

/// A mailbox's life: links, kill request, waker; the rarely used parts
/// (trap, names, a supervised child's handover) are boxed, so a mailbox
/// that uses none of them stays small.
pub(crate) struct Control<M> {
    /// Peers linked to the current life.
    pub(crate) links: Vec<Box<dyn LinkEnd>>,
    /// The actor task's waker, registered at its first `Pending` poll.
    pub(crate) waker: Option<Waker>,
    /// A kill requested for the current life, with the exit it will report.
    pub(crate) kill: Option<Box<Exit>>,
    /// The current life has ended. Its exit is the mailbox's `exit` (or,
    /// between a supervised child's lives, `Rare::last_exit`).
    pub(crate) dead: bool,
    /// Owned by an actor task (a kill wakes it), not a plain mailbox (a kill
    /// closes it).
    pub(crate) is_task: bool,
    /// A supervised child: its mailbox outlives each life.
    pub(crate) supervised: bool,
    pub(crate) rare: Option<Box<Rare<M>>>,
}

/// The parts of a `Control` few mailboxes use.
pub(crate) struct Rare<M> {
    pub(crate) trap: Option<Trap<M>>,
    /// Names this mailbox is registered under (`registry.rs`).
    pub(crate) names: Vec<String>,
    /// Process groups this mailbox is in, once per membership (`pg.rs`).
    pub(crate) groups: Vec<String>,
    /// Messages a supervised life took out of the queue but did not
    /// receive: the next life receives them first.
    pub(crate) handover: VecDeque<M>,
    /// How a supervised child's last life ended.
    pub(crate) last_exit: Option<Exit>,
}

impl<M> Control<M> {
    pub(crate) fn new(is_task: bool, supervised: bool) -> Mutex<Self> {
        Mutex::new(Control {
            links: Vec::new(),
            waker: None,
            kill: None,
            dead: false,
            is_task,
            supervised,
            rare: None,
        })
    }

    pub(crate) fn rare(&mut self) -> &mut Rare<M> {
        self.rare.get_or_insert_with(|| {
            Box::new(Rare {
                trap: None,
                names: Vec::new(),
                groups: Vec::new(),
                handover: VecDeque::new(),
                last_exit: None,
            })
        })
    }

    fn trap(&self) -> Option<Trap<M>> {
        self.rare.as_ref().and_then(|r| r.trap.clone())
    }

    fn take_names(&mut self) -> Names {
        self.rare
            .as_mut()
            .map(|r| Names {
                registered: std::mem::take(&mut r.names),
                groups: std::mem::take(&mut r.groups),
            })
            .unwrap_or_default()
    }
}

/// What a mailbox's final end frees: its registered names and its process
/// group memberships.
#[derive(Default)]
struct Names {
    registered: Vec<String>,
    groups: Vec<String>,
}

impl Names {
    /// Frees them (after the mailbox's lock is released: `registry.rs` and
    /// `pg.rs` take their tables' locks before a mailbox's).
    fn forget(self, me: ActorId) {
        if !self.registered.is_empty() {
            super::registry::forget(&self.registered, me);
        }
        if !self.groups.is_empty() {
            super::pg::forget(&self.groups, me);
        }
    }
}

/// A mailbox seen from a linked peer, whatever its message type.
pub(crate) trait LinkEnd: Send + Sync {
    fn id(&self) -> ActorId;
    /// A linked peer `from` ended with `exit`.
    fn signal(&self, from: ActorId, exit: &Exit);
    fn remove_link(&self, peer: ActorId);
}

impl<M: Send + 'static> LinkEnd for InnerArc<M> {
    fn id(&self) -> ActorId {
        ActorId(InnerArc::as_ptr(self) as *const () as usize)
    }

    fn signal(&self, from: ActorId, exit: &Exit) {
        let mut c = lock(&self.ctl);
        if c.dead {
            return;
        }
        c.links.retain(|p| p.id() != from);
        if let Some(trap) = c.trap() {
            drop(c);
            let signal = ExitSignal {
                from,
                exit: exit.clone(),
            };
            match catch_unwind(AssertUnwindSafe(|| trap(signal))) {
                // Refused only if the mailbox closed meanwhile: its owner
                // is ending, and the message goes with the mailbox.
                Ok(msg) => drop(self.queue_signal(msg)),
                Err(p) => self.kill(Exit::Panicked(super::actor::panic_message(&*p))),
            }
            return;
        }
        drop(c);
        if exit.is_abnormal() {
            self.kill(Exit::Linked(Box::new(exit.root().clone())));
        }
    }

    fn remove_link(&self, peer: ActorId) {
        lock(&self.ctl).links.retain(|p| p.id() != peer);
    }
}

impl<M> Inner<M> {
    /// Ends the mailbox for good with `exit`, unless it already ended: its
    /// life dies, then `exit` is published (see the invariants).
    pub(crate) fn end_for_good(&self, exit: Exit) {
        if self.die(&exit, self.actor_id(), true) {
            self.publish_exit(exit);
        }
    }

    /// Publishes the mailbox's final `exit`, after its last life died
    /// (`die` with `last`), then signals the links made meanwhile.
    pub(crate) fn publish_exit(&self, exit: Exit) {
        // Only the caller that ended the mailbox publishes: the put is not
        // refused.
        let _ = self.exit.put(exit);
        let late = std::mem::take(&mut lock(&self.ctl).links);
        if late.is_empty() {
            return;
        }
        // Full for good once put (by this call or an earlier one).
        let exit = self.exit.get_ref().expect("the exit was put above");
        let me = self.actor_id();
        for peer in late {
            peer.signal(me, exit);
        }
    }

    /// Ends the current life with `exit` (once): takes its links and signals
    /// each peer; on the mailbox's final end (`last`), also frees its names.
    /// Returns whether this call ended the life (not if it was dead before).
    pub(crate) fn die(&self, exit: &Exit, me: ActorId, last: bool) -> bool {
        let mut c = lock(&self.ctl);
        if c.dead {
            // The life ended before; a supervisor now ends the mailbox.
            let names = if last {
                c.take_names()
            } else {
                Names::default()
            };
            drop(c);
            names.forget(me);
            return false;
        }
        c.dead = true;
        if c.links.is_empty() && c.rare.is_none() && !c.supervised {
            // Most deaths: no link to signal, no name to free, no
            // supervised life's exit to keep.
            let waker = c.waker.take();
            drop(c);
            drop(waker);
            return true;
        }
        if c.supervised && !last {
            c.rare().last_exit = Some(exit.clone());
        }
        let links = std::mem::take(&mut c.links);
        let waker = c.waker.take();
        let names = if last {
            c.take_names()
        } else {
            Names::default()
        };
        drop(c);
        drop(waker);
        for peer in links {
            peer.signal(me, exit);
        }
        names.forget(me);
        true
    }

    /// Kills the current life, which will end with `exit`: an actor task is
    /// woken and drops its body at its next poll; a plain mailbox is closed
    /// at once. A life already dead, or already being killed, is left alone.
    pub(crate) fn kill(&self, exit: Exit) {
        let mut c = lock(&self.ctl);
        if c.dead || c.kill.is_some() {
            return;
        }
        if c.is_task {
            c.kill = Some(Box::new(exit));
            // Release: with the lock, pairs with the task's Acquire load
            // at its next poll (which then takes `kill` under the lock).
            self.killed.store(true, Ordering::Release);
            let waker = c.waker.clone();
            drop(c);
            if let Some(w) = waker {
                crate::wake::wake(w);
            }
        } else {
            drop(c);
            self.close();
            self.end_for_good(exit);
        }
    }

    /// The task's side of a kill: registers its waker (first `Pending`
    /// poll) and reports whether it was killed meanwhile.
    pub(crate) fn register_task_waker(&self, waker: &Waker) -> bool {
        let mut c = lock(&self.ctl);
        c.waker = Some(waker.clone());
        c.kill.is_some()
    }

    /// The exit a kill asked for, if the current life was killed.
    ///
    /// Inlined, the lock out of line: the actor's task asks at every poll,
    /// and is almost never killed.
    #[inline]
    pub(crate) fn take_kill(&self) -> Option<Exit> {
        // Acquire: pairs with `kill`'s Release store.
        if !self.killed.load(Ordering::Acquire) {
            return None;
        }
        self.killed_exit()
    }

    #[cold]
    #[inline(never)]
    fn killed_exit(&self) -> Option<Exit> {
        lock(&self.ctl).kill.as_deref().cloned()
    }

    /// How the current life ended, for a link made after it: `None` while
    /// it lives, and while its final end signals the links it had (the
    /// exit is not published yet; the link joins the list).
    fn dead_exit(&self, c: &Control<M>) -> Option<Exit> {
        if !c.dead {
            return None;
        }
        match c.rare.as_ref().and_then(|r| r.last_exit.clone()) {
            // Kept under the lock that marked the life dead.
            Some(e) if c.supervised => Some(e),
            _ => self.exit.try_get(),
        }
    }

    /// Starts a new life of a supervised mailbox: no links, no kill, and the
    /// messages the last life left unreceived. The old life is over (its
    /// body was dropped), so nothing races this but kills and links, which
    /// see `dead` until here.
    pub(crate) fn revive(&self) -> VecDeque<M> {
        let mut c = lock(&self.ctl);
        c.dead = false;
        c.kill = None;
        c.waker = None;
        // Relaxed: under the lock, which a kill takes before its store.
        self.killed.store(false, Ordering::Relaxed);
        c.rare
            .as_mut()
            .map(|r| std::mem::take(&mut r.handover))
            .unwrap_or_default()
    }

    pub(crate) fn actor_id(&self) -> ActorId {
        ActorId(self as *const Self as *const () as usize)
    }

    /// Pushes a trapped exit signal, bypassing a bounded mailbox's room
    /// (`trap_exits` refuses bounded mailboxes).
    fn queue_signal(&self, msg: M) -> Result<(), M> {
        self.deliver(msg)
    }
}

/// Links two mailboxes (see [`Addr::link`](super::Addr::link)).
pub(crate) fn link<A: Send + 'static, B: Send + 'static>(a: &InnerArc<A>, b: &InnerArc<B>) {
    let (ida, idb) = (LinkEnd::id(a), LinkEnd::id(b));
    if ida == idb {
        return;
    }
    // Lower address first: two links racing in opposite directions take the
    // locks in the same order.
    let (mut ca, mut cb);
    if ida < idb {
        ca = lock(&a.ctl);
        cb = lock(&b.ctl);
    } else {
        cb = lock(&b.ctl);
        ca = lock(&a.ctl);
    }
    let ea = a.dead_exit(&ca);
    let eb = b.dead_exit(&cb);
    match (ea, eb) {
        (None, None) => {
            if !ca.links.iter().any(|p| p.id() == idb) {
                ca.links.push(Box::new(b.clone()));
                cb.links.push(Box::new(a.clone()));
            }
        }
        (Some(ea), None) => {
            drop((ca, cb));
            b.signal(ida, &ea);
        }
        (None, Some(eb)) => {
            drop((ca, cb));
            a.signal(idb, &eb);
        }
        (Some(_), Some(_)) => {}
    }
}

/// Removes the link between two mailboxes, if there is one.
pub(crate) fn unlink<A: Send + 'static, B: Send + 'static>(a: &InnerArc<A>, b: &InnerArc<B>) {
    let (ida, idb) = (LinkEnd::id(a), LinkEnd::id(b));
    // One at a time: each side's removal is idempotent, and a death between
    // the two removes the other side itself.
    a.remove_link(idb);
    b.remove_link(ida);
}
