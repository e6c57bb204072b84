//! `kit-kraft`: the `kraft` command, built with the conformance package so that the kit (and its test)
//! can start a real `kraft node` process without depending on another package's binary.

fn main() {
    std::process::exit(kraft::cli::main());
}
