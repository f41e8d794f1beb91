//! Networking on fibra's runtime: TCP and UDP sockets whose waits are
//! futures and ops.
//!
//! A socket belongs to the runtime it is made in: that runtime's workers
//! poll the kernel for its readiness when they have nothing else to do (no
//! I/O thread, and no system call in a runtime that opened no socket;
//! `docs/io.md`). Once made, it may be used from any task, thread or
//! executor; after its runtime shuts down every call on it fails with a
//! clear error instead of waiting.
//!
//! Waiting for a connection, a datagram or readiness is an op, so it
//! meets channel receives and timeouts in one choice:
//!
//! ```
//! use fibra::net::TcpListener;
//! use fibra::{select, time::after};
//! use std::time::Duration;
//!
//! # fibra::run(async {
//! let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let (stop_tx, stop) = fibra::channel::<()>();
//! fibra::spawn(async move { stop_tx.send(()).await });
//! let served = loop {
//!     select! {
//!         conn = listener.accept_op() => drop(conn),
//!         _ = stop.recv_op() => break true,
//!         () = after(Duration::from_secs(5)) => break false,
//!     }
//! };
//! assert!(served);
//! # });
//! ```
//!
//! An accepted connection or a received datagram whose branch loses the
//! choice is not lost: the next accept or receive returns it.

mod addr;
mod compat;
#[cfg(feature = "hyper")]
mod hyper_rt;
mod io_op;
mod split;
mod tcp_listener;
mod tcp_stream;
mod udp;

pub use addr::{ToSocketAddrs, lookup_host};
pub use split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use tcp_listener::{AcceptOp, TcpListener};
pub use tcp_stream::{ReadyOp, TcpStream};
pub use udp::{RecvFromOp, UdpSocket};

#[cfg(feature = "hyper")]
pub use hyper_rt::{HyperExecutor, HyperTimer};
