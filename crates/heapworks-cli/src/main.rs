//! `heapworks`: the benchmark suite's command (see `heapworks --help`).

fn main() -> std::process::ExitCode {
    heapworks_cli::cli::main()
}
