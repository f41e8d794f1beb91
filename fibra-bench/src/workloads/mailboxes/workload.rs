//! The group's ten workloads: what each hands over, and what a correct run
//! returns.

/// What a producer hands to a consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primitive {
    /// A semaphore: post / wait.
    Sema,
    /// A mailbox: a send never blocks.
    Mailbox,
    /// A rendezvous channel.
    Channel,
    /// A buffered (unbounded) channel.
    Buffered,
}

/// One workload of the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    SemaBaseline,
    SwitchBaseline,
    Asymmetric(Primitive),
    Symmetric(Primitive),
}

pub use Primitive::{Buffered, Channel, Mailbox, Sema};
pub use Workload::{Asymmetric, SemaBaseline, SwitchBaseline, Symmetric};

/// The workloads, in table order.
pub const WORKLOADS: [Workload; 10] = [
    SemaBaseline,
    SwitchBaseline,
    Asymmetric(Sema),
    Asymmetric(Mailbox),
    Asymmetric(Channel),
    Asymmetric(Buffered),
    Symmetric(Sema),
    Symmetric(Mailbox),
    Symmetric(Channel),
    Symmetric(Buffered),
];

impl Workload {
    /// The workload's name, also the peers' subcommand.
    pub const fn name(self) -> &'static str {
        match self {
            SemaBaseline => "sema-baseline",
            SwitchBaseline => "switch-baseline",
            Asymmetric(Sema) => "asymmetric-sema",
            Asymmetric(Mailbox) => "asymmetric-mailbox",
            Asymmetric(Channel) => "asymmetric-channel",
            Asymmetric(Buffered) => "asymmetric-buffered",
            Symmetric(Sema) => "symmetric-sema",
            Symmetric(Mailbox) => "symmetric-mailbox",
            Symmetric(Channel) => "symmetric-channel",
            Symmetric(Buffered) => "symmetric-buffered",
        }
    }

    /// The result of a correct run of `n` iterations.
    pub const fn expected(self, n: u64) -> u64 {
        match self {
            SemaBaseline | Asymmetric(Sema) | Symmetric(Sema) => n,
            SwitchBaseline => 2 * n,
            // The sum of 0..n.
            Asymmetric(_) => n * n.saturating_sub(1) / 2,
            // The sum of the replies 1..=n.
            Symmetric(_) => n * (n + 1) / 2,
        }
    }

    /// Whether the Erlang program runs it (Erlang has mailboxes, but no
    /// semaphores or channels).
    pub const fn erlang(self) -> bool {
        matches!(
            self,
            SwitchBaseline | Asymmetric(Mailbox) | Symmetric(Mailbox)
        )
    }
}
