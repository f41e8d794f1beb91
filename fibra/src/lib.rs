//! # fibra
//!
//! Concurrent ML for Rust: first-class synchronous operations ("ops") and
//! channels, usable from async code on any executor and from plain OS threads.
//!
//! * **Ops** ([`Op`]) describe communications that may happen later; combine
//!   them with [`choose`] (fair), [`choose_biased`] (priority), [`Op::wrap`],
//!   [`guard`], [`with_nack`], [`always`] and [`never()`]; perform them with
//!   `.await`, [`Op::perform`] (OS threads) or [`Op::try_perform`] (now or
//!   not at all).
//! * **Futures of other libraries** join choices through
//!   [`op::from_future`] and [`op::FutureCell`].
//! * **Entry points**: `#[fibra::main]` and `#[fibra::test]` (feature
//!   `macros`, on by default), [`run`], [`Runtime`].
//! * **Channels** ([`channel`], [`bounded`], [`unbounded`]): MPMC, split
//!   clonable handles; every operation exists as an async method, an op, a
//!   `try_` method and a blocking method. Nothing sent is lost: failed sends
//!   return the value, and a received value whose perform is dropped goes
//!   back to the channel.
//! * **Other channels**: [`oneshot`] (a reply slot), [`broadcast`] (every
//!   receiver sees every value) and [`watch`] (the latest value), each with
//!   its waits as ops; periodic ticks with [`time::interval`].
//!
//! ```
//! use fibra::{Op, channel, choose};
//!
//! let (tx, rx) = channel::<String>(); // rendezvous: sender and receiver meet
//! let (quit_tx, quit) = channel::<()>();
//! let worker = std::thread::spawn(move || {
//!     let mut seen = Vec::new();
//!     loop {
//!         // Wait for whichever happens first: a message or a quit.
//!         let msg = choose((
//!             rx.recv_op().wrap(|m| m.ok()),
//!             quit.recv_op().wrap(|_| None),
//!         ))
//!         .perform();
//!         match msg {
//!             Some(m) => seen.push(m),
//!             None => return seen,
//!         }
//!     }
//! });
//! futures::executor::block_on(async {
//!     tx.send("hello".to_string()).await.unwrap();
//!     tx.send("world".to_string()).await.unwrap();
//!     quit_tx.send(()).await.unwrap();
//! });
//! assert_eq!(worker.join().unwrap(), ["hello", "world"]);
//! ```
//!
//! # Features
//!
//! * `macros` (default): `#[fibra::main]` and `#[fibra::test]`.
//! * `tokio`: a blocking perform inside a tokio runtime's task blocks in
//!   place (multi-thread) or panics (current-thread) instead of stalling
//!   it.
//! * `metrics`: the counters of [`RuntimeMetrics`] (polls, steals, parks,
//!   tasks alive); about 1% on a message round trip.
//! * `tracing`: spans and events for the `tracing` crate (target `fibra`).
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod actors;
pub mod chan;
mod coop;
mod loom;
pub mod mailbox;
pub mod net;
pub mod op;
pub mod rt;
pub mod select;
pub mod sync;
pub mod time;
mod trace;
mod wake;

pub use actors::{ChildInfo, ChildSpec, Restart, Strategy, Supervisor, SupervisorRef, spawn_link};
pub use chan::{
    AsyncSend, ConsumedOp, Receiver, RecvError, RecvOp, RecvTimeoutError, SendAsyncOp, SendError,
    SendFromOp, SendOp, SendTimeoutError, Sender, TryRecvError, TrySendError, WeakSender, bounded,
    channel, unbounded,
};
pub use chan::{broadcast, oneshot, watch};
pub use mailbox::{
    ActorId, Addr, Call, CallError, Exit, ExitSignal, LookupError, Mailbox, Monitor, RegisterError,
    Reply, ReplyOp, bounded_mailbox, mailbox, pg, register, registered, unregister, whereis,
};
pub use op::{
    Always, BoxOp, Branches, Choose, Guard, Nack, Never, Op, Perform, WithNack, Wrap, always,
    block_on, choose, choose_biased, guard, never, seed_choice_rng, with_nack,
};
pub use rt::{
    Builder, Handle, JoinError, JoinHandle, JoinOp, Runtime, RuntimeMetrics, run, spawn,
    spawn_actor, spawn_blocking, spawn_eager, yield_now,
};
pub use rt::{JoinNextOp, JoinSet, LocalJoinHandle, LocalJoinOp, LocalSet, RunUntil, spawn_local};
pub use select::{ChooseAll, WaitUntil, choose_all};

/// `#[fibra::main]`: runs an `async fn main` on a fibra runtime (feature
/// `macros`, on by default).
#[cfg(feature = "macros")]
pub use fibra_macros::main;
/// `#[fibra::test]`: an `async fn` test run on a fresh fibra runtime
/// (feature `macros`, on by default).
#[cfg(feature = "macros")]
pub use fibra_macros::test;
pub use sync::{
    AcquireError, AcquireOp, GetOp, IVar, LockOp, MVar, Mutex, MutexGuard, NotifiedOp, Notify,
    Permit, PutOp, Semaphore, TakeOp, TryAcquireError,
};
pub use sync::{
    Barrier, BarrierWaitOp, BarrierWaitResult, CancellationToken, CancelledOp, DropGuard, GetRefOp,
    OnceCell, ReadOp, RwLock, RwLockReadGuard, RwLockWriteGuard, WriteOp,
};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
