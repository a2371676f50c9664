//! Dispatch of the parsed command line to the engine (headless) or the TUI.

use std::collections::HashMap;

use anyhow::{Context, Result};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::args::{
    Cli, Command, Common, DemoArgs, DiscoveryArgs, ExecutorArg, ExecutorArgs, ReportArgs, SizeArgs,
    StorageArgs, StreamArgs,
};
use super::report_skipping::attach_skipping_to;
use super::report_text::{root_text, table_text};
use crate::config::{Config, DEFAULT_CONFIG};
use crate::engine::compact::executor::{Executor, RayOptions};
use crate::engine::demo::{DemoProgress, DemoShape, default_demo_dir, ensure_demo_table};
use crate::engine::location::Location;
use crate::engine::maintenance::orphans::attach_orphans_to;
use crate::engine::model::thresholds::Thresholds;
use crate::engine::open::{Opened, open};
use crate::engine::options::OpenOptions;
use crate::engine::options::ReplayOptions;
use crate::engine::secrets::scrub;
use crate::engine::size::{format_bytes, plural};
use crate::engine::stream::writer::{StreamOptions, run_stream};

/// Config file merged with flags.
pub struct Settings {
    pub config: Config,
    pub open: OpenOptions,
    /// Where compaction bins are rewritten (`--executor`).
    pub executor: Executor,
    /// `--target` as given (also in `open.thresholds`): a compaction takes it over the table's
    /// own target (`delta.targetFileSize`, `write.target-file-size-bytes`).
    pub target_override: Option<u64>,
}

/// The flags of the command being run that `settings` merges with the config file; a
/// command without one of these groups gets its defaults.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub common: Common,
    pub storage: StorageArgs,
    pub sizes: SizeArgs,
    pub discovery: DiscoveryArgs,
    pub executor: ExecutorArgs,
}

impl Flags {
    /// The groups the parsed command line's command takes.
    pub fn of(cli: &Cli) -> Flags {
        let mut f = Flags {
            common: cli.common.clone(),
            ..Flags::default()
        };
        match &cli.command {
            None => {
                f.storage = cli.storage.clone();
                f.sizes = cli.sizes.clone();
                f.discovery = cli.discovery.clone();
                f.executor = cli.executor.clone();
            }
            Some(Command::Report(a)) => {
                f.storage = a.storage.clone();
                f.sizes = a.sizes.clone();
                f.discovery = a.discovery.clone();
            }
            Some(Command::Watch(a)) => {
                f.storage = a.storage.clone();
                f.sizes = a.sizes.clone();
                f.discovery = a.discovery.clone();
            }
            Some(Command::Compact(a)) | Some(Command::Purge(a)) => {
                f.storage = a.storage.clone();
                f.sizes = a.sizes.clone();
                f.executor = a.executor.clone();
                f.discovery.trust_metadata_paths = a.trust_metadata_paths;
            }
            Some(Command::Demo(a)) => {
                f.sizes = a.sizes.clone();
                f.executor = a.executor.clone();
            }
            Some(Command::Stream(a)) => f.storage = a.storage.clone(),
            Some(Command::Convert(a)) => f.storage = a.storage.clone(),
            Some(Command::Checkpoint(a)) => f.storage = a.storage.clone(),
            Some(Command::Vacuum(a)) => f.storage = a.storage.clone(),
            Some(Command::Worker(a)) => f.storage = a.storage.clone(),
            Some(Command::Config) | Some(Command::Key(_)) => {}
        }
        f
    }
}

/// The executor the flags ask for.
fn executor(e: &ExecutorArgs) -> Result<Executor> {
    Ok(match e.executor {
        ExecutorArg::Local => Executor::Local,
        ExecutorArg::Ray => {
            let Some(address) = &e.ray_address else {
                anyhow::bail!(
                    "--executor ray needs --ray-address (the Ray dashboard, e.g. http://head:8265)"
                )
            };
            let mut r = RayOptions::new(address);
            r.worker_binary = e.worker_binary.clone();
            Executor::Ray(r)
        }
    })
}

/// The thresholds of the config file with the size flags applied.
fn thresholds(config: &Config, sizes: &SizeArgs) -> Result<Thresholds> {
    let mut t = config.thresholds();
    if let Some(v) = sizes.target {
        crate::engine::size::check_target_file_size(v.0, "--target")?;
        t.target_file_size = v.0;
        if config.health.small_file_size.is_none() && sizes.small_below.is_none() {
            t.small_file_size = v.0;
        }
    }
    if let Some(v) = sizes.small_below {
        t.small_file_size = v.0;
    }
    if let Some(v) = sizes.max_file_size {
        t.max_file_size = v.0;
    }
    check_band(&t, sizes)?;
    Ok(t)
}

/// Where a bound of the size band came from, for a message that blames the right one.
fn source(flag: &'static str, given: bool) -> &'static str {
    if given {
        flag
    } else {
        "the config file or default"
    }
}

/// The band's bounds fit together: small threshold and target at most the largest healthy size.
fn check_band(t: &Thresholds, sizes: &SizeArgs) -> Result<()> {
    let max_from = source("--max-file-size", sizes.max_file_size.is_some());
    if sizes.target.is_some() && t.target_file_size > t.max_file_size {
        anyhow::bail!(
            "--target {} is above the largest healthy file size, {} (from {max_from}): give \
             --max-file-size {} or more as well, or a smaller --target",
            format_bytes(t.target_file_size),
            format_bytes(t.max_file_size),
            format_bytes(t.target_file_size),
        );
    }
    if t.max_file_size < t.small_file_size {
        let small_from = if sizes.small_below.is_some() {
            "--small-below"
        } else if sizes.target.is_some() {
            "--target"
        } else {
            "the config file or default"
        };
        anyhow::bail!(
            "the largest healthy file size, {} (from {max_from}), is below the small-file \
             threshold, {} (from {small_from})",
            format_bytes(t.max_file_size),
            format_bytes(t.small_file_size),
        );
    }
    Ok(())
}

pub fn settings(flags: &Flags) -> Result<Settings> {
    let (config, _) = Config::load(flags.common.config.as_deref())?;
    let t = thresholds(&config, &flags.sizes)?;
    let mut storage: HashMap<String, String> = config.storage.clone();
    storage.extend(flags.storage.storage_options.iter().cloned());
    // Whatever text leaves the process from here on has these replaced (`engine::secrets`).
    crate::engine::secrets::register_options(&storage);
    // The config's key seals job records unless $LAKEHEALTH_KEY gives one.
    if std::env::var_os(crate::engine::sealed::KEY_ENV).is_none()
        && let Some(keyring) = config.trust.keyring()?
    {
        crate::engine::sealed::install(keyring);
    }
    let open = OpenOptions {
        thresholds: t,
        replay: ReplayOptions {
            history_commits: config.ui.history_commits.max(1),
            ..ReplayOptions::default()
        },
        storage_options: storage,
        discovery_depth: flags.discovery.depth.unwrap_or(config.discovery.max_depth),
        trust_metadata_paths: flags.discovery.trust_metadata_paths,
        prices: config.prices(),
    };
    Ok(Settings {
        config,
        open,
        executor: executor(&flags.executor)?,
        target_override: flags.sizes.target.map(|t| t.0),
    })
}

pub async fn run(cli: Cli) -> Result<()> {
    let s = settings(&Flags::of(&cli))?;
    match cli.command {
        Some(Command::Report(a)) => report(a, &s).await,
        Some(Command::Demo(a)) => {
            let poll = a.poll.poll;
            demo(a, s, poll).await
        }
        Some(Command::Stream(a)) => stream(a, &s).await,
        Some(Command::Compact(a)) => super::compact::compact(a, &s).await,
        Some(Command::Purge(mut a)) => {
            a.purge = true;
            super::compact::compact(a, &s).await
        }
        Some(Command::Convert(a)) => super::convert::convert_cmd(a, &s).await,
        Some(Command::Watch(a)) => super::watch::watch(a, &s).await,
        Some(Command::Checkpoint(a)) => super::checkpoint::run(a, &s).await,
        Some(Command::Vacuum(a)) => super::vacuum::run(a, &s).await,
        Some(Command::Worker(a)) => super::worker::worker(a, &s).await,
        Some(Command::Key(a)) => super::key::run(a, &s),
        Some(Command::Config) => {
            match Config::default_path() {
                Some(p) => crate::outln!(
                    "# config file: {} (override with --config or $LAKEHEALTH_CONFIG)",
                    p.display()
                ),
                None => {
                    crate::outln!(
                        "# no platform config directory; use --config or $LAKEHEALTH_CONFIG"
                    )
                }
            }
            crate::outln!("# log file: {}", crate::logging::log_path().display());
            crate::out!("{DEFAULT_CONFIG}");
            Ok(())
        }
        None => match cli.uri {
            Some(uri) => {
                let loc = Location::parse(&uri)?;
                let policy = match &cli.policy {
                    Some(p) => crate::engine::janitor::policy::Policy::load(p, s.open.thresholds)?,
                    None => crate::engine::janitor::policy::Policy::builtin(s.open.thresholds),
                };
                let tui = crate::tui::TuiOptions {
                    refresh: s.config.ui.refresh_interval,
                    poll: cli.poll.poll,
                    executor: s.executor,
                    policy,
                    iceberg_catalog: cli.catalog.clone(),
                    history: s.config.history.rotation(),
                };
                crate::tui::run(loc, s.open, tui).await
            }
            None => {
                use clap::CommandFactory;
                Cli::command().print_help()?;
                crate::outln!();
                anyhow::bail!("give a table or root to open, or a command (try `lakehealth demo`)")
            }
        },
    }
}

async fn report(a: ReportArgs, s: &Settings) -> Result<()> {
    let loc = Location::parse(&a.uri)?;
    let mut opened = open(&loc, &s.open, &super::convert::stderr_progress()).await?;
    // The orphan scan lists every data folder and reads every live path: only when asked
    // (opening a 1M-file table reads neither).
    if a.orphans {
        attach_orphans_to(&mut opened, &s.open.storage_options).await;
    }
    if a.skipping {
        attach_skipping_to(&mut opened, &s.open).await;
    }
    match (&opened, a.json) {
        (Opened::Table(t), true) => crate::outln!("{}", scrub(&serde_json::to_string_pretty(t)?)),
        (Opened::Root(r), true) => crate::outln!("{}", scrub(&serde_json::to_string_pretty(r)?)),
        (Opened::Table(t), false) => crate::out!("{}", scrub(&table_text(t))),
        (Opened::Root(r), false) => crate::out!("{}", scrub(&root_text(r))),
    }
    // The tables that read are printed above; one that did not fails the command (scripts
    // and CI must not take a partial report for a healthy lake).
    if let Opened::Root(r) = &opened
        && !r.errors.is_empty()
    {
        anyhow::bail!(
            "{} of {} tables under {} could not be read (listed above)",
            r.errors.len(),
            r.errors.len() + r.tables.len(),
            r.root
        );
    }
    Ok(())
}

fn stream_options(s: &Settings, a: Option<&StreamArgs>, query_id: String) -> StreamOptions {
    StreamOptions {
        query_id,
        interval: a
            .and_then(|a| a.interval)
            .unwrap_or(s.config.stream.interval),
        rows: a
            .and_then(|a| a.rows)
            .unwrap_or(s.config.stream.rows)
            .max(1),
        max_batches: a.and_then(|a| a.batches),
        storage_options: s.open.storage_options.clone(),
    }
}

async fn stream(a: StreamArgs, s: &Settings) -> Result<()> {
    let loc = Location::parse(&a.uri)?;
    let opts = stream_options(s, Some(&a), a.query_id.clone());
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            c2.cancel();
        }
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let reader_gone = cancel.clone();
    let printer = tokio::spawn(async move {
        // One JSON line per committed batch on stdout: tests and scripts read them.
        while let Some(ev) = rx.recv().await {
            if let Ok(line) = serde_json::to_string(&ev) {
                crate::outln!("{line}");
            }
            if super::print::stdout_lost().is_some() {
                // Nobody reads the batches any more (`| head`): stop after this one.
                reader_gone.cancel();
                break;
            }
        }
    });
    let n = run_stream(&loc, &opts, cancel, tx).await?;
    let _ = printer.await;
    crate::errln!("committed {n} batches");
    Ok(())
}

async fn demo(a: DemoArgs, s: Settings, poll: Option<std::time::Duration>) -> Result<()> {
    let dir = a.dir.clone().unwrap_or_else(default_demo_dir);
    crate::errln!("preparing demo table in {} ...", dir.display());
    // A new demo takes seconds to write: each day says so as it lands (a reused one is silent).
    let said = |p: DemoProgress| {
        crate::errln!(
            "  {}: {} ({}) written, {}/{} files",
            p.day,
            plural(p.files as u64, "file"),
            format_bytes(p.bytes),
            p.written,
            p.total
        );
    };
    let loc = ensure_demo_table(&dir, DemoShape::default(), a.reset, &said)
        .await
        .context("the demo table could not be prepared")?;
    if a.no_tui {
        crate::outln!("{}", loc.display());
        return Ok(());
    }
    let cancel = CancellationToken::new();
    let writer = if a.no_stream {
        None
    } else {
        // Its own thread and runtime, so the UI and the writer never starve each other.
        let opts = stream_options(&s, None, "lakehealth-demo".into());
        let loc2 = loc.clone();
        let c2 = cancel.clone();
        Some(std::thread::spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!("demo writer runtime: {e}");
                    return;
                }
            };
            rt.block_on(async move {
                let (tx, mut rx) = mpsc::unbounded_channel();
                tokio::spawn(async move { while rx.recv().await.is_some() {} });
                if let Err(e) = run_stream(&loc2, &opts, c2, tx).await {
                    tracing::error!("demo writer stopped: {e}");
                }
            });
        }))
    };
    let refresh = s
        .config
        .ui
        .refresh_interval
        .min(std::time::Duration::from_secs(2));
    let policy = crate::engine::janitor::policy::Policy::builtin(s.open.thresholds);
    let tui = crate::tui::TuiOptions {
        refresh,
        poll,
        executor: s.executor,
        policy,
        iceberg_catalog: None,
        history: s.config.history.rotation(),
    };
    let r = crate::tui::run(loc, s.open, tui).await;
    cancel.cancel();
    if let Some(w) = writer {
        let _ = tokio::task::spawn_blocking(move || w.join()).await;
    }
    r
}
