//! Rows of the language-runtime peers Erlang/OTP (`erlang/`) and Racket
//! (`racket/`): their notes, and the rows themselves.
//!
//! Erlang has processes and asynchronous mailboxes; where a workload relies
//! on a send waiting for its receiver, the Erlang program emulates the
//! rendezvous with an extra message (each row's note says how). Racket has
//! Concurrent ML's rendezvous channels (`make-channel`) and green threads
//! that share one OS thread. Both are compared with the `fibra` row
//! (multi-thread runtime, default workers) and with the fastest fibra row.

use crate::case::{Case, Runner, Spec};
use crate::system::System;

/// How every Racket row works.
pub const RACKET_NOTE: &str = "racket: Racket threads (green threads, all on one OS thread) and \
     rendezvous channels (make-channel); channels cannot be closed, so end of stream is an eof \
     value per receiver";

/// The `erlang` and `racket` rows of `spec`, run by each peer's workload
/// of the same name; `erlang_note` says how the Erlang program does the
/// work.
pub fn rows(spec: &Spec, erlang_note: &'static str) -> [Case; 2] {
    [
        spec.on(System::Erlang, Runner::erlang(spec.workload))
            .with_note(erlang_note),
        spec.on(System::Racket, Runner::racket(spec.workload))
            .with_note(RACKET_NOTE),
    ]
}
