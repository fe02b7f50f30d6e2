//! The `crewmux` binary: parse the command line, hand it to the library, and report an
//! error: one line (`crewmux: <error>: <cause>`) by default; with `-v`, color-eyre's report
//! with every cause (and the backtrace when `RUST_BACKTRACE` is set too). `RUST_BACKTRACE`
//! alone keeps the one line: many shells export it, and bad input must still read as one line.

use clap::Parser;

fn main() {
    let cli = match crewmux::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // A mistake on the command line: one line and clap's exit code (2).
            let args: Vec<String> = std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            let command = crewmux::cli_error::command_of(&args);
            let line = crewmux::cli_error::one_line(&e.render().to_string(), &command);
            crewmux::errln!("crewmux: {line}");
            std::process::exit(e.exit_code());
        }
        // --help and --version: clap's own output on stdout, exit 0.
        Err(e) => e.exit(),
    };
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
