// The entry point prints only what it scrubbed and made inert itself (clap's errors) or a
// last-resort error before the output machinery exists; everything else goes through
// `cli::print`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

mod allocator;

use lakehealth::cli::args::{Cli, parse_from};
use lakehealth::engine::secrets;

/// The command line, parsed after its secrets are registered: clap's errors quote arguments
/// (a mistyped `-o KEY:SECRET`), so they are printed scrubbed.
fn parse() -> Result<Cli, ExitCode> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    secrets::register_args(args.iter().map(|a| a.to_string_lossy().into_owned()));
    parse_from(args).map_err(|e| {
        let plain = e.render().to_string();
        // Scrubbed and inert: an argument may be a table's folder name a shell glob expanded.
        let shown = lakehealth::cli::print::shown(&plain);
        if shown == plain {
            // Nothing to hide or escape: clap prints it (with colours on a terminal).
            e.exit()
        }
        if e.use_stderr() {
            eprint!("{shown}");
        } else {
            print!("{shown}");
        }
        ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
    })
}

fn main() -> ExitCode {
    allocator::configure();
    let cli = match parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let _log = lakehealth::logging::init(cli.common.log_file.clone());
    lakehealth::engine::panic_guard::install_hook();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("lakehealth")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(lakehealth::cli::run::run(cli));
    use lakehealth::cli::print::{StdoutLost, stdout_lost};
    match (result, stdout_lost()) {
        // `lakehealth report ROOT | head`: the reader has what it wanted.
        (_, Some(StdoutLost::Closed)) => ExitCode::SUCCESS,
        (_, Some(StdoutLost::Failed(why))) => {
            tracing::error!("cannot write to standard output: {why}");
            eprintln!("error: cannot write to standard output ({why}): the output is incomplete");
            ExitCode::FAILURE
        }
        (Ok(()), None) => ExitCode::SUCCESS,
        (Err(e), None) => {
            let text = lakehealth::cli::error_text(&e);
            let text = secrets::scrub(&text);
            tracing::error!("{text}");
            // Scrubbed and inert: the error may quote a table's text.
            lakehealth::cli::print::err(&format!("error: {text}\n"));
            ExitCode::FAILURE
        }
    }
}
