//! `cargo run --release -p fibra-bench`: fibra's benchmark suite, with the
//! system's allocator (see the library's docs).

use std::process::ExitCode;

fn main() -> ExitCode {
    fibra_bench::main(fibra_bench::Allocator::System)
}
