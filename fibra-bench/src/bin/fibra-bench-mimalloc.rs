//! fibra-bench with mimalloc as the global allocator: the suite starts it
//! for the `tokio-*-mimalloc` rows (tokio as production users often run it),
//! so that a ratio against fibra, whose tasks come from its own per-worker
//! slabs, measures the runtime and not glibc's malloc. It builds it on first
//! use (see the library's `mimalloc_bin` module); it is not meant to be run
//! by hand, though it runs the whole suite like `fibra-bench` if it is.

use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    fibra_bench::main(fibra_bench::Allocator::Mimalloc)
}
