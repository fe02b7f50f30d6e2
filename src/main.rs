//! The `crewmux` binary: parse the command line, hand it to the library, and report an
//! error: one line (`crewmux: <error>: <cause>`) by default; with `-v`, color-eyre's report
//! with every cause (and the backtrace when `RUST_BACKTRACE` is set too). `RUST_BACKTRACE`
//! alone keeps the one line: many shells export it, and bad input must still read as one line.

use clap::Parser;

fn main() {
    let cli = crewmux::cli::Cli::parse();
    let verbose = cli.verbose;
    if verbose {
        // Err: hooks already installed, which cannot happen this early; the report below
        // then falls back to eyre's plain format.
        let hooks = color_eyre::config::HookBuilder::default().display_location_section(false);
        // Colours only on a terminal: a log file or a pipe gets plain text.
        let hooks = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            hooks
        } else {
            hooks.theme(color_eyre::config::Theme::new())
        };
        if let Err(e) = hooks.install() {
            crewmux::errln!("crewmux: error reports stay plain: {e}");
        }
    }
    match crewmux::commands::execute(cli) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            let code = err.exit_code();
            if verbose {
                crewmux::errln!("crewmux: {:?}", color_eyre::Report::new(err));
            } else {
                crewmux::errln!("crewmux: {}", err.one_line());
            }
            std::process::exit(code);
        }
    }
}
