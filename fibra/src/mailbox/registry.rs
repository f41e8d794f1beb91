//! The name registry (Erlang's `register` / `whereis`): one table per
//! process, mapping a name to an address, typed.
//!
//! Invariants:
//! * An entry holds a counted `Addr` (a registered actor is reachable by
//!   name, as in Erlang) and its mailbox's id. The mailbox lists its names
//!   in its `Control` (`link.rs`).
//! * `register` takes the table's lock, then the mailbox's; a death takes
//!   the mailbox's lock alone (setting `dead` and taking its names), then
//!   the table's (`forget`). Never both in the other order, so no deadlock;
//!   and either the death sees the name (and removes it), or `register`
//!   sees `dead` and refuses: no name outlives its actor.
//! * The table is a plain `std` mutex, not a `crate::loom` one: it is one
//!   static for the whole process, which a loom model cannot create, and
//!   no step of it is lock-free.

use super::{ActorId, Addr};
use crate::loom::lock as lock_ctl;
use std::any::{Any, type_name};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, OnceLock};

struct Entry {
    id: ActorId,
    /// An `Addr<M>`.
    addr: Box<dyn Any + Send + Sync>,
    type_name: &'static str,
}

fn table() -> MutexGuard<'static, HashMap<String, Entry>> {
    static TABLE: OnceLock<Mutex<HashMap<String, Entry>>> = OnceLock::new();
    locked(&TABLE)
}

/// A process-wide table (the registry's, the process groups'), locked. A
/// panic never happens under these locks (no user code runs there), but a
/// poisoned table would still be consistent: every change is an insert or
/// a removal.
pub(super) fn locked<T: Default>(table: &'static OnceLock<Mutex<T>>) -> MutexGuard<'static, T> {
    table
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Why [`register`] refused a name.
///
/// ```
/// use fibra::RegisterError;
///
/// let (a, _ma) = fibra::mailbox::<()>();
/// let (b, mb) = fibra::mailbox::<()>();
/// fibra::register("doc-register-error", &a).unwrap();
/// let taken = fibra::register("doc-register-error", &a).unwrap_err();
/// assert_eq!(taken, RegisterError::Taken("doc-register-error".into()));
/// drop(mb);
/// assert_eq!(fibra::register("doc-register-error-2", &b), Err(RegisterError::Ended));
/// fibra::unregister("doc-register-error");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegisterError {
    /// Another live actor holds the name.
    Taken(String),
    /// The actor has ended (its mailbox is closed).
    Ended,
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::Taken(n) => write!(f, "the name {n:?} is registered already"),
            RegisterError::Ended => f.write_str("the actor has ended"),
        }
    }
}

impl std::error::Error for RegisterError {}

/// Why [`whereis`] found no address.
///
/// ```
/// use fibra::LookupError;
///
/// assert_eq!(fibra::whereis::<u8>("doc-nobody-here").unwrap_err(), LookupError::NotFound);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LookupError {
    /// No live actor is registered under the name.
    NotFound,
    /// The actor registered under the name takes another message type.
    WrongType {
        /// The message type asked for.
        expected: &'static str,
        /// The registered actor's message type.
        found: &'static str,
    },
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LookupError::NotFound => f.write_str("no actor is registered under that name"),
            LookupError::WrongType { expected, found } => write!(
                f,
                "the registered actor takes `{found}` messages, not `{expected}`"
            ),
        }
    }
}

impl std::error::Error for LookupError {}

/// Registers `addr` under `name` (Erlang's `register`), for [`whereis`] to
/// find from anywhere in the process. The name is freed when the actor ends
/// (for a supervised child: when its supervisor stops it for good; it keeps
/// its name across restarts) or by [`unregister`]. While registered, the
/// table holds an address, so the actor's `recv` does not return `None` for
/// want of addresses.
///
/// # Errors
///
/// [`RegisterError::Taken`] if a live actor holds the name (an actor may
/// hold several names), [`RegisterError::Ended`] if the actor has ended.
///
/// ```
/// use fibra::RegisterError;
///
/// fibra::run(async {
///     let echo = fibra::spawn_actor(|mut mb| async move {
///         while let Some((n, reply)) = mb.recv().await {
///             let reply: fibra::Addr<u32> = reply;
///             reply.send(n).unwrap();
///         }
///     });
///     fibra::register("doc-echo", &echo).unwrap();
///     assert!(matches!(fibra::register("doc-echo", &echo), Err(RegisterError::Taken(_))));
///     let (me, mut inbox) = fibra::mailbox();
///     let echo_again: fibra::Addr<(u32, fibra::Addr<u32>)> = fibra::whereis("doc-echo").unwrap();
///     echo_again.send((7, me)).unwrap();
///     drop(echo_again);
///     assert_eq!(inbox.recv().await, Some(7));
///     echo.kill();
///     echo.exited().await;
///     assert!(fibra::whereis::<(u32, fibra::Addr<u32>)>("doc-echo").is_err()); // freed
/// });
/// ```
pub fn register<M: Send + 'static>(
    name: impl Into<String>,
    addr: &Addr<M>,
) -> Result<(), RegisterError> {
    let name = name.into();
    let id = addr.id();
    let mut t = table();
    if t.contains_key(&name) {
        return Err(RegisterError::Taken(name));
    }
    {
        let mut c = lock_ctl(&addr.inner.ctl);
        if addr.inner.is_closed() || (c.dead && !c.supervised) {
            return Err(RegisterError::Ended);
        }
        c.rare().names.push(name.clone());
    }
    t.insert(
        name,
        Entry {
            id,
            addr: Box::new(addr.clone()),
            type_name: type_name::<M>(),
        },
    );
    Ok(())
}

/// The address registered under `name` (Erlang's `whereis`), typed.
///
/// # Errors
///
/// [`LookupError::NotFound`] if no live actor holds the name,
/// [`LookupError::WrongType`] if the actor registered there takes messages
/// of another type than `M`.
///
/// ```
/// use fibra::LookupError;
///
/// let (addr, _mb) = fibra::mailbox::<u32>();
/// fibra::register("doc-whereis", &addr).unwrap();
/// assert_eq!(fibra::whereis::<u32>("doc-whereis").unwrap(), addr);
/// assert!(matches!(
///     fibra::whereis::<String>("doc-whereis"),
///     Err(LookupError::WrongType { .. })
/// ));
/// assert_eq!(fibra::whereis::<u32>("nobody").unwrap_err(), LookupError::NotFound);
/// ```
pub fn whereis<M: Send + 'static>(name: &str) -> Result<Addr<M>, LookupError> {
    let t = table();
    let entry = t.get(name).ok_or(LookupError::NotFound)?;
    match entry.addr.downcast_ref::<Addr<M>>() {
        Some(addr) => Ok(addr.clone()),
        None => Err(LookupError::WrongType {
            expected: type_name::<M>(),
            found: entry.type_name,
        }),
    }
}

/// Frees `name`; whether it was registered.
///
/// ```
/// let (addr, _mb) = fibra::mailbox::<()>();
/// fibra::register("doc-unregister", &addr).unwrap();
/// assert!(fibra::unregister("doc-unregister"));
/// assert!(!fibra::unregister("doc-unregister"));
/// ```
pub fn unregister(name: &str) -> bool {
    // The entry (and its address, whose drop may wake the actor) drops
    // after the table's lock is released. The mailbox's own list keeps the
    // name: `forget` frees only names still pointing at that mailbox.
    let entry = table().remove(name);
    entry.is_some()
}

/// The names registered now, sorted (a snapshot).
///
/// ```
/// let (addr, _mb) = fibra::mailbox::<()>();
/// fibra::register("doc-registered", &addr).unwrap();
/// assert!(fibra::registered().iter().any(|n| n == "doc-registered"));
/// ```
pub fn registered() -> Vec<String> {
    let mut names: Vec<String> = table().keys().cloned().collect();
    names.sort();
    names
}

/// A mailbox's final end: frees its names (those still pointing at it).
pub(crate) fn forget(names: &[String], id: ActorId) {
    let mut removed = Vec::new();
    {
        let mut t = table();
        for n in names {
            if t.get(n).is_some_and(|e| e.id == id) {
                removed.extend(t.remove(n));
            }
        }
    }
    // The entries' addresses drop here, outside the table's lock.
    drop(removed);
}
