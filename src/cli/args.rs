//! Command-line flags (clap). Size flags parse with the same parser as the config file.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::engine::size::ByteSize;

/// The largest size a flag takes (as a policy's sizes: `MAX_SIZE`); more is a typo.
const MAX_SIZE: u64 = crate::engine::janitor::policy::MAX_SIZE;
/// The longest duration a flag takes (as a policy's durations: `MAX_DURATION`).
const MAX_DURATION: Duration = crate::engine::janitor::policy::MAX_DURATION;

/// A size from 1 B to `MAX_SIZE`: no size flag means anything at 0.
fn parse_size(s: &str) -> Result<ByteSize, String> {
    let range = || {
        format!(
            "sizes are from 1 B to {}",
            crate::engine::size::format_bytes(MAX_SIZE)
        )
    };
    if s.trim().starts_with('-') {
        return Err(format!("{s:?} is negative: {}", range()));
    }
    let size: ByteSize = s
        .parse()
        .map_err(|e: crate::engine::size::SizeParseError| e.to_string())?;
    if !(1..=MAX_SIZE).contains(&size.0) {
        return Err(format!("{s:?} is out of range: {}", range()));
    }
    // `128mb` is 10^6 bytes a MB (122 MiB), which is rarely what a lowercase unit on a command
    // line means: the two readings differ by 5 to 13 %, so the user writes which one.
    let unit = s
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if ["kb", "mb", "gb", "tb", "pb"].contains(&unit.trim()) {
        let (num, upper) = (s.trim().trim_end_matches(unit), unit.trim().to_uppercase());
        let binary = format!("{num}{}iB", &upper[..1]);
        let binary_bytes = binary
            .parse::<ByteSize>()
            .map_or_else(|e| e.to_string(), |b| format!("{} bytes", b.0));
        return Err(format!(
            "{s:?} is ambiguous: {num}{upper} is {} bytes ({}), {binary} is {binary_bytes}; \
             write one of them",
            size.0,
            crate::engine::size::format_bytes(size.0),
        ));
    }
    Ok(size)
}

/// A duration from 0 to `MAX_DURATION` (more would overflow a deadline).
fn parse_duration(s: &str) -> Result<Duration, String> {
    bounded_duration(s, true)
}

/// A duration between repeated actions: zero would repeat without pause.
fn parse_interval(s: &str) -> Result<Duration, String> {
    bounded_duration(s, false)
}

/// A duration of at most `MAX_DURATION`, and above zero unless `zero_ok`; the error says the
/// range. Negative values reach here (the flags set `allow_hyphen_values`).
fn bounded_duration(s: &str, zero_ok: bool) -> Result<Duration, String> {
    let max = humantime::format_duration(MAX_DURATION);
    let range = match zero_ok {
        true => format!("must be from 0 to {max}"),
        false => format!("must be above zero and at most {max}"),
    };
    if s.trim().starts_with('-') {
        return Err(format!("{s:?} is negative: {range}"));
    }
    let d =
        humantime::parse_duration(s).map_err(|e| format!("{e} (e.g. 1s, 500ms, 2m); {range}"))?;
    if d > MAX_DURATION || (d.is_zero() && !zero_ok) {
        return Err(format!("{s:?} is out of range: {range}"));
    }
    Ok(d)
}

/// A whole number from `min` to `max`, for a flag counting `what`. Negative numbers reach here
/// (the flags set `allow_negative_numbers`) and are named as out of range, not as unknown flags.
fn parse_whole(s: &str, what: &str, min: u64, max: u64) -> Result<u64, String> {
    let range = if max == u64::MAX {
        format!("{min} or more")
    } else {
        format!("{min} to {max}")
    };
    let n: i128 = s
        .trim()
        .parse()
        .map_err(|_| format!("expected a whole number of {what}, {range}"))?;
    if n < i128::from(min) || n > i128::from(max) {
        return Err(format!("{n} {what} is out of range: {range}"));
    }
    // In range, so it fits.
    Ok(u64::try_from(n).unwrap_or(max))
}

/// `--depth`: folder levels (0: the root itself); each level costs a listing of every folder.
fn parse_depth(s: &str) -> Result<usize, String> {
    parse_whole(s, "folder levels", 0, MAX_DISCOVERY_DEPTH).map(|n| n as usize)
}

/// The deepest `--depth`: a lake's tables are never that far below its root.
const MAX_DISCOVERY_DEPTH: u64 = 64;

/// `--metrics-tables`: 0 gives totals only.
fn parse_metrics_tables(s: &str) -> Result<usize, String> {
    parse_whole(s, "tables", 0, 100_000).map(|n| n as usize)
}

/// `--rows`: rows per micro-batch (as `stream.rows` in the config: at least 1).
fn parse_rows(s: &str) -> Result<usize, String> {
    parse_whole(s, "rows", 1, 100_000_000).map(|n| n as usize)
}

/// `--batches`: at least one (zero would write nothing).
fn parse_batches(s: &str) -> Result<u64, String> {
    parse_whole(s, "batches", 1, u64::MAX)
}

/// Bins at once: at least one, at most `MAX_PARALLELISM` (one thread each).
fn parse_parallelism(s: &str) -> Result<usize, String> {
    use crate::engine::compact::budget::MAX_PARALLELISM;
    parse_whole(s, "bins at once", 1, MAX_PARALLELISM as u64)
        .map(|n| n as usize)
        .map_err(|e| format!("{e} (each bin is rewritten on its own thread)"))
}

/// `KEY=VALUE`. The error does not quote the argument: a mistyped `KEY:SECRET` is a
/// credential (clap quotes the argument itself, scrubbed: `engine::secrets::register_args`).
fn parse_kv(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.to_string()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| "expected KEY=VALUE, e.g. -o AWS_REGION=us-east-1".to_string())
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
    /// The catalog `c` compacts Iceberg tables through: sqlite:///FILE,
    /// postgresql://USER@HOST:PORT/DB or http(s)://HOST:PORT.
    #[arg(long, value_name = "URI")]
    pub catalog: Option<String>,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub sizes: SizeArgs,
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
    #[command(flatten)]
    pub poll: PollArgs,
    #[command(flatten)]
    pub executor: ExecutorArgs,
    #[command(flatten)]
    pub common: Common,
}

/// Options of every command.
#[derive(Debug, Clone, Default, Args)]
pub struct Common {
    /// Config file (default: $LAKEHEALTH_CONFIG, else config.toml in the platform config dir).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Log file (default: lakehealth.log in the platform data dir).
    #[arg(long, global = true, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
}

/// Options of the commands that open a location.
#[derive(Debug, Clone, Default, Args)]
pub struct StorageArgs {
    /// Object store option, e.g. AWS_REGION=us-east-1 (repeatable; overrides [storage] in config).
    #[arg(short = 'o', long = "storage-option", value_name = "KEY=VALUE", value_parser = parse_kv)]
    pub storage_options: Vec<(String, String)>,
}

/// Options of the commands that judge file sizes.
#[derive(Debug, Clone, Default, Args)]
pub struct SizeArgs {
    /// Target file size, with a unit (e.g. 128MiB; at least 1MiB). A partition's ideal files:
    /// its files at or above the small threshold, plus floor(small bytes / max(target, small
    /// threshold)) for its small files, at least 1 when it has one (docs/numbers.md).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub target: Option<ByteSize>,
    /// Files below this size are small (default: the target).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub small_below: Option<ByteSize>,
    /// Upper bound of the target band.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub max_file_size: Option<ByteSize>,
}

/// Options of the commands that find tables under a root.
#[derive(Debug, Clone, Default, Args)]
pub struct DiscoveryArgs {
    /// Folder levels searched for tables under a root.
    #[arg(long, value_name = "N", value_parser = parse_depth, allow_negative_numbers = true)]
    pub depth: Option<usize>,
    /// Iceberg: follow manifest paths outside the table's folder (a table copied or moved
    /// without rewriting its metadata). Off by default: metadata can point anywhere.
    #[arg(long)]
    pub trust_metadata_paths: bool,
}

/// Options of the TUI.
#[derive(Debug, Clone, Default, Args)]
pub struct PollArgs {
    /// How often the TUI reads the open table's log for new commits (default: 1s for local
    /// tables, 5s for object stores).
    #[arg(long, value_name = "DURATION", value_parser = parse_interval, allow_hyphen_values = true)]
    pub poll: Option<Duration>,
}

/// Options of the commands that compact (compact, the TUI).
#[derive(Debug, Clone, Default, Args)]
pub struct ExecutorArgs {
    /// Where compaction bins are rewritten; commits always happen here.
    #[arg(long, value_enum, default_value = "local")]
    pub executor: ExecutorArg,
    /// Ray dashboard address for --executor ray, e.g. http://head:8265 (headers: $RAY_JOB_HEADERS).
    #[arg(long, value_name = "URL", env = "RAY_ADDRESS")]
    pub ray_address: Option<String>,
    /// lakehealth binary the Ray nodes run (default: this one; build it for the nodes' platform).
    #[arg(long, value_name = "PATH")]
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
    /// Compact small files of a table (OPTIMIZE commits beside concurrent writers), and files
    /// with more than --max-deleted-ratio of their rows deleted by deletion vectors.
    Compact(CompactArgs),
    /// Rewrite every file with a deletion vector in the selected partitions without its deleted
    /// rows (Delta's REORG TABLE ... APPLY (PURGE)), merging small files as compact does.
    Purge(CompactArgs),
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
    /// Rewrite one compaction bin from a JSON spec (what Ray tasks run; see docs/guide.md).
    Worker(WorkerArgs),
    /// The installation key that seals job records: where it comes from and its id (never
    /// the key), or rotate the key file.
    Key(KeyArgs),
}

#[derive(Debug, Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    pub action: Option<KeyAction>,
}

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum KeyAction {
    /// Where the key comes from and the ids of the keys accepted (the default).
    Show,
    /// Seal with a new key from now on; the current one stays accepted as the previous key
    /// (the data dir's key file only: a key from $LAKEHEALTH_KEY or the config is rotated there).
    Rotate,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The bin's spec: a local JSON file, or a URI (s3://, gs://, az://, file://).
    #[arg(long, value_name = "FILE_OR_URI")]
    pub spec: String,
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// Where bins are rewritten.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecutorArg {
    /// On this machine.
    #[default]
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
    #[command(flatten)]
    pub storage: StorageArgs,
}

#[derive(Debug, Args)]
pub struct VacuumArgs {
    pub uri: String,
    /// List what would be deleted (files, bytes) and delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Delete files removed longer ago than this (default: the table's
    /// delta.deletedFileRetentionDuration, 7 days; Iceberg: history.expire.max-snapshot-age-ms,
    /// 5 days), e.g. 168h, 30d.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, allow_hyphen_values = true)]
    pub retention: Option<Duration>,
    /// Allow a retention below the table's (readers of old versions may fail).
    #[arg(long)]
    pub allow_short_retention: bool,
    /// Machine-readable output on stdout (the plan, and what was deleted).
    #[arg(long)]
    pub json: bool,
    /// Iceberg: the catalog the snapshot expiry commits through (as for `compact`):
    /// sqlite:///FILE, postgresql://USER@HOST:PORT/DB or http(s)://HOST:PORT.
    #[arg(long, value_name = "URI")]
    pub catalog: Option<String>,
    /// Iceberg: the table in the catalog, NAMESPACE.NAME (default: the one at the folder given).
    #[arg(long, value_name = "NS.NAME")]
    pub table: Option<String>,
    #[command(flatten)]
    pub storage: StorageArgs,
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
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub min_file_size: Option<ByteSize>,
    /// Bins rewritten at once (each uses about one core). Default: every core when no writer
    /// committed in the last minute, else 1 at a bounded read rate (ingestion first).
    #[arg(long, value_parser = parse_parallelism, allow_negative_numbers = true)]
    pub parallelism: Option<usize>,
    /// Rewrite every file of each chosen partition sorted by these columns, first to last
    /// (e.g. --sort-by ts). Rows are only reordered: proven as a multiset.
    #[arg(long, value_name = "COLS", value_delimiter = ',', conflicts_with_all = ["zorder", "unclustered"])]
    pub sort_by: Vec<String>,
    /// Rewrite every file of each chosen partition z-ordered over these columns, as OPTIMIZE
    /// ZORDER BY does (e.g. --zorder sensor,ts): lookups on any of them skip more files.
    #[arg(
        long,
        value_name = "COLS",
        value_delimiter = ',',
        conflicts_with = "unclustered"
    )]
    pub zorder: Vec<String>,
    /// A clustered (liquid) table's small files are merged without clustering them (by
    /// default they are clustered by its clustering columns, as Spark's clustering does).
    #[arg(long)]
    pub unclustered: bool,
    /// Memory a bin's sort holds before it spills to the temp folder (default 512MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, allow_hyphen_values = true)]
    pub sort_memory: Option<ByteSize>,
    /// Print the plan and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Machine-readable output on stdout (progress stays on stderr).
    #[arg(long)]
    pub json: bool,
    /// First settle results a stopped coordinator left under _lakehealth/jobs/ (commit or clean up).
    #[arg(long)]
    pub pickup: bool,
    /// Files whose deletion vectors mark more than this share of their rows deleted are
    /// rewritten whatever their size (Delta's OPTIMIZE maxDeletedRowsRatio).
    #[arg(long, value_name = "RATIO", default_value_t = crate::engine::model::thresholds::DEFAULT_MAX_DELETED_RATIO, value_parser = parse_ratio, allow_negative_numbers = true)]
    pub max_deleted_ratio: f64,
    /// Set by the `purge` command: every file with a deletion vector is rewritten.
    #[arg(skip)]
    pub purge: bool,
    /// Iceberg: the catalog the commit goes through, sqlite:///FILE (a SQL catalog as pyiceberg
    /// keeps it; sqlite:////abs/path for an absolute path), postgresql://USER@HOST:PORT/DB (the
    /// same on PostgreSQL; PGPASSWORD) or http(s)://HOST:PORT (REST).
    #[arg(long, value_name = "URI")]
    pub catalog: Option<String>,
    /// Iceberg: the table in the catalog, NAMESPACE.NAME (default: the one at the folder given).
    #[arg(long, value_name = "NS.NAME")]
    pub table: Option<String>,
    /// Iceberg: accept manifests and data files outside the table's folder (a table copied or
    /// moved without rewriting its metadata); outputs are written beside their inputs.
    #[arg(long)]
    pub trust_metadata_paths: bool,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub sizes: SizeArgs,
    #[command(flatten)]
    pub executor: ExecutorArgs,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    pub uri: String,
    /// A partition column's Delta type, as COLUMN:TYPE (string when not given; the columns
    /// come from the key=value folders); repeatable.
    // Parsed by its `FromStr`: clap shows the typed error's text.
    #[arg(long = "partition-by", value_name = "COL[:TYPE]")]
    pub partition_by: Vec<crate::engine::parquet_folder::convert::PartitionColumn>,
    /// Print the preview and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Convert without asking (the steps the preview lists must be done first).
    #[arg(long)]
    pub yes: bool,
    /// Machine-readable output on stdout (the plan with --dry-run, else the outcome).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub storage: StorageArgs,
}

fn parse_ratio(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!(
            "{s:?} is not a ratio from 0 to 1 (e.g. 0.05 for 5 % of a file's rows)"
        )),
    }
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Tables, or roots of tables (every table below is watched).
    #[arg(required = true)]
    pub uris: Vec<String>,
    /// Policy file (TOML; example: assets/janitor-policy.toml). Default: the built-in policy.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Run one cycle and every job it queued, then exit (non-zero if a job failed or a table
    /// could not be read).
    #[arg(long)]
    pub once: bool,
    /// Stop after this long as on Ctrl-C (no new job starts, running jobs stop before their
    /// next commit) and say what was left, e.g. "30m".
    #[arg(long, value_name = "DURATION", value_parser = parse_interval, allow_hyphen_values = true)]
    pub max_duration: Option<Duration>,
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
    /// Tables given per-table series on /metrics (the most small files first); totals cover
    /// every table, so a scrape stays bounded however many tables are watched.
    #[arg(long, value_name = "N", default_value_t = crate::engine::janitor::metrics::DEFAULT_SERIES_LIMIT, value_parser = parse_metrics_tables, allow_negative_numbers = true)]
    pub metrics_tables: usize,
    /// The catalog Iceberg tables are compacted through (sqlite:///FILE, postgresql://…,
    /// http(s)://… for REST); overrides the policy's iceberg_catalog.
    #[arg(long, value_name = "URI")]
    pub catalog: Option<String>,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub sizes: SizeArgs,
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    pub uri: String,
    /// Machine-readable output (schema in docs/json-schemas.md).
    #[arg(long)]
    pub json: bool,
    /// Also look for orphan files (data files no version references): lists every data
    /// folder and reads every live path, so it costs what the table holds; off by default.
    #[arg(long)]
    pub orphans: bool,
    /// Also measure how well the files skip for a value of each column (overlap depth from
    /// the log's min/max statistics; reads every file's statistics, so off by default).
    #[arg(long)]
    pub skipping: bool,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub sizes: SizeArgs,
    #[command(flatten)]
    pub discovery: DiscoveryArgs,
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
    #[command(flatten)]
    pub sizes: SizeArgs,
    #[command(flatten)]
    pub poll: PollArgs,
    #[command(flatten)]
    pub executor: ExecutorArgs,
}

#[derive(Debug, Args)]
pub struct StreamArgs {
    pub uri: String,
    /// Time between micro-batches.
    #[arg(long, value_parser = parse_interval, allow_hyphen_values = true)]
    pub interval: Option<Duration>,
    /// Rows per micro-batch.
    #[arg(long, value_parser = parse_rows, allow_negative_numbers = true)]
    pub rows: Option<usize>,
    /// Streaming query id (the txn appId); a restart with the same id resumes after its last batch.
    #[arg(long, default_value = "lakehealth-stream")]
    pub query_id: String,
    /// Stop after this many batches (default: run until Ctrl-C).
    #[arg(long, value_parser = parse_batches, allow_negative_numbers = true)]
    pub batches: Option<u64>,
    #[command(flatten)]
    pub storage: StorageArgs,
}

/// Parses the command line. A first word that is no subcommand but one letter or two off one
/// (`reprot`), and not a path that exists, is a typo: clap would take it for the TUI's
/// location (`lakehealth reprot t` would complain about `t`), so it is refused here with the
/// subcommand meant.
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::CommandFactory;
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let cmd = Cli::command();
    if let Some(word) = first_positional(&cmd, &args)
        && let Some(meant) = similar_subcommand(&cmd, &word)
        && !std::path::Path::new(&word).exists()
    {
        let mut cmd = cmd;
        return Err(cmd.error(
            clap::error::ErrorKind::InvalidSubcommand,
            format!(
                "unrecognized subcommand '{word}'\n\n  tip: a similar subcommand exists: '{meant}'\n  (to open a table named '{word}', write ./{word})"
            ),
        ));
    }
    Cli::try_parse_from(args)
}

/// The first argument that is neither an option nor an option's value.
fn first_positional(cmd: &clap::Command, args: &[std::ffi::OsString]) -> Option<String> {
    let takes_value = |name: &str| {
        cmd.get_arguments().any(|a| {
            let named = match name.strip_prefix("--") {
                Some(long) => a.get_long() == Some(long),
                None => name.len() == 2 && a.get_short() == name.chars().nth(1),
            };
            named && a.get_action().takes_values()
        })
    };
    let mut skip_next = false;
    for a in args.iter().skip(1) {
        let a = a.to_string_lossy();
        if skip_next {
            skip_next = false;
            continue;
        }
        if a == "--" {
            return None;
        }
        if a.starts_with('-') && a.len() > 1 {
            skip_next = !a.contains('=') && takes_value(&a);
            continue;
        }
        return Some(a.into_owned());
    }
    None
}

/// The subcommand `word` is probably a typo of: at most one edit (two for longer names) away,
/// a swap of two letters counting as one. None for a subcommand itself or anything path-like.
fn similar_subcommand(cmd: &clap::Command, word: &str) -> Option<String> {
    if word.contains(['/', '\\', '.', ':']) || cmd.find_subcommand(word).is_some() {
        return None;
    }
    let word = word.to_ascii_lowercase();
    cmd.get_subcommands()
        .map(|c| c.get_name())
        .filter(|name| *name != "help")
        .map(|name| (edit_distance(&word, name), name))
        .filter(|(d, name)| *d > 0 && *d <= if name.len() >= 5 { 2 } else { 1 })
        .min()
        .map(|(_, name)| name.to_string())
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// adjacent letters each cost one.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(args: &[&str]) -> String {
        parse_from(args).unwrap_err().to_string()
    }

    #[test]
    fn a_lowercase_decimal_size_is_refused_saying_both_readings_and_upper_case_is_decimal() {
        let e = err(&["lakehealth", "report", "t", "--target", "128mb"]);
        assert!(
            e.contains("\"128mb\" is ambiguous: 128MB is 128000000 bytes")
                && e.contains("128MiB is 134217728 bytes"),
            "{e}"
        );
        let e = err(&["lakehealth", "report", "t", "--target", "1.5gb"]);
        assert!(e.contains("1.5GiB is 1610612736 bytes"), "{e}");
        for (arg, bytes) in [
            ("128MB", 128_000_000),
            ("128MiB", 128 * 1024 * 1024),
            ("128m", 128 * 1024 * 1024),
        ] {
            assert_eq!(parse_size(arg).map(|b| b.0), Ok(bytes), "{arg}");
        }
    }

    #[test]
    fn a_mistyped_subcommand_gets_a_suggestion_even_with_a_location_after_it() {
        for (args, meant) in [
            (vec!["lakehealth", "reprot", "some/table"], "report"),
            (vec!["lakehealth", "reprot"], "report"),
            (
                vec!["lakehealth", "--config", "c.toml", "compat", "t"],
                "compact",
            ),
            (vec!["lakehealth", "vaccum", "t", "--dry-run"], "vacuum"),
            (vec!["lakehealth", "wtach", "t"], "watch"),
        ] {
            let e = err(&args);
            assert!(
                e.contains(&format!("a similar subcommand exists: '{meant}'")),
                "{args:?}: {e}"
            );
        }
    }

    #[test]
    fn locations_are_not_taken_for_typos() {
        assert!(
            similar_subcommand(&<Cli as clap::CommandFactory>::command(), "./reprot").is_none()
        );
        assert!(
            similar_subcommand(&<Cli as clap::CommandFactory>::command(), "s3://b/t").is_none()
        );
        assert!(similar_subcommand(&<Cli as clap::CommandFactory>::command(), "events").is_none());
        let cli = parse_from(["lakehealth", "events"]).unwrap();
        assert_eq!(cli.uri.as_deref(), Some("events"));
        let cli = parse_from(["lakehealth", "report", "t"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Report(_))));
    }

    #[test]
    fn options_show_only_on_the_commands_that_use_them() {
        use clap::CommandFactory;
        // Built: global options are copied into every subcommand then.
        let mut cmd = Cli::command();
        cmd.build();
        let longs = |name: &str| -> Vec<String> {
            cmd.find_subcommand(name)
                .unwrap()
                .get_arguments()
                .filter_map(|a| a.get_long().map(str::to_string))
                .collect()
        };
        let config = longs("config");
        for absent in [
            "ray-address",
            "executor",
            "target",
            "storage-option",
            "depth",
            "poll",
        ] {
            assert!(!config.iter().any(|l| l == absent), "config has --{absent}");
        }
        let vacuum = longs("vacuum");
        assert!(vacuum.iter().any(|l| l == "storage-option"));
        assert!(!vacuum.iter().any(|l| l == "ray-address" || l == "target"));
        let compact = longs("compact");
        for present in ["ray-address", "executor", "target", "storage-option"] {
            assert!(
                compact.iter().any(|l| l == present),
                "compact lacks --{present}"
            );
        }
    }

    #[test]
    fn a_storage_option_typo_is_explained_without_its_value() {
        let e = parse_kv("AWS_SECRET_ACCESS_KEY:abc").unwrap_err();
        assert!(!e.contains("abc"), "{e}");
        assert!(e.contains("KEY=VALUE"), "{e}");
    }

    #[test]
    fn sizes_need_a_unit() {
        let e = err(&["lakehealth", "report", "t", "--target", "128"]);
        assert!(e.contains("128MiB"), "{e}");
    }
}
