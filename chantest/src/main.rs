//! The `chantest` binary: chantest with the built-in locks (see the library, [`chantest`]).

fn main() -> std::process::ExitCode {
    chantest::main_with(chantest::Locks::builtin())
}
