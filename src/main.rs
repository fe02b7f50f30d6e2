//! The `crewmux` binary: parse the command line and hand it to the library.

use clap::Parser;

fn main() {
    let cli = crewmux::cli::Cli::parse();
    match crewmux::commands::dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("crewmux: {err}");
            std::process::exit(err.exit_code());
        }
    }
}
