//! Process groups (Erlang's `pg`): named groups of actors, typed, that any
//! code in the process can join, leave, list and send to. A member leaves
//! its groups when it ends.
//!
//! ```
//! use fibra::pg;
//!
//! fibra::run(async {
//!     let worker = |mut mb: fibra::Mailbox<(u32, fibra::Addr<u32>)>| async move {
//!         while let Some((n, reply)) = mb.recv().await {
//!             let _ = reply.send(n + 1);
//!         }
//!     };
//!     let (a, b) = (fibra::spawn_actor(worker), fibra::spawn_actor(worker));
//!     pg::join("doc-pg-workers", &a).unwrap();
//!     pg::join("doc-pg-workers", &b).unwrap();
//!
//!     // Send to every member (the message is cloned for each).
//!     let (me, mut inbox) = fibra::mailbox::<u32>();
//!     assert_eq!(pg::send("doc-pg-workers", (1u32, me)).unwrap(), 2);
//!     assert_eq!(inbox.recv().await.unwrap() + inbox.recv().await.unwrap(), 4);
//!
//!     // A member that ends leaves its groups.
//!     a.kill();
//!     a.exited().await;
//!     let left: Vec<fibra::Addr<(u32, fibra::Addr<u32>)>> =
//!         pg::members("doc-pg-workers").unwrap();
//!     assert_eq!(left, [b]);
//! });
//! ```
//!
//! Invariants:
//! * A membership holds a counted `Addr` (a member is reachable through its
//!   group, as in Erlang) and its mailbox's id; the mailbox lists the
//!   groups it is in, once per membership, in its `Control` (`link.rs`).
//! * A group exists while it has members, and all of them take one message
//!   type (the first member's): it is removed with its last member.
//! * `join` and `leave` take the table's lock, then the mailbox's; a death
//!   takes the mailbox's lock alone (setting `dead` and taking its groups),
//!   then the table's (`forget`). Never both in the other order, so no
//!   deadlock; and either the death sees the membership (and removes it),
//!   or `join` sees `dead` and refuses: no membership outlives its actor.
//! * The table is a plain `std` mutex (one static for the process, which a
//!   loom model cannot create; no step of it is lock-free), as the name
//!   registry's. No user code runs under it: addresses removed from it are
//!   dropped after it is released, and `send` clones the message and
//!   delivers it outside it.

use super::registry::LookupError;
use super::{ActorId, Addr};
use crate::loom::lock as lock_ctl;
use std::any::{Any, type_name};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// One membership: an `Addr<M>` of the group's type.
struct Member {
    id: ActorId,
    addr: Box<dyn Any + Send + Sync>,
}

struct Group {
    type_name: &'static str,
    members: Vec<Member>,
}

fn table() -> MutexGuard<'static, HashMap<String, Group>> {
    static TABLE: OnceLock<Mutex<HashMap<String, Group>>> = OnceLock::new();
    super::registry::locked(&TABLE)
}

/// Why [`join`] refused.
///
/// ```
/// use fibra::pg::{self, JoinError};
///
/// let (a, _ma) = fibra::mailbox::<u8>();
/// pg::join("doc-pg-join-error", &a).unwrap();
/// let (b, _mb) = fibra::mailbox::<String>();
/// assert!(matches!(pg::join("doc-pg-join-error", &b), Err(JoinError::WrongType { .. })));
/// let (c, mc) = fibra::mailbox::<u8>();
/// drop(mc);
/// assert_eq!(pg::join("doc-pg-join-error", &c), Err(JoinError::Ended));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JoinError {
    /// The actor has ended (its mailbox is closed).
    Ended,
    /// The group's members take another message type.
    WrongType {
        /// The joining actor's message type.
        expected: &'static str,
        /// The group's message type.
        found: &'static str,
    },
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinError::Ended => f.write_str("the actor has ended"),
            JoinError::WrongType { expected, found } => write!(
                f,
                "the group's members take `{found}` messages, not `{expected}`"
            ),
        }
    }
}

impl std::error::Error for JoinError {}

/// Adds `addr` to `group` (Erlang's `pg:join`), creating the group if it has
/// no members. An actor may join a group more than once; it then leaves
/// after as many [`leave`]s, or when it ends (for a supervised child: when
/// its supervisor stops it for good; it stays in its groups across
/// restarts). While a member, the group holds an address of the actor, so
/// its `recv` does not return `None` for want of addresses.
///
/// # Errors
///
/// [`JoinError::Ended`] if the actor has ended; [`JoinError::WrongType`] if
/// the group's members take another message type.
///
/// ```
/// let (addr, _mb) = fibra::mailbox::<u32>();
/// fibra::pg::join("doc-pg-join", &addr).unwrap();
/// assert!(fibra::pg::which_groups().iter().any(|g| g == "doc-pg-join"));
/// ```
pub fn join<M: Send + 'static>(group: impl Into<String>, addr: &Addr<M>) -> Result<(), JoinError> {
    let group = group.into();
    let mut t = table();
    if let Some(g) = t.get(&group) {
        // Empty groups are removed: a present group has a member to check
        // the type against.
        if !g.members[0].addr.is::<Addr<M>>() {
            return Err(JoinError::WrongType {
                expected: type_name::<M>(),
                found: g.type_name,
            });
        }
    }
    {
        let mut c = lock_ctl(&addr.inner.ctl);
        if addr.inner.is_closed() || (c.dead && !c.supervised) {
            return Err(JoinError::Ended);
        }
        c.rare().groups.push(group.clone());
    }
    let member = Member {
        id: addr.id(),
        addr: Box::new(addr.clone()),
    };
    t.entry(group)
        .or_insert_with(|| Group {
            type_name: type_name::<M>(),
            members: Vec::new(),
        })
        .members
        .push(member);
    Ok(())
}

/// Removes one membership of `addr` in `group` (Erlang's `pg:leave`);
/// whether it was a member.
///
/// ```
/// let (addr, _mb) = fibra::mailbox::<u32>();
/// fibra::pg::join("doc-pg-leave", &addr).unwrap();
/// assert!(fibra::pg::leave("doc-pg-leave", &addr));
/// assert!(!fibra::pg::leave("doc-pg-leave", &addr));
/// assert!(fibra::pg::members::<u32>("doc-pg-leave").unwrap().is_empty());
/// ```
pub fn leave<M: Send + 'static>(group: &str, addr: &Addr<M>) -> bool {
    let id = addr.id();
    let removed = {
        let mut t = table();
        let Some(g) = t.get_mut(group) else {
            return false;
        };
        let Some(i) = g.members.iter().position(|m| m.id == id) else {
            return false;
        };
        let member = g.members.remove(i);
        if g.members.is_empty() {
            t.remove(group);
        }
        // The mailbox's list loses one entry too (table, then mailbox: the
        // lock order of `join`).
        let mut c = lock_ctl(&addr.inner.ctl);
        if let Some(r) = c.rare.as_mut()
            && let Some(j) = r.groups.iter().position(|g| g == group)
        {
            r.groups.swap_remove(j);
        }
        member
    };
    // The address drops outside the table's lock (its drop may wake the
    // actor).
    drop(removed);
    true
}

/// The members of `group` (Erlang's `pg:get_members`), typed: an address
/// per membership, in the order they joined; empty if the group has none.
///
/// # Errors
///
/// [`LookupError::WrongType`] if the group's members take another message
/// type than `M` (never [`LookupError::NotFound`]: a group without members
/// is an empty list).
///
/// ```
/// use fibra::LookupError;
///
/// let (addr, _mb) = fibra::mailbox::<u32>();
/// fibra::pg::join("doc-pg-members", &addr).unwrap();
/// assert_eq!(fibra::pg::members::<u32>("doc-pg-members").unwrap(), [addr]);
/// assert!(matches!(
///     fibra::pg::members::<String>("doc-pg-members"),
///     Err(LookupError::WrongType { .. })
/// ));
/// assert!(fibra::pg::members::<u32>("doc-pg-nobody").unwrap().is_empty());
/// ```
pub fn members<M: Send + 'static>(group: &str) -> Result<Vec<Addr<M>>, LookupError> {
    let t = table();
    let Some(g) = t.get(group) else {
        return Ok(Vec::new());
    };
    g.members
        .iter()
        .map(|m| {
            m.addr
                .downcast_ref::<Addr<M>>()
                .cloned()
                .ok_or(LookupError::WrongType {
                    expected: type_name::<M>(),
                    found: g.type_name,
                })
        })
        .collect()
}

/// Sends a clone of `msg` to every member of `group` (once per
/// membership), as [`Addr::send`] does: never waits. Returns how many
/// members it reached: a member whose mailbox is full (a bounded mailbox)
/// or closed (it is ending) is skipped.
///
/// # Errors
///
/// [`LookupError::WrongType`] if the group's members take another message
/// type than `M` (mind integer literals: `send("g", 5)` sends an `i32`).
///
/// ```
/// # fibra::run(async {
/// let (a, mut ma) = fibra::mailbox::<&str>();
/// let (b, mut mb) = fibra::mailbox::<&str>();
/// fibra::pg::join("doc-pg-send", &a).unwrap();
/// fibra::pg::join("doc-pg-send", &b).unwrap();
/// assert_eq!(fibra::pg::send("doc-pg-send", "hello").unwrap(), 2);
/// assert_eq!((ma.recv().await, mb.recv().await), (Some("hello"), Some("hello")));
/// assert_eq!(fibra::pg::send("doc-pg-nobody", "hello").unwrap(), 0);
/// # });
/// ```
pub fn send<M: Clone + Send + 'static>(group: &str, msg: M) -> Result<usize, LookupError> {
    // Delivered outside the table's lock: a clone is user code.
    let members = members::<M>(group)?;
    Ok(members
        .iter()
        .filter(|addr| addr.send(msg.clone()).is_ok())
        .count())
}

/// The groups that have members now, sorted (Erlang's `pg:which_groups`;
/// a snapshot).
///
/// ```
/// let (addr, _mb) = fibra::mailbox::<()>();
/// fibra::pg::join("doc-pg-which", &addr).unwrap();
/// assert!(fibra::pg::which_groups().iter().any(|g| g == "doc-pg-which"));
/// ```
pub fn which_groups() -> Vec<String> {
    let mut groups: Vec<String> = table().keys().cloned().collect();
    groups.sort();
    groups
}

/// A mailbox's final end: removes every membership of `id` in `groups`.
pub(crate) fn forget(groups: &[String], id: ActorId) {
    let mut removed = Vec::new();
    {
        let mut t = table();
        for name in groups {
            let Some(g) = t.get_mut(name) else { continue };
            let mut i = 0;
            while i < g.members.len() {
                if g.members[i].id == id {
                    removed.push(g.members.remove(i));
                } else {
                    i += 1;
                }
            }
            if g.members.is_empty() {
                t.remove(name);
            }
        }
    }
    // The members' addresses drop here, outside the table's lock.
    drop(removed);
}
