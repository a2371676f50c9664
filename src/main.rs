use std::process::ExitCode;

use clap::Parser;
use lakehealth::cli::args::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    match rt.block_on(lakehealth::cli::run::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let text = lakehealth::cli::error_text(&e);
            let text = lakehealth::engine::secrets::scrub(&text);
            tracing::error!("{text}");
            eprintln!("error: {text}");
            ExitCode::FAILURE
        }
    }
}
