//! The `cri-harness` command; everything but the log subscriber lives in the library.

use std::io::IsTerminal;
use std::process::ExitCode;

/// Every gRPC call to the in-process mock allocates on both sides; with mimalloc instead of
/// glibc's allocator a property run does 12-16 % more cases a second (`docs/benchmarks.md`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(colour_logs())
        .init();
    cri_harness::cli::main()
}

/// Colours only for a person at a terminal: log files and CI logs stay plain, and `NO_COLOR`
/// (set and not empty, per no-color.org) turns them off there too.
fn colour_logs() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
