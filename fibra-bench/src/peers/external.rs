//! What the peers that are programs in other languages (Go, Erlang, Racket)
//! share; how each language's program is built lives in a module of its
//! own, on top of this one.
//!
//! Each is one program with a subcommand per workload, prepared (built,
//! compiled) into the target directory on first use, then started once per
//! row: it does one warm-up run and N timed runs in that one process (so a
//! VM's start-up is paid once per row, outside the timings) and prints one
//! JSON line per run (see [`super::run_line`]).
//!
//! A peer whose tools are missing, or whose build fails, is unavailable:
//! its rows are skipped with a one-line note, never failed.

use std::env;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use crate::case::Params;

use super::run_line::{PeerRun, parse_run};

/// The external peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// `go/`, built with `go build`.
    Go,
    /// `erlang/`, compiled with `erlc`, run by `erl`.
    Erlang,
    /// The same Erlang program on a VM with one scheduler (`erl +S 1`).
    Erlang1,
    /// `racket/`, compiled with `raco make`, run by `racket`.
    Racket,
}

impl Peer {
    /// Every peer.
    pub const ALL: [Peer; 4] = [Peer::Go, Peer::Erlang, Peer::Erlang1, Peer::Racket];

    /// Name in progress lines and skip notes.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Go => "go",
            Self::Erlang => "erlang",
            Self::Erlang1 => "erlang-1",
            Self::Racket => "racket",
        }
    }

    /// The folder of its sources in this crate.
    pub const fn source_folder(self) -> &'static str {
        match self {
            Self::Go => "go",
            Self::Erlang | Self::Erlang1 => "erlang",
            Self::Racket => "racket",
        }
    }
}

/// How to start a prepared peer program for one row:
/// `<program> <args>... <workload> <prefix>name=value... <prefix>runs=N`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The executable.
    pub program: PathBuf,
    /// Arguments before the workload's.
    pub args: Vec<OsString>,
    /// Extra environment variables.
    pub env: Vec<(&'static str, OsString)>,
    /// Put before every `name=value`: `-` for Go's flag package, empty for
    /// the others (`erl -run` would take `-name` for an emulator flag).
    pub param_prefix: &'static str,
}

impl Launch {
    /// The command for `workload` with `params` and `runs` timed runs.
    pub fn command(&self, workload: &str, params: &Params, runs: usize) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).arg(workload);
        let prefix = self.param_prefix;
        for (name, value) in params.iter() {
            command.arg(format!("{prefix}{name}={value}"));
        }
        command.arg(format!("{prefix}runs={runs}"));
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Runs `workload`; returns every run it reported (warm-up first).
    /// `Err` if it could not start, crashed or printed garbage.
    pub fn run(
        &self,
        workload: &str,
        params: &Params,
        runs: usize,
    ) -> Result<Vec<PeerRun>, String> {
        let mut command = self.command(workload, params, runs);
        let output = command
            .output()
            .map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        if !output.status.success() {
            return Err(format!(
                "{command:?} exited with {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(parse_run)
            .collect()
    }
}

/// Prepares a peer: builds or compiles it, returns how to start it, or
/// why it cannot run here.
pub type Prepare = Box<dyn FnOnce() -> Result<Launch, String>>;

/// A peer program, prepared on first use.
pub struct ExternalPeer {
    peer: Peer,
    /// What preparing does, for the progress line (`go build`).
    what: String,
    state: State,
}

enum State {
    Pending(Prepare),
    Ready(Launch),
    Unavailable(String),
}

impl ExternalPeer {
    /// `peer`, prepared by `prepare` (described by `what`) on first use.
    pub fn new(peer: Peer, what: String, prepare: Prepare) -> Self {
        Self {
            peer,
            what,
            state: State::Pending(prepare),
        }
    }

    /// A peer known to be unusable, for `reason` (tests).
    #[cfg(test)]
    pub fn unavailable(peer: Peer, reason: &str) -> Self {
        Self {
            peer,
            what: String::new(),
            state: State::Unavailable(reason.to_string()),
        }
    }

    /// How to start the peer, preparing it first if needed (a progress line
    /// on stderr). `Err(reason)` when its tools are missing or preparing
    /// failed: its rows are then skipped.
    pub fn launch(&mut self) -> Result<&Launch, &str> {
        if matches!(self.state, State::Pending(_)) {
            let State::Pending(prepare) =
                std::mem::replace(&mut self.state, State::Unavailable(String::new()))
            else {
                unreachable!("checked above")
            };
            let started = Instant::now();
            eprint!("preparing {} peers ({}) ... ", self.peer.name(), self.what);
            self.state = match prepare() {
                Ok(launch) => {
                    eprintln!("ok ({:.1} s)", started.elapsed().as_secs_f64());
                    State::Ready(launch)
                }
                Err(reason) => {
                    eprintln!("{reason}: {} rows will be skipped", self.peer.name());
                    State::Unavailable(reason)
                }
            };
        }
        match &self.state {
            State::Ready(launch) => Ok(launch),
            State::Unavailable(reason) => Err(reason),
            State::Pending(_) => unreachable!("prepared above"),
        }
    }
}

/// The file `name` in a directory of PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|file| file.is_file())
}

/// The first line of a failed tool's stderr, for a one-line note.
pub fn first_line(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("(no output)")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_of_a_row() {
        let launch = Launch {
            program: PathBuf::from("erl"),
            args: vec!["-noinput".into()],
            env: vec![("X", "1".into())],
            param_prefix: "",
        };
        let params = Params::new().with("pairs", 10).with("round_trips", 5);
        let command = launch.command("ping-pong", &params, 3);
        let args: Vec<_> = command.get_args().collect();
        assert_eq!(
            args,
            [
                "-noinput",
                "ping-pong",
                "pairs=10",
                "round_trips=5",
                "runs=3"
            ]
        );
        assert_eq!(command.get_envs().count(), 1);
        let go = Launch {
            param_prefix: "-",
            ..launch
        };
        let command = go.command("spsc", &params, 1);
        assert_eq!(command.get_args().last().unwrap(), "-runs=1");
    }

    #[test]
    fn unavailable_peers_say_why() {
        let mut peer = ExternalPeer::unavailable(Peer::Racket, "`racket` not found");
        assert_eq!(peer.launch(), Err("`racket` not found"));
    }

    #[test]
    fn failed_preparation_makes_the_peer_unavailable_once() {
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let seen = calls.clone();
        let mut peer = ExternalPeer::new(
            Peer::Erlang,
            "test".into(),
            Box::new(move || {
                seen.set(seen.get() + 1);
                Err("no erl".into())
            }),
        );
        assert_eq!(peer.launch(), Err("no erl"));
        assert_eq!(peer.launch(), Err("no erl"));
        assert_eq!(calls.get(), 1);
    }

    #[test]
    fn first_line_skips_blank_lines() {
        assert_eq!(first_line(b"\n  boom \nmore"), "boom");
        assert_eq!(first_line(b""), "(no output)");
    }
}
