//! `parasites/par-tak` (the paper's Par-tak: "every recursive call is
//! implemented as a lightweight thread that communicates result back to the
//! caller over a channel"): Takeuchi's function
//! `tak(x, y, z) = if y < x { tak(tak(x-1, y, z), tak(y-1, z, x),
//! tak(z-1, x, y)) } else { z }` with every call a task of its own. A call
//! with `y < x` starts the three inner calls, all replying on one channel
//! of capacity 3 it made (each reply tagged with its position), then starts
//! the outer call with its own reply channel and ends (a tail call: the
//! outer call answers the caller). Result: the value. Ops: calls.
//!
//! The paper gives no arguments; `tak(21, 14, 7)` makes 395,757 calls (the
//! paper counted 297,361 communications). fibra starts calls with
//! `fibra::spawn` or `fibra::spawn_eager` (`fibra-parasite`); tokio spawns
//! tasks replying on `mpsc::channel(3)`; Go starts goroutines replying on
//! `make(chan reply, 3)`; Erlang spawns processes replying to their
//! parent's mailbox.

use std::future::Future;
use std::pin::Pin;

use super::GROUP;
#[cfg(feature = "fibra-rt")]
use super::start::{AsParasite, AsTask, Start};
use crate::case::{Case, Params, Runner, Spec};
use crate::exec::{fibra_row, fibra_rows};
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// How the Erlang row works.
const ERLANG_NOTE: &str =
    "par-tak: erlang: a process per call, replying to its parent's mailbox with its position";

/// A call's future, boxed: the calls are recursive.
type Call = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A reply: the call's position among its siblings (0, 1, 2) and its value.
type Reply = (usize, u64);

/// `tak(x, y, z)` sequentially, and the number of calls it makes.
pub fn tak(x: u64, y: u64, z: u64) -> (u64, u64) {
    if y < x {
        let (a, ca) = tak(x - 1, y, z);
        let (b, cb) = tak(y - 1, z, x);
        let (c, cc) = tak(z - 1, x, y);
        let (v, cv) = tak(a, b, c);
        (v, 1 + ca + cb + cc + cv)
    } else {
        (z, 1)
    }
}

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let (x, y, z) = if config.quick {
        (12, 8, 4)
    } else {
        (21, 14, 7)
    };
    let (value, calls) = tak(x, y, z);
    let spec = Spec {
        group: GROUP,
        workload: "par-tak",
        params: Params::new().with("x", x).with("y", y).with("z", z),
        ops: calls,
        expected: value,
    };
    let mut fibra = fibra_rows!(&spec, config, move || fibra_par_tak(AsTask, x, y, z));
    fibra.push(fibra_row!(
        &spec,
        config,
        System::FibraParasite,
        move || { fibra_par_tak(AsParasite, x, y, z) }
    ));
    let mut rows = task_rows(
        &spec,
        fibra,
        move || tokio_par_tak(x, y, z),
        PeerNotes::default(),
    );
    rows.push(
        spec.on(System::Erlang, Runner::erlang("par-tak"))
            .with_note(ERLANG_NOTE),
    );
    rows
}

/// fibra: the call `tak(x, y, z)`, replying `(position, value)` on
/// `reply`; the calls it makes are started as `start` says.
#[cfg(feature = "fibra-rt")]
fn fibra_call(
    start: impl Start,
    (x, y, z): (u64, u64, u64),
    reply: fibra::Sender<Reply>,
    position: usize,
) -> Call {
    Box::pin(async move {
        if y < x {
            let (tx, rx) = fibra::bounded(3);
            for (i, args) in [(x - 1, y, z), (y - 1, z, x), (z - 1, x, y)]
                .into_iter()
                .enumerate()
            {
                drop(start.start(fibra_call(start, args, tx.clone(), i)));
            }
            drop(tx);
            let mut args = [0; 3];
            for _ in 0..3 {
                let (i, v) = rx.recv().await.expect("fibra: a call was lost");
                args[i] = v;
            }
            let [a, b, c] = args;
            drop(start.start(fibra_call(start, (a, b, c), reply, position)));
        } else {
            reply
                .send((position, z))
                .await
                .expect("fibra: the caller is gone");
        }
    })
}

/// fibra: the root call, a task, and its reply.
#[cfg(feature = "fibra-rt")]
async fn fibra_par_tak(start: impl Start, x: u64, y: u64, z: u64) -> u64 {
    let (tx, rx) = fibra::bounded(1);
    drop(fibra::spawn(fibra_call(start, (x, y, z), tx, 0)));
    rx.recv().await.expect("fibra: the root call was lost").1
}

/// tokio: the call `tak(x, y, z)`, replying `(position, value)` on `reply`.
fn tokio_call(
    (x, y, z): (u64, u64, u64),
    reply: tokio::sync::mpsc::Sender<Reply>,
    position: usize,
) -> Call {
    Box::pin(async move {
        if y < x {
            let (tx, mut rx) = tokio::sync::mpsc::channel(3);
            for (i, args) in [(x - 1, y, z), (y - 1, z, x), (z - 1, x, y)]
                .into_iter()
                .enumerate()
            {
                drop(tokio::spawn(tokio_call(args, tx.clone(), i)));
            }
            drop(tx);
            let mut args = [0; 3];
            for _ in 0..3 {
                let (i, v) = rx.recv().await.expect("tokio: a call was lost");
                args[i] = v;
            }
            let [a, b, c] = args;
            drop(tokio::spawn(tokio_call((a, b, c), reply, position)));
        } else {
            reply
                .send((position, z))
                .await
                .expect("tokio: the caller is gone");
        }
    })
}

/// tokio: the root call, a task, and its reply.
async fn tokio_par_tak(x: u64, y: u64, z: u64) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    drop(tokio::spawn(tokio_call((x, y, z), tx, 0)));
    rx.recv().await.expect("tokio: the root call was lost").1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::parasites::start::for_each_start;

    #[test]
    fn tak_counts_its_calls() {
        assert_eq!(tak(18, 12, 6), (7, 63_609));
        assert_eq!(tak(1, 2, 3), (3, 1));
    }

    #[test]
    fn tokio_computes_tak() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_par_tak(12, 8, 4)), 5);
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_computes_tak() {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        for_each_start!(start => {
            assert_eq!(rt.block_on(fibra_par_tak(start, 12, 8, 4)), 5);
        });
    }
}
