//! What one row of the table measures: a workload with fixed parameters
//! ([`Spec`]) on one [`System`], and how to run it ([`Runner`]).

use std::fmt;

use crate::peers::external::Peer;
use crate::peers::http_load::{HttpServer, Load};
use crate::system::System;

/// A parameter value: a number or a word (`variant: "else"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamValue {
    /// A count or size.
    Int(u64),
    /// A named variant.
    Text(&'static str),
}

impl From<u64> for ParamValue {
    fn from(v: u64) -> Self {
        Self::Int(v)
    }
}

impl From<&'static str> for ParamValue {
    fn from(v: &'static str) -> Self {
        Self::Text(v)
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Int(v) => write!(f, "{v}"),
            Self::Text(v) => f.write_str(v),
        }
    }
}

/// Named parameters in display order. Rows are compared with each other only
/// when their workload parameters are equal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params(Vec<(&'static str, ParamValue)>);

impl Params {
    /// No parameters.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name = value`.
    pub fn with(mut self, name: &'static str, value: impl Into<ParamValue>) -> Self {
        self.0.push((name, value.into()));
        self
    }

    /// The parameters in order.
    pub fn iter(&self) -> impl Iterator<Item = &(&'static str, ParamValue)> {
        self.0.iter()
    }
}

/// `messages=1000000 capacity=0`
impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{name}={value}")?;
        }
        Ok(())
    }
}

/// A workload with fixed parameters: the work every system must do.
#[derive(Clone, Debug)]
pub struct Spec {
    /// docs/benchmarks.md group (`general`, `fibers`, ...).
    pub group: &'static str,
    /// Workload name, lower-case-with-dashes.
    pub workload: &'static str,
    /// Every parameter that changes the work.
    pub params: Params,
    /// Units of work per run (messages, round trips, tasks).
    pub ops: u64,
    /// The result (sum, count, checksum) a correct run returns.
    pub expected: u64,
}

impl Spec {
    /// This workload on `system`, run by `runner`.
    pub fn on(&self, system: System, runner: Runner) -> Case {
        Case {
            spec: self.clone(),
            system,
            runner,
            note: None,
            extra: Params::new(),
            measured: &[],
        }
    }
}

/// One timed run: does the work once and returns its result for checking.
pub type RunFn = Box<dyn FnMut() -> u64>;

/// How a case is run.
pub enum Runner {
    /// In this executable: a full run gives each such row a fresh process
    /// of its own (`harness::ROW_ARG`), which builds the rows and runs this
    /// one. The outer closure is the untimed setup (e.g. building a
    /// runtime), called once per case; the [`RunFn`] it returns is called
    /// for the warm-up and for every timed run.
    InProcess(Box<dyn FnOnce() -> RunFn>),
    /// An external peer's program (Go, Erlang, Racket) with this
    /// subcommand. It gets every workload parameter (`-name=value` for Go,
    /// `name=value` for the others) plus `runs=N`, does its own warm-up and
    /// timed runs in one process, and prints one JSON line per run (see
    /// `peers::external`).
    External {
        /// Which program.
        peer: Peer,
        /// Subcommand name, e.g. `spsc`.
        program: &'static str,
    },
    /// Every run (the warm-up too) in a fresh process of this executable,
    /// started as `fibra-bench __child <args>...`; the child does the work
    /// once and prints one JSON line like the Go program's (see
    /// `peers::child`). For measurements a long-lived process would blur,
    /// such as resident memory.
    Child {
        /// Arguments after `__child`: the workload, the system, parameters.
        args: Vec<String>,
    },
    /// An HTTP server, started once for the row in a process of its own,
    /// loaded by the load generator `wrk` once for the warm-up and once per
    /// timed run; every run checks a response itself and wrk's counts, and
    /// reports its time per request and the figures
    /// [`crate::peers::http_load::MEASURED`] (see `peers::http_load`).
    Http {
        /// Which server.
        server: HttpServer,
        /// What each run asks it for.
        load: Load,
    },
    /// The row cannot run in this build, for this reason (e.g. fibra's
    /// runtime rows without the `fibra-rt` feature): it is skipped with a note.
    Unavailable(&'static str),
}

impl Runner {
    /// The Go program's subcommand `program`.
    pub const fn go(program: &'static str) -> Self {
        Self::External {
            peer: Peer::Go,
            program,
        }
    }

    /// The Erlang program's workload `program`.
    pub const fn erlang(program: &'static str) -> Self {
        Self::External {
            peer: Peer::Erlang,
            program,
        }
    }

    /// The Erlang program's workload `program` on one scheduler (`erl +S 1`).
    pub const fn erlang_one_scheduler(program: &'static str) -> Self {
        Self::External {
            peer: Peer::Erlang1,
            program,
        }
    }

    /// The Racket program's workload `program`.
    pub const fn racket(program: &'static str) -> Self {
        Self::External {
            peer: Peer::Racket,
            program,
        }
    }
}

/// One row to measure: a workload on a system.
pub struct Case {
    /// The work.
    pub spec: Spec,
    /// Who does it.
    pub system: System,
    /// How.
    pub runner: Runner,
    /// A caveat printed under the table and stored in the row (e.g. a peer
    /// that cannot use the exact parameters).
    pub note: Option<&'static str>,
    /// Extra fields for this row in report.json (e.g. `peer_capacity`).
    pub extra: Params,
    /// Figures every run reports besides its time and result (e.g.
    /// `bytes_per_task`), for runners that report their own runs (Go,
    /// child processes): the row gets their median over the timed runs as
    /// an extra field, and a run that lacks one is an error.
    pub measured: &'static [&'static str],
}

impl Case {
    /// Attaches a caveat.
    pub fn with_note(mut self, note: &'static str) -> Self {
        self.note = Some(note);
        self
    }

    /// Attaches an extra report field.
    pub fn with_extra(mut self, name: &'static str, value: impl Into<ParamValue>) -> Self {
        self.extra = self.extra.with(name, value);
        self
    }

    /// Asks every run for the figures in `names` (see [`Self::measured`]).
    pub fn with_measured(mut self, names: &'static [&'static str]) -> Self {
        self.measured = names;
        self
    }

    /// `general/spsc-rendezvous [messages=1000 capacity=0] crossbeam`, for
    /// progress lines and error messages.
    pub fn label(&self) -> String {
        format!(
            "{}/{} [{}] {}",
            self.spec.group, self.spec.workload, self.spec.params, self.system
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_display_in_order() {
        let p = Params::new()
            .with("messages", 1000)
            .with("capacity", 0)
            .with("variant", "else");
        assert_eq!(p.to_string(), "messages=1000 capacity=0 variant=else");
        assert_ne!(p, Params::new().with("capacity", 0).with("messages", 1000));
    }
}
