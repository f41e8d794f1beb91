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
//! * **Channels** ([`channel`], [`bounded`], [`unbounded`]): MPMC, split
//!   clonable handles; every operation exists as an async method, an op, a
//!   `try_` method and a blocking method. Nothing sent is lost: failed sends
//!   return the value, and a received value whose perform is dropped goes
//!   back to the channel.
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
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod chan;
mod coop;
mod loom;
pub mod mailbox;
pub mod op;
pub mod rt;
pub mod select;
pub mod sync;
pub mod time;
mod wake;

pub use chan::{
    AsyncSend, ConsumedOp, Receiver, RecvError, RecvOp, SendAsyncOp, SendError, SendOp,
    SendTimeoutError, Sender, TryRecvError, TrySendError, bounded, channel, unbounded,
};
pub use mailbox::{Addr, Exit, Mailbox, Monitor, RecvTimeoutError, bounded_mailbox, mailbox};
pub use op::{
    Always, BoxOp, Branches, Choose, Guard, Nack, Never, Op, Perform, WithNack, Wrap, always,
    block_on, choose, choose_biased, guard, never, seed_choice_rng, with_nack,
};
pub use rt::{
    Builder, Handle, JoinError, JoinHandle, JoinOp, Runtime, run, spawn, spawn_actor,
    spawn_blocking, spawn_eager, yield_now,
};
pub use select::{ChooseAll, WaitUntil, choose_all};
pub use sync::{
    AcquireError, AcquireOp, GetOp, IVar, LockOp, MVar, Mutex, MutexGuard, NotifiedOp, Notify,
    Permit, PutOp, Semaphore, TakeOp, TryAcquireError,
};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
