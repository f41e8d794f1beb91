//! External peers: programs in other languages that run a workload
//! themselves and report their runs to the harness.

pub mod go;
