//! The line a peer prints for each run, and its parsing:
//! `{"warmup":false,"seconds":0.0123,"result":42,"bytes_per_task":312}`.
//! `warmup`, `seconds` and `result` are required; every other numeric field
//! is a figure the run measured (see [`crate::case::Case::measured`]).

use serde_json::Value;

/// One run reported by a peer.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerRun {
    /// The untimed-in-the-stats warm-up run.
    pub warmup: bool,
    /// Wall-clock seconds of the run, measured by the program.
    pub seconds: f64,
    /// The run's result, checked by the harness.
    pub result: u64,
    /// Other numeric fields of the line, by name (e.g. `bytes_per_task`).
    pub figures: Vec<(String, f64)>,
}

impl PeerRun {
    /// The figure called `name`, if the run reported it.
    pub fn figure(&self, name: &str) -> Option<f64> {
        self.figures
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, value)| value)
    }
}

/// Parses one `{"warmup":..,"seconds":..,"result":..}` line.
pub fn parse_run(line: &str) -> Result<PeerRun, String> {
    let bad = || format!("unexpected output line from a peer: {line}");
    let value: Value = serde_json::from_str(line).map_err(|_| bad())?;
    let object = value.as_object().ok_or_else(bad)?;
    let figures = object
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "warmup" | "seconds" | "result"))
        .filter_map(|(name, v)| Some((name.clone(), v.as_f64()?)))
        .collect();
    Ok(PeerRun {
        warmup: value["warmup"].as_bool().ok_or_else(bad)?,
        seconds: value["seconds"].as_f64().ok_or_else(bad)?,
        result: value["result"].as_u64().ok_or_else(bad)?,
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_run_lines() {
        let run = parse_run(r#"{"warmup":false,"seconds":0.25,"result":42}"#).unwrap();
        assert_eq!(
            run,
            PeerRun {
                warmup: false,
                seconds: 0.25,
                result: 42,
                figures: Vec::new(),
            }
        );
        assert!(parse_run("hello").is_err());
        assert!(parse_run("[1]").is_err());
        assert!(parse_run(r#"{"warmup":false,"seconds":0.25}"#).is_err());
    }

    #[test]
    fn other_numeric_fields_are_figures() {
        let run =
            parse_run(r#"{"warmup":true,"seconds":1,"result":7,"bytes_per_task":312.5,"x":"y"}"#)
                .unwrap();
        assert_eq!(run.figures, [("bytes_per_task".to_string(), 312.5)]);
        assert_eq!(run.figure("bytes_per_task"), Some(312.5));
        assert_eq!(run.figure("x"), None);
    }
}
