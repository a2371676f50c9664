//! Command-line flags (clap). Size flags parse with the same parser as the config file.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::engine::size::ByteSize;

fn parse_size(s: &str) -> Result<ByteSize, String> {
    s.parse()
        .map_err(|e: crate::engine::size::SizeParseError| e.to_string())
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (e.g. 1s, 500ms, 2m)"))
}

fn parse_kv(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))
}

#[derive(Debug, Parser)]
#[command(
    name = "lakehealth",
    version,
    about = "File health of Delta Lake tables: small files, size histograms, log and vacuum debt",
    long_about = "Open a Delta table, or a folder/bucket of tables, and see which partitions are full of small files.\n\nExamples:\n  lakehealth demo                      # a live demo table, no cloud account needed\n  lakehealth ./lake/events             # the TUI on one table\n  lakehealth s3://lake/                # every table under a prefix, worst first\n  lakehealth report s3://lake/events --json",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Table or root to open in the TUI (local path, file://, s3://, gs://, az://).
    pub uri: Option<String>,
    /// The TUI janitor's policy (`a`; TOML as for `watch`). Default: the built-in policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Config file (default: $LAKEHEALTH_CONFIG, else config.toml in the platform config dir).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Object store option, e.g. AWS_REGION=us-east-1 (repeatable; overrides [storage] in config).
    #[arg(short = 'o', long = "storage-option", global = true, value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub storage_options: Vec<(String, String)>,
    /// Target file size; ideal files = ceil(bytes / target).
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size)]
    pub target: Option<ByteSize>,
    /// Files below this size are small (default: the target).
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size)]
    pub small_below: Option<ByteSize>,
    /// Upper bound of the target band.
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size)]
    pub max_file_size: Option<ByteSize>,
    /// Folder levels searched for tables under a root.
    #[arg(long, global = true, value_name = "N")]
    pub depth: Option<usize>,
    /// Iceberg: follow manifest paths outside the table's folder (a table copied or moved
    /// without rewriting its metadata). Off by default: metadata can point anywhere.
    #[arg(long, global = true)]
    pub trust_metadata_paths: bool,
    /// How often the TUI reads the open table's log for new commits (default: 1s for local
    /// tables, 5s for object stores).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub poll: Option<Duration>,
    /// Log file (default: lakehealth.log in the platform data dir).
    #[arg(long, global = true, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Where compaction bins are rewritten (compact, TUI); commits always happen here.
    #[arg(long, value_enum, global = true, default_value = "local")]
    pub executor: ExecutorArg,
    /// Ray dashboard address for --executor ray, e.g. http://head:8265 (headers: $RAY_JOB_HEADERS).
    #[arg(long, value_name = "URL", env = "RAY_ADDRESS", global = true)]
    pub ray_address: Option<String>,
    /// lakehealth binary the Ray nodes run (default: this one; build it for the nodes' platform).
    #[arg(long, value_name = "PATH", global = true)]
    pub worker_binary: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a table's (or every table's under a root) statistics.
    Report(ReportArgs),
    /// Create (or reuse) a demo streaming table, keep appending to it, and open the TUI.
    Demo(DemoArgs),
    /// Append sensor micro-batches to a table like a Structured Streaming query.
    Stream(StreamArgs),
    /// Compact small files of a table (OPTIMIZE commits beside concurrent writers).
    Compact(CompactArgs),
    /// Convert a Parquet folder (or a Spark file-sink folder) to a Delta table in place.
    Convert(ConvertArgs),
    /// Janitor: compact partitions by a policy as they fill with small files, saying why.
    Watch(WatchArgs),
    /// Write a checkpoint of a table's current version (or say why none is needed).
    Checkpoint(CheckpointArgs),
    /// Delete data files the log removed, and orphan files no version references, older than the
    /// retention (VACUUM).
    Vacuum(VacuumArgs),
    /// Print the config file location and the default configuration.
    Config,
    /// Rewrite one compaction bin from a JSON spec (what Ray tasks run; see README).
    Worker(WorkerArgs),
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The bin's spec: a local JSON file, or a URI (s3://, gs://, az://, file://).
    #[arg(long, value_name = "FILE_OR_URI")]
    pub spec: String,
}

/// Where bins are rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecutorArg {
    /// On this machine.
    Local,
    /// As tasks of a Ray job (needs --ray-address).
    Ray,
}

#[derive(Debug, Args)]
pub struct CheckpointArgs {
    pub uri: String,
    /// Machine-readable output on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VacuumArgs {
    pub uri: String,
    /// List what would be deleted (files, bytes) and delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Delete files removed longer ago than this (default: the table's
    /// delta.deletedFileRetentionDuration, 7 days), e.g. 168h, 30d.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub retention: Option<Duration>,
    /// Allow a retention below the table's (readers of old versions may fail).
    #[arg(long)]
    pub allow_short_retention: bool,
    /// Machine-readable output on stdout (the plan, and what was deleted).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    pub uri: String,
    /// Only partitions matching this predicate on partition columns, e.g. "ingestion_date = '2026-11-30'".
    #[arg(long = "where", value_name = "PREDICATE")]
    pub predicate: Option<String>,
    /// Only this partition, as listed by `report` (e.g. ingestion_date=2026-11-30); repeatable.
    #[arg(long, value_name = "LABEL")]
    pub partition: Vec<String>,
    /// Files at or above this size are left alone (default: the small-file threshold).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub min_file_size: Option<ByteSize>,
    /// Bins rewritten at once (each uses about one core). Default: every core when no writer
    /// committed in the last minute, else 1 at a bounded read rate (ingestion first).
    #[arg(long)]
    pub parallelism: Option<usize>,
    /// Print the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Machine-readable output on stdout (progress stays on stderr).
    #[arg(long)]
    pub json: bool,
    /// First settle results a stopped coordinator left under _lakehealth/jobs/ (commit or clean up).
    #[arg(long)]
    pub pickup: bool,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    pub uri: String,
    /// A partition column's Delta type, as COLUMN:TYPE (string when not given; the columns
    /// come from the key=value folders); repeatable.
    #[arg(long = "partition-by", value_name = "COL[:TYPE]", value_parser = parse_partition_column)]
    pub partition_by: Vec<crate::engine::formats::convert::PartitionColumn>,
    /// Print the preview and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Convert without asking (the steps the preview lists must be done first).
    #[arg(long)]
    pub yes: bool,
    /// Machine-readable output on stdout (the plan with --dry-run, else the outcome).
    #[arg(long)]
    pub json: bool,
}

fn parse_partition_column(
    s: &str,
) -> Result<crate::engine::formats::convert::PartitionColumn, String> {
    s.parse()
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Tables, or roots of tables (every table below is watched).
    #[arg(required = true)]
    pub uris: Vec<String>,
    /// Policy file (TOML; example: assets/janitor-policy.toml). Default: the built-in policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Run one cycle and exit (non-zero if a job failed or a table could not be read).
    #[arg(long)]
    pub once: bool,
    /// Every decision and result as a JSON line on stdout.
    #[arg(long)]
    pub json: bool,
    /// History file the JSON lines are appended to (default: janitor-history.jsonl in the data dir).
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Forget earlier failures: tables backing off or suspended are tried again.
    #[arg(long)]
    pub resume: bool,
    /// Do not throttle jobs while a writer is active (every core, unbounded reads).
    #[arg(long)]
    pub no_throttle: bool,
    /// Serve Prometheus metrics on http://HOST:PORT/metrics and liveness on /healthz.
    #[arg(long, value_name = "HOST:PORT")]
    pub metrics_addr: Option<std::net::SocketAddr>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    pub uri: String,
    /// Machine-readable output (schema in the README).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Folder for the demo table (default: the platform data dir).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Recreate the demo table from scratch.
    #[arg(long)]
    pub reset: bool,
    /// Do not start the background streaming writer.
    #[arg(long)]
    pub no_stream: bool,
    /// Create the table and exit without opening the TUI (prints its path).
    #[arg(long)]
    pub no_tui: bool,
}

#[derive(Debug, Args)]
pub struct StreamArgs {
    pub uri: String,
    /// Time between micro-batches.
    #[arg(long, value_parser = parse_duration)]
    pub interval: Option<Duration>,
    /// Rows per micro-batch.
    #[arg(long)]
    pub rows: Option<usize>,
    /// Streaming query id (the txn appId); a restart with the same id resumes after its last batch.
    #[arg(long, default_value = "lakehealth-stream")]
    pub query_id: String,
    /// Stop after this many batches (default: run until Ctrl-C).
    #[arg(long)]
    pub batches: Option<u64>,
}
