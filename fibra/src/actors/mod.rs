//! The actor toolkit that needs spawning: [`spawn_link`] and
//! [`Supervisor`]s with OTP's restart strategies.
//!
//! The pieces that do not spawn live with the mailbox
//! ([`mailbox`](mod@crate::mailbox)): links ([`Addr::link`]), kills
//! ([`Addr::kill`]), trapped exits ([`Mailbox::trap_exits`]), the name
//! registry ([`register`](crate::register), [`whereis`](crate::whereis))
//! and request/reply ([`Addr::request`], [`Addr::call`]). Every wait among
//! them is an op, so a death, a reply and a timeout meet in one
//! [`select!`](crate::select!):
//!
//! ```
//! use fibra::{Exit, Reply, select, time::after};
//! use std::time::Duration;
//!
//! fibra::run(async {
//!     let flaky = fibra::spawn_actor(|mut mb| async move {
//!         let reply: Reply<u32> = mb.recv().await.unwrap();
//!         fibra::time::sleep(Duration::from_millis(1)).await;
//!         drop(reply);
//!         panic!("lost my train of thought");
//!     });
//!     let mut call = flaky.request(|reply| reply).unwrap();
//!     let outcome = select! {
//!         r = call.reply_op() => format!("reply: {r:?}"),
//!         e = flaky.exited_op() => format!("died: {e}"),
//!         () = after(Duration::from_secs(5)) => "timed out".to_string(),
//!     };
//!     // The slot is dropped before the panic: the reply op commits first,
//!     // or the death does if both are ready when the select looks.
//!     assert!(outcome == "reply: Err(NoReply)" || outcome.starts_with("died: panicked"));
//!     assert!(matches!(flaky.exited().await, Exit::Panicked(_)));
//! });
//! ```

mod supervisor;

pub use supervisor::{ChildInfo, ChildSpec, Restart, Strategy, Supervisor, SupervisorRef};

use crate::mailbox::{Addr, Mailbox};
use std::future::Future;

/// Spawns an actor linked to `parent` (Erlang's `spawn_link`): as
/// [`spawn_actor`](crate::spawn_actor), then [`Addr::link`]. If the child
/// ends before the link is made, the link signals its exit at once, as the
/// death would have: no death is missed.
///
/// # Panics
///
/// Outside a fibra runtime.
///
/// ```
/// use fibra::{Exit, ExitSignal};
///
/// fibra::run(async {
///     let (me, mut mb) = fibra::mailbox::<ExitSignal>();
///     mb.trap_exits(|signal| signal);
///     let child = fibra::actors::spawn_link(&me, |mut cmb| async move {
///         let _: Option<()> = cmb.recv().await;
///     });
///     child.send(()).unwrap();
///     let signal = mb.recv().await.unwrap();
///     assert_eq!((signal.from, signal.exit), (child.id(), Exit::Normal));
/// });
/// ```
pub fn spawn_link<N, M, B, F>(parent: &Addr<N>, body: B) -> Addr<M>
where
    N: Send + 'static,
    M: Send + 'static,
    B: FnOnce(Mailbox<M>) -> F,
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let child = crate::rt::spawn_actor(body);
    parent.link(&child);
    child
}
