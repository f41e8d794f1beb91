//! Peers that run outside this process and report their runs to the
//! harness: programs in other languages, and fresh processes of this
//! executable ([`child`]). All print one JSON line per run ([`run_line`]).
//!
//! The modules depend one way, from the bottom up:
//!
//! * [`run_line`]: the line a run prints, and its parsing;
//! * [`external`]: what every program in another language shares: which
//!   peer it is, preparing it once, starting it per row ([`external::Launch`]);
//! * [`go`], [`erlang`], [`racket`]: how each language's program is built
//!   and started;
//! * [`Peers`], here: the programs of one run (Erlang twice: on the
//!   default VM and on one scheduler).
//!
//! [`child`] stands beside them: it starts this executable, not another
//! language's program. So does [`http_load`], which starts an HTTP server
//! (this executable or the Go program) and loads it with [`wrk`], a
//! separate load generator.

pub mod child;
pub mod erlang;
pub mod external;
pub mod go;
pub mod http_load;
pub mod racket;
pub mod run_line;
pub mod wrk;

use std::path::Path;

use crate::paths::peer_source_dir;
use external::{ExternalPeer, Peer};

/// The external peers of one run.
pub struct Peers {
    go: ExternalPeer,
    erlang: ExternalPeer,
    erlang1: ExternalPeer,
    racket: ExternalPeer,
}

impl Peers {
    /// The peers with their sources in this crate, built into `output_dir`.
    pub fn new(output_dir: &Path) -> Self {
        Self {
            go: go::peer(peer_source_dir(Peer::Go), output_dir),
            erlang: erlang::peer(peer_source_dir(Peer::Erlang), output_dir, None),
            erlang1: erlang::peer(peer_source_dir(Peer::Erlang1), output_dir, Some(1)),
            racket: racket::peer(peer_source_dir(Peer::Racket), output_dir),
        }
    }

    /// Every peer unusable, for `reason` (tests).
    #[cfg(test)]
    pub fn unavailable(reason: &str) -> Self {
        Self {
            go: ExternalPeer::unavailable(Peer::Go, reason),
            erlang: ExternalPeer::unavailable(Peer::Erlang, reason),
            erlang1: ExternalPeer::unavailable(Peer::Erlang1, reason),
            racket: ExternalPeer::unavailable(Peer::Racket, reason),
        }
    }

    /// The peer `peer`.
    pub fn get(&mut self, peer: Peer) -> &mut ExternalPeer {
        match peer {
            Peer::Go => &mut self.go,
            Peer::Erlang => &mut self.erlang,
            Peer::Erlang1 => &mut self.erlang1,
            Peer::Racket => &mut self.racket,
        }
    }
}
