//! The child processes of the `wake-latency` and `timers` rows: rows that
//! report figures (latency percentiles) besides their time go through
//! [`Runner::Child`], the harness's way for this executable's rows to report
//! figures, so every run happens in a fresh process. Such a process first
//! does an untimed warm-up pass of the workload (so it measures warm, like
//! the Go program's runs after its warm-up), then the run it reports.
//!
//! Arguments after `__child`: `<workload> <system> <workers> <params>...`,
//! `<workers>` being `--workers` (`default` if not given).

use crate::case::Runner;
use crate::system::System;
use crate::workloads::Config;

/// The child runner of `workload` on `system` with the workload's
/// parameter values `params`, in the order the child reads them.
pub fn runner(workload: &str, system: System, config: &Config, params: &[String]) -> Runner {
    #[cfg(not(feature = "fibra-rt"))]
    if system.is_fibra() {
        return Runner::Unavailable(crate::exec::NO_FIBRA_RT);
    }
    let workers = config
        .workers
        .map_or("default".to_string(), |n| n.to_string());
    let args = [workload.to_string(), system.name().to_string(), workers]
        .into_iter()
        .chain(params.iter().cloned())
        .collect();
    Runner::Child { args }
}

/// The runtime a child runs its workload on, with timers enabled.
pub enum ChildRuntime {
    /// `tokio-ct` or `tokio-mt`.
    Tokio(tokio::runtime::Runtime),
    /// `fibra`, `fibra-1` or `fibra-ct`.
    #[cfg(feature = "fibra-rt")]
    Fibra(fibra::Runtime),
}

impl ChildRuntime {
    /// The runtime of the row on `system` (a system name); `workers` is
    /// the child's `<workers>` argument.
    pub fn build(system: &str, workers: &str) -> Result<Self, String> {
        let workers: Option<usize> = match workers {
            "default" => None,
            n => Some(n.parse().map_err(|_| format!("bad worker count {n}"))?),
        };
        let tokio = match system {
            "tokio-ct" => tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build(),
            "tokio-mt" => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(crate::exec::TOKIO_MT_WORKERS)
                .enable_time()
                .build(),
            #[cfg(feature = "fibra-rt")]
            name => {
                let flavour = crate::exec::FIBRA_RUNTIME_SYSTEMS
                    .into_iter()
                    .find(|s| s.name() == name)
                    .and_then(|s| crate::exec::FibraFlavour::of(s, workers))
                    .ok_or_else(|| format!("no child runtime for system `{name}`"))?;
                return Ok(Self::Fibra(flavour.build()));
            }
            #[cfg(not(feature = "fibra-rt"))]
            name => {
                let _ = workers;
                return Err(format!("no child runtime for system `{name}`"));
            }
        };
        tokio.map(Self::Tokio).map_err(|e| e.to_string())
    }
}

/// Parses a numeric parameter of a child.
pub fn parse_count(name: &str, value: &str) -> Result<u64, String> {
    value.parse().map_err(|_| format!("bad {name} {value:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_arguments_and_runtimes() {
        let config = Config {
            quick: true,
            workers: Some(3),
        };
        let Runner::Child { args } = runner("timers", System::TokioCt, &config, &["7".into()])
        else {
            panic!("not a child");
        };
        assert_eq!(args, ["timers", "tokio-ct", "3", "7"]);
        assert!(matches!(
            ChildRuntime::build("tokio-mt", "default"),
            Ok(ChildRuntime::Tokio(_))
        ));
        assert!(ChildRuntime::build("go", "default").is_err());
        assert!(ChildRuntime::build("tokio-ct", "x").is_err());
        assert_eq!(parse_count("tasks", "12"), Ok(12));
        assert!(parse_count("tasks", "-1").is_err());
    }
}
