//! # fibra-remote
//!
//! fibra's actors across processes and machines, over
//! [NATS](https://nats.io): a [`Node`] connects to a NATS server, publishes
//! local actors under names ([`Node::register`]) and finds remote ones
//! ([`Node::lookup`]), which it returns as a [`RemoteAddr<M>`]: an
//! address like [`fibra::Addr<M>`], whose messages are serialized with
//! serde ([postcard](https://docs.rs/postcard), behind a versioned header:
//! see [`wire`]) and land in the remote actor's ordinary
//! [`fibra::Mailbox`]. The actor's receive loop does not change.
//!
//! * [`RemoteAddr::send`] never blocks and hands the message back on every
//!   error it can know locally; [`RemoteAddr::send_op`] is the same as an
//!   op for choices.
//! * [`RemoteAddr::call_op`]: request and reply with a timeout, as an op
//!   (the actor answers through the [`ReplyTo`] in the message).
//! * [`RemoteAddr::exited_op`]: a monitor that fires when the actor ends
//!   ([`Down::Normal`], [`Down::Panicked`], …) or its node stops
//!   ([`Down::NodeStopped`]) or becomes unreachable — no heartbeat for the
//!   timeout, 1 s by default, checked every 250 ms
//!   ([`Down::NodeUnreachable`]).
//!
//! Semantics are Erlang's: messages from one node to one actor arrive in
//! the order they were sent, at most once (core NATS), never twice; every
//! message dropped is counted in [`Node::stats`] and logged through
//! `tracing` (install a subscriber to see the warnings). The full
//! statement, and what may be lost when, is in `docs/remote.md`.
//!
//! The NATS client (`async-nats`) runs on a small tokio runtime owned by
//! the node (one worker thread); results come back through fibra channels,
//! so every method works from fibra's runtime, tokio, any other executor
//! or (through [`fibra::block_on`]) a plain OS thread.
//!
//! ```
//! use fibra_remote::{NatsServer, Node, ReplyTo};
//! use serde::{Deserialize, Serialize};
//! use std::time::Duration;
//!
//! #[derive(Debug, Serialize, Deserialize)]
//! enum Counter {
//!     Add(u64),
//!     Get(ReplyTo<u64>),
//! }
//!
//! let server = NatsServer::start().unwrap(); // a real nats-server, for the example
//! fibra::run(async move {
//!     // One process: host a counter actor under a name.
//!     let host = Node::connect(server.url()).await.unwrap();
//!     let counter = fibra::spawn_actor(|mut mb| async move {
//!         let mut total = 0;
//!         while let Some(msg) = mb.recv().await {
//!             match msg {
//!                 Counter::Add(n) => total += n,
//!                 Counter::Get(reply) => reply.send(total).unwrap(),
//!             }
//!         }
//!     });
//!     host.register("counter", counter).await.unwrap();
//!
//!     // Another process (here another node in the same one): use it.
//!     let client = Node::connect(server.url()).await.unwrap();
//!     let mut counter = client.lookup::<Counter>("counter").await.unwrap();
//!     for n in 1..=10 {
//!         counter.send(Counter::Add(n)).unwrap();
//!     }
//!     let total = counter.call(Counter::Get, Duration::from_secs(5)).await;
//!     assert_eq!(total, Ok(55)); // in order: every Add came before the Get
//! });
//! ```
#![warn(missing_docs)]

mod call;
mod error;
mod lookup;
mod node;
mod out_queue;
mod register;
mod remote_addr;
mod server;
mod service;
mod stats;
pub mod wire;

pub use async_nats;
pub use call::ReplyTo;
pub use error::{CallError, ConnectError, Down, LookupError, RegisterError, ReplyError, SendError};
pub use node::{Node, NodeOptions};
pub use remote_addr::RemoteAddr;
pub use server::NatsServer;
pub use stats::Stats;
