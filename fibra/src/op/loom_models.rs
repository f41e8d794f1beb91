//! loom models of the op combinators (see `chan/loom_models.rs`).

use crate::loom::{model, thread};
use crate::{Nack, Op, channel, choose, with_nack};

#[test]
fn loom_with_nack_fires_iff_branch_lost() {
    // The receiver's branch on A is built with a nack; the sender offers A or
    // B. Whichever commits, the nack is fired exactly when B won.
    model(|| {
        let (a_tx, a_rx) = channel::<u32>();
        let (b_tx, b_rx) = channel::<u32>();
        let sender = thread::spawn(move || {
            choose((a_tx.send_op(1), b_tx.send_op(2)))
                .perform()
                .unwrap();
        });
        let mut nack: Option<Nack> = None;
        let got = choose((
            with_nack(|n| {
                nack = Some(n);
                a_rx.recv_op()
            }),
            b_rx.recv_op(),
        ))
        .perform()
        .unwrap();
        let nack = nack.expect("builder ran at perform time");
        assert_eq!(nack.is_fired(), got == 2, "got {got}");
        sender.join().unwrap();
    });
}

#[test]
fn loom_nack_wakes_a_waiting_server() {
    // A server blocks on the nack of a client's branch; the client's other
    // branch wins; the server must be woken.
    model(|| {
        let (b_tx, b_rx) = channel::<u32>();
        let (nack_tx, nack_rx) = crate::bounded::<Nack>(1);
        let client = thread::spawn(move || {
            choose((
                with_nack(|n| {
                    nack_tx.try_send(n).unwrap();
                    crate::never::<u32>()
                }),
                b_rx.recv_op().wrap(Result::unwrap),
            ))
            .perform()
        });
        let nack = nack_rx.recv_blocking().unwrap();
        let server = thread::spawn(move || nack.perform());
        b_tx.send_blocking(4).unwrap();
        assert_eq!(client.join().unwrap(), 4);
        server.join().unwrap();
    });
}
