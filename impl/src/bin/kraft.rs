//! The `kraft` command; see `kraft --help` and `impl/README.md`.

fn main() {
    std::process::exit(kraft::cli::main());
}
