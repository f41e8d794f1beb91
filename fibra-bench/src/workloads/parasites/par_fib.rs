//! `parasites/par-fib` (the paper's Par-fib, fib 27): `fib(n)` where every
//! call is a task of its own that sends its result to its caller on a
//! channel; a call with `n >= 2` starts calls for `n - 1` and `n - 2`,
//! both replying on one channel of capacity 2 it made, adds the two
//! replies and sends the sum on. Result: `fib(n)`. Ops: calls
//! (`2 fib(n + 1) - 1`, 635,621 for fib 27: the paper's communication
//! count).
//!
//! fibra starts the calls with `fibra::spawn` (`fibra`, `fibra-1`,
//! `fibra-ct`) or `fibra::spawn_eager` (`fibra-parasite`: a call's
//! children run inline until one blocks, and with room for both replies a
//! leaf never blocks); tokio spawns tasks replying on `mpsc::channel(2)`;
//! Go starts goroutines replying on `make(chan uint64, 2)`; Erlang spawns
//! processes replying to their parent's mailbox.

use std::future::Future;
use std::pin::Pin;

use super::GROUP;
#[cfg(feature = "fibra-rt")]
use super::start::{AsParasite, AsTask, Start};
use crate::case::{Case, Params, Spec};
use crate::exec::{fibra_row, fibra_rows};
use crate::system::System;
use crate::workloads::Config;
use crate::workloads::task_rows::{PeerNotes, task_rows};

/// How the Erlang row works.
const ERLANG_NOTE: &str = "par-fib: erlang: a process per call, replying to its parent's mailbox";

/// A call's future, boxed: the calls are recursive.
type Call = Pin<Box<dyn Future<Output = ()> + Send>>;

/// `fib(n)`, sequentially.
pub fn fib(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

/// The rows.
pub fn cases(config: &Config) -> Vec<Case> {
    let n = config.size(27, 15);
    let spec = Spec {
        group: GROUP,
        workload: "par-fib",
        params: Params::new().with("n", n),
        ops: 2 * fib(n + 1) - 1,
        expected: fib(n),
    };
    let mut fibra = fibra_rows!(&spec, config, move || fibra_par_fib(AsTask, n));
    fibra.push(fibra_row!(
        &spec,
        config,
        System::FibraParasite,
        move || { fibra_par_fib(AsParasite, n) }
    ));
    let mut rows = task_rows(&spec, fibra, move || tokio_par_fib(n), PeerNotes::default());
    rows.push(
        spec.on(System::Erlang, crate::case::Runner::erlang("par-fib"))
            .with_note(ERLANG_NOTE),
    );
    rows
}

/// fibra: the call for `n`, replying on `reply`; its children are started
/// as `start` says.
#[cfg(feature = "fibra-rt")]
fn fibra_call(start: impl Start, n: u64, reply: fibra::Sender<u64>) -> Call {
    Box::pin(async move {
        let value = if n < 2 {
            n
        } else {
            let (tx, rx) = fibra::bounded(2);
            drop(start.start(fibra_call(start, n - 1, tx.clone())));
            drop(start.start(fibra_call(start, n - 2, tx)));
            let a = rx.recv().await.expect("fibra: a call was lost");
            a + rx.recv().await.expect("fibra: a call was lost")
        };
        reply.send(value).await.expect("fibra: the caller is gone");
    })
}

/// fibra: the root call, a task, and its reply.
#[cfg(feature = "fibra-rt")]
async fn fibra_par_fib(start: impl Start, n: u64) -> u64 {
    let (tx, rx) = fibra::bounded(1);
    drop(fibra::spawn(fibra_call(start, n, tx)));
    rx.recv().await.expect("fibra: the root call was lost")
}

/// tokio: the call for `n`, replying on `reply`.
fn tokio_call(n: u64, reply: tokio::sync::mpsc::Sender<u64>) -> Call {
    Box::pin(async move {
        let value = if n < 2 {
            n
        } else {
            let (tx, mut rx) = tokio::sync::mpsc::channel(2);
            drop(tokio::spawn(tokio_call(n - 1, tx.clone())));
            drop(tokio::spawn(tokio_call(n - 2, tx)));
            let a = rx.recv().await.expect("tokio: a call was lost");
            a + rx.recv().await.expect("tokio: a call was lost")
        };
        reply.send(value).await.expect("tokio: the caller is gone");
    })
}

/// tokio: the root call, a task, and its reply.
async fn tokio_par_fib(n: u64) -> u64 {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1);
    drop(tokio::spawn(tokio_call(n, tx)));
    rx.recv().await.expect("tokio: the root call was lost")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::parasites::start::for_each_start;

    #[test]
    fn fib_is_fib() {
        assert_eq!([0, 1, 2, 10, 27].map(fib), [0, 1, 1, 55, 196_418]);
        assert_eq!(2 * fib(28) - 1, 635_621);
    }

    #[test]
    fn tokio_computes_fib() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(tokio_par_fib(12)), 144);
    }

    #[cfg(feature = "fibra-rt")]
    #[test]
    fn fibra_computes_fib() {
        let rt = fibra::Runtime::builder().workers(2).build().unwrap();
        for_each_start!(start => {
            assert_eq!(rt.block_on(fibra_par_fib(start, 12)), 144);
        });
    }
}
