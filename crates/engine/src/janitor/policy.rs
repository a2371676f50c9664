//! The janitor's policy: when a partition is due and how it is compacted. Presets named for the
//! janitors they imitate, explicit overrides on top, read from TOML. Unknown keys and bad values
//! are errors that name the key and its line (as `config.rs` does for the config file).

use std::path::Path;
use std::time::Duration;

use chrono::{Days, NaiveDate};
use serde::{Deserialize, Deserializer, Serialize};
use toml::Spanned;

use super::maintenance::MaintenancePolicy;
use crate::compact::executor::{Executor, RayOptions};
use crate::compact::ordering::{LayoutRequest, OrderKind};
use crate::compact::plan::{DeletedRows, Strategy};
use crate::compact::tiers::DEFAULT_FANOUT;
use crate::model::duration::whole_units;
use crate::model::thresholds::Thresholds;
use crate::size::{ByteSize, MIB, format_bytes};

/// The commented example policy shipped in `assets/`.
pub const EXAMPLE_POLICY: &str = include_str!("../../../../assets/janitor-policy.toml");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// lakehealth's own: the report's small-file threshold, at least 50 small files.
    Default,
    /// Databricks auto compaction: >= 50 files below half of the 128 MiB target.
    DatabricksAutoCompaction,
    /// AWS Glue compaction: more than 100 files each below 75 % of the 512 MiB target.
    Glue,
    /// Apache Amoro minor optimizing: fragments below target / 8 (target 128 MiB), at least
    /// 12 of them, or at least 2 once the oldest is older than an hour.
    Amoro,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Default => "default",
            Preset::DatabricksAutoCompaction => "databricks-auto-compaction",
            Preset::Glue => "glue",
            Preset::Amoro => "amoro",
        }
    }

    /// Preset's target (None: the table's `delta.targetFileSize`, else the config's).
    fn target(self) -> Option<u64> {
        match self {
            Preset::Default => None,
            Preset::DatabricksAutoCompaction | Preset::Amoro => Some(128 * MIB),
            Preset::Glue => Some(512 * MIB),
        }
    }

    /// Small-file threshold for a given target (the preset's ratio of it).
    fn small_for(self, target: u64) -> u64 {
        match self {
            Preset::Default => target,
            Preset::DatabricksAutoCompaction => target / 2,
            Preset::Glue => target / 4 * 3,
            Preset::Amoro => target / 8,
        }
    }

    fn min_small_files(self) -> u64 {
        match self {
            Preset::Default | Preset::DatabricksAutoCompaction => 50,
            // "more than 100"
            Preset::Glue => 101,
            Preset::Amoro => 12,
        }
    }

    fn aged(self) -> Option<AgedRule> {
        match self {
            Preset::Amoro => Some(AgedRule {
                min_small_files: 2,
                age: Duration::from_secs(3600),
            }),
            _ => None,
        }
    }
}

/// A second trigger: fewer small files are enough once the oldest of them is old.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgedRule {
    pub min_small_files: u64,
    pub age: Duration,
}

/// The `partitions` predicate as written (date macros not yet expanded) and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionFilter {
    pub text: String,
    pub line: usize,
}

impl PartitionFilter {
    /// The predicate with its date macros as literal dates of `today`.
    pub fn expand(&self, today: NaiveDate) -> Result<String, DateMacroError> {
        expand_date_macros(&self.text, today)
    }
}

/// Why the `partitions` predicate does not apply to a table; shown in its decisions, with the
/// policy line to fix.
#[derive(Debug, thiserror::Error)]
#[error("{problem} (policy line {line})")]
pub struct PartitionsError {
    pub line: usize,
    #[source]
    pub problem: PartitionsProblem,
}

#[derive(Debug, thiserror::Error)]
pub enum PartitionsProblem {
    #[error(transparent)]
    Macro(#[from] DateMacroError),
    /// Only the reason: the predicate is the policy's own text, which its line points at.
    #[error("{}", .0.reason)]
    Predicate(#[source] crate::compact::selection::PredicateError),
}

/// Jobs in flight at once over every table (`max_jobs`): a table paced by its writer holds one
/// of them, the others go on.
pub const DEFAULT_MAX_JOBS: u64 = 4;

/// An idle table is read at least this often (a GET per read: about 12 an hour).
pub const DEFAULT_IDLE_POLL_MAX: Duration = Duration::from_secs(300);
/// A root is listed for new and removed tables this often (a LIST per folder it holds).
pub const DEFAULT_DISCOVER_EVERY: Duration = Duration::from_secs(300);

/// The longest duration a policy setting takes (10 years, as humantime counts them): more is a
/// typo, and a deadline that far overflows the clock (`Instant + Duration` panics).
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 31_557_600);
/// The largest size a policy setting takes: more is a typo (no file is that large).
pub const MAX_SIZE: u64 = crate::size::PIB;

/// A policy with every value resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Where it came from: a file's path, or "built-in default".
    pub source: String,
    pub preset: Preset,
    pub min_small_files: u64,
    /// Files strictly below it are small (the rule counts them).
    pub small_file_size: u64,
    /// Output size; None: the table's `delta.targetFileSize`, else the config's target.
    pub target_file_size: Option<u64>,
    /// Files at or above it are never rewritten.
    pub min_file_size: u64,
    pub aged: Option<AgedRule>,
    pub partitions: Option<PartitionFilter>,
    pub written_within: Option<Duration>,
    pub quiet_period: Option<Duration>,
    pub interval: Duration,
    pub max_jobs: usize,
    /// Jobs at once in one database (the folder holding the tables), so one busy database
    /// cannot take every slot; None: `max_jobs`.
    pub max_jobs_per_database: Option<usize>,
    pub max_failures: u32,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// The longest an idle table goes unread (`polling`): a table without a new commit is read
    /// at doubling intervals up to this, and every cycle again after a commit.
    pub idle_poll_max: Duration,
    /// How often a root is listed again for new and removed tables (the first cycle always).
    pub discover_every: Duration,
    /// Checkpoint and vacuum by policy (see `maintenance`).
    pub maintenance: MaintenancePolicy,
    /// Where the jobs' bins are rewritten (commits always happen in the janitor).
    pub executor: Executor,
    /// How a table's compaction commits are spaced while a writer is active.
    pub commit_spacing: CommitSpacing,
    /// Which small files a job merges (`compact::tiers`): due tiers of `fanout` files, so a
    /// streamed byte is rewritten about log_fanout(files) times; or every small file.
    pub strategy: Strategy,
    /// Files whose deletion vectors mark more than this share of their rows deleted are
    /// rewritten whatever their size (`max_deleted_ratio`, 0.05 by default as in Delta).
    pub deleted_rows: DeletedRows,
    /// The order a job writes rows in (`strategy`, `columns`): a clustered table's clustering
    /// by default; sorted or z-ordered bins of small files; or rows as read.
    pub layout: LayoutRequest,
    /// Re-clustering (`max_depth`, `depth_every`): a partition whose files overlap past the
    /// bound on the order's columns is due for a job that rewrites it whole in that order.
    /// None: the janitor never reads depth.
    pub recluster: Option<Recluster>,
    /// The catalog Iceberg tables are compacted through (`iceberg_catalog`, or `watch
    /// --catalog`); None: Iceberg tables are decided but not compacted, and say why.
    pub iceberg_catalog: Option<String>,
}

/// When a partition is due for re-clustering (`janitor::clustering`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recluster {
    /// A partition is due when a column of the order overlaps deeper than this: a point
    /// lookup on it opens more files than this on average (Snowflake's average depth).
    pub max_depth: f64,
    /// A table's file statistics are read for depth at most this often (and only after a
    /// commit): reading them costs a log replay with statistics.
    pub every: Duration,
}

/// How often depth is read by default: a table's statistics cost a replay, and clustering
/// decays over hours of writes, not seconds.
pub const DEFAULT_DEPTH_EVERY: Duration = Duration::from_secs(600);

/// Spacing of a table's compaction commits while a writer is active (`compact::spacing`):
/// each one makes the writer's next commit retry, and each wait lets small files pile up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CommitSpacing {
    /// From the writer's commit rate: one compaction commit per 20 of its commits, at most
    /// one minute apart.
    #[default]
    Auto,
    /// As bins finish: small files stay fewest, the writer retries more often.
    Off,
    Every(Duration),
}

/// A `commit_spacing` that is neither "auto", "off" nor a duration.
#[derive(Debug, thiserror::Error)]
#[error("is {input:?}: {source}; expected \"auto\", \"off\" or a duration")]
pub struct CommitSpacingError {
    pub input: String,
    #[source]
    pub source: humantime::DurationError,
}

impl CommitSpacing {
    fn parse(s: &str) -> Result<Self, CommitSpacingError> {
        match s.trim() {
            "auto" => Ok(Self::Auto),
            "off" => Ok(Self::Off),
            d => humantime::parse_duration(d)
                .map(Self::Every)
                .map_err(|source| CommitSpacingError {
                    input: d.to_string(),
                    source,
                }),
        }
    }
}

/// The file as written: every key optional, each with its position for error messages.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    preset: Option<Preset>,
    min_small_files: Option<Spanned<u64>>,
    small_file_size: Option<Spanned<ByteSize>>,
    target_file_size: Option<Spanned<TargetSetting>>,
    min_file_size: Option<Spanned<ByteSize>>,
    aged_min_small_files: Option<Spanned<u64>>,
    aged_after: Option<Spanned<Seconds>>,
    partitions: Option<Spanned<String>>,
    written_within: Option<Spanned<Seconds>>,
    quiet_period: Option<Spanned<Seconds>>,
    interval: Option<Spanned<Seconds>>,
    max_jobs: Option<Spanned<u64>>,
    max_jobs_per_database: Option<Spanned<u64>>,
    max_failures: Option<Spanned<u64>>,
    backoff_base: Option<Spanned<Seconds>>,
    backoff_max: Option<Spanned<Seconds>>,
    idle_poll_max: Option<Spanned<Seconds>>,
    discover_every: Option<Spanned<Seconds>>,
    checkpoint_after_commits: Option<Spanned<u64>>,
    vacuum_every: Option<Spanned<Seconds>>,
    vacuum_retention: Option<Spanned<Seconds>>,
    executor: Option<Spanned<String>>,
    commit_spacing: Option<Spanned<String>>,
    tier_fanout: Option<Spanned<u64>>,
    strategy: Option<Spanned<String>>,
    columns: Option<Spanned<Vec<String>>>,
    max_depth: Option<Spanned<f64>>,
    depth_every: Option<Spanned<Seconds>>,
    max_deleted_ratio: Option<Spanned<f64>>,
    ray_address: Option<Spanned<String>>,
    worker_binary: Option<String>,
    iceberg_catalog: Option<Spanned<String>>,
}

/// A duration: a humantime string ("10s", "2m", "6h") or a bare number of seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seconds(Duration);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(Seconds(Duration::from_secs(n))),
            Raw::Str(s) => humantime::parse_duration(s.trim()).map(Seconds).map_err(|e| {
                serde::de::Error::custom(format!(
                    "invalid duration {s:?}: {e} (e.g. \"10s\", \"2m\", \"6h\", or a number of seconds)"
                ))
            }),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read policy file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// Not TOML, or not the policy's keys and types. The text is the parser's with credentials
    /// redacted, so the parser's error (which quotes the input) is not kept.
    #[error("invalid policy file {path}:\n{message}")]
    Syntax { path: String, message: String },
    #[error("invalid policy file {path}:\n{source}")]
    Invalid {
        path: String,
        #[source]
        source: PolicySettingError,
    },
}

/// A policy value that is refused: "line N: key problem".
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {key} {problem}")]
pub struct PolicySettingError {
    pub line: usize,
    pub key: &'static str,
    #[source]
    pub problem: SettingProblem,
}

/// What is wrong with a policy value (the text after its key).
#[derive(Debug, thiserror::Error)]
pub enum SettingProblem {
    #[error("must be at least {0}")]
    AtLeast(u64),
    /// A duration or size outside what the setting takes: the value and the range.
    #[error("is {got}: must be {range}")]
    OutOfRange { got: String, range: String },
    #[error(transparent)]
    TargetFileSize(#[from] crate::size::TargetFileSizeError),
    #[error(transparent)]
    CommitSpacing(#[from] CommitSpacingError),
    #[error("is invalid: {0}")]
    Partitions(#[source] DateMacroError),
    /// Only the reason: the predicate is the policy's own text, which its line points at.
    #[error("is invalid: {}", .0.reason)]
    PartitionsPredicate(#[source] crate::compact::selection::PredicateError),
    #[error("\"ray\" needs ray_address")]
    RayWithoutAddress,
    #[error("is {0:?}; expected \"local\" or \"ray\"")]
    UnknownExecutor(String),
    /// Boxed: a catalog's error is several times the size of the others.
    #[error(transparent)]
    IcebergCatalog(Box<crate::iceberg::compact::catalog::CatalogError>),
    #[error("must be 0 (merge every small file each time) or from 2 to 1024")]
    TierFanout,
    #[error(
        "is {0:?}; expected \"auto\" (a clustered table's clustering), \"binpack\", \"sort\" or \"zorder\""
    )]
    UnknownStrategy(String),
    #[error("{0:?} needs `columns` (e.g. columns = [\"sensor\", \"ts\"])")]
    ColumnsNeeded(String),
    #[error("names columns, which only \"sort\" and \"zorder\" take")]
    ColumnsUnused,
    #[error("must be from 0 to 1 (the share of a file's rows deleted, e.g. 0.05)")]
    DeletedRatio,
    #[error("must be a number of files of at least 1 (e.g. 4: a lookup opens 4 files)")]
    MaxDepth,
    #[error(
        "needs an order to keep: strategy \"sort\" or \"zorder\" with columns, or \"auto\" (clustered tables), not \"binpack\""
    )]
    MaxDepthUnordered,
    #[error("is set without max_depth, which it paces")]
    DepthEveryUnused,
}

/// A `partitions` date macro that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DateMacroError {
    #[error("the date is out of range")]
    OutOfRange,
    #[error("after {word} expected `- Nd` (a number of days, e.g. {word} - 2d), found {found:?}")]
    Offset { word: String, found: String },
    #[error("{word} {sign} {days}d is out of range")]
    OffsetOutOfRange { word: String, sign: char, days: u64 },
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

impl Policy {
    /// The built-in default: the `default` preset on the report's thresholds.
    pub fn builtin(base: Thresholds) -> Policy {
        Self::from_file(PolicyFile::default(), "", "built-in default", base)
            .unwrap_or_else(|_| unreachable!("the empty policy has no values to reject"))
    }

    pub fn load(path: &Path, base: Thresholds) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string(), base)
    }

    /// Parses a policy; `base` is the report's thresholds (config file and flags), which the
    /// `default` preset uses.
    pub fn parse(text: &str, source: &str, base: Thresholds) -> Result<Policy, PolicyError> {
        // Before parsing: an error must not show a credential (a Ray address's user info).
        crate::secrets::register_toml_text(text);
        let file: PolicyFile = toml::from_str(text).map_err(|e| PolicyError::Syntax {
            path: source.to_string(),
            message: crate::secrets::toml_error(&e, text),
        })?;
        Self::from_file(file, text, source, base).map_err(|e| PolicyError::Invalid {
            path: source.to_string(),
            source: e,
        })
    }

    fn from_file(
        f: PolicyFile,
        text: &str,
        source: &str,
        base: Thresholds,
    ) -> Result<Policy, PolicySettingError> {
        let at = At(text);
        let preset = f.preset.unwrap_or(Preset::Default);
        let d = Durations::of(&f, at)?;
        let (target, small) = sizes(&f, preset, base, at)?;
        let min_small_files = match &f.min_small_files {
            // One file alone is never rewritten (a bin of one is dropped): due forever.
            Some(n) if *n.get_ref() < 2 => {
                return Err(at.err(n.span(), "min_small_files", SettingProblem::AtLeast(2)));
            }
            Some(n) => *n.get_ref(),
            None => preset.min_small_files(),
        };
        let max_jobs = at.positive(&f.max_jobs, "max_jobs", DEFAULT_MAX_JOBS)?;
        let max_failures = at.positive(&f.max_failures, "max_failures", 4)?;
        let per_database = match &f.max_jobs_per_database {
            Some(_) => Some(at.positive(&f.max_jobs_per_database, "max_jobs_per_database", 1)?),
            None => None,
        };
        let interval = d.interval.unwrap_or(Duration::from_secs(10));
        let backoff_base = d.backoff_base.unwrap_or(Duration::from_secs(30));
        let backoff_max = d
            .backoff_max
            .unwrap_or(Duration::from_secs(3600))
            .max(backoff_base);
        let commit_spacing = commit_spacing(&f, at)?;
        let checkpoint_after_commits = match &f.checkpoint_after_commits {
            Some(_) => {
                Some(at.positive(&f.checkpoint_after_commits, "checkpoint_after_commits", 1)?)
            }
            None => None,
        };
        let (aged, partitions) = (
            aged(&f, preset, d.aged_after, at)?,
            partitions(&f, text, at)?,
        );
        Ok(Policy {
            iceberg_catalog: iceberg_catalog(&f, at)?,
            deleted_rows: deleted_rows(&f, at)?,
            executor: executor(&f, at)?,
            commit_spacing,
            strategy: strategy(&f, min_small_files, at)?,
            layout: layout(&f, at)?,
            recluster: recluster(&f, d.depth_every, at)?,
            source: source.to_string(),
            preset,
            min_small_files,
            small_file_size: small,
            target_file_size: target,
            min_file_size: at
                .size(&f.min_file_size, "min_file_size", 1)?
                .unwrap_or(small),
            aged,
            partitions,
            written_within: d.written_within.filter(|d| !d.is_zero()),
            quiet_period: d.quiet_period.filter(|d| !d.is_zero()),
            interval,
            max_jobs: max_jobs.min(64) as usize,
            max_jobs_per_database: per_database.map(|n| n.min(64) as usize),
            max_failures: max_failures.min(u32::MAX as u64) as u32,
            backoff_base,
            backoff_max,
            idle_poll_max: d.idle_poll_max.unwrap_or(DEFAULT_IDLE_POLL_MAX),
            discover_every: d.discover_every.unwrap_or(DEFAULT_DISCOVER_EVERY),
            maintenance: MaintenancePolicy {
                checkpoint_after_commits,
                vacuum_every: d.vacuum_every.filter(|d| !d.is_zero()),
                vacuum_retention: d.vacuum_retention,
            },
        })
    }

    /// Iceberg tables are compacted through the catalog `uri` (`watch --catalog`).
    pub fn set_iceberg_catalog(
        &mut self,
        uri: &str,
    ) -> Result<(), crate::iceberg::compact::catalog::CatalogError> {
        crate::iceberg::compact::catalog::Catalog::open(uri)?;
        self.iceberg_catalog = Some(uri.to_string());
        Ok(())
    }

    /// The rule's name in decisions: the preset's.
    pub fn rule(&self) -> &'static str {
        self.preset.name()
    }

    /// How far back the log must be known for this policy's time conditions (zero: not at all).
    pub fn horizon(&self) -> Duration {
        [
            self.quiet_period,
            self.written_within,
            self.aged.map(|a| a.age),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(Duration::ZERO)
    }

    /// One line for humans: what makes a partition due, and how often it is checked.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} ({}): due at >= {} files below {} per partition",
            self.preset.name(),
            self.source,
            self.min_small_files,
            format_bytes(self.small_file_size),
        );
        if let Some(a) = self.aged {
            s.push_str(&format!(
                ", or >= {} once the oldest is older than {}",
                a.min_small_files,
                whole_units(a.age)
            ));
        }
        s.push_str(&format!(
            "; target {}; files >= {} untouched",
            self.target_file_size
                .map(format_bytes)
                .unwrap_or_else(|| "the table's own, else auto by the table's size (256 MiB up to 2.5 TB, rising to 1 GiB at 10 TB)".into()),
            format_bytes(self.min_file_size)
        ));
        match self.strategy {
            Strategy::Tiered { fanout, .. } => {
                s.push_str(&format!("; merges tiers of {fanout} files (each byte rewritten about log{fanout}(files) times)"))
            }
            Strategy::BinPack => s.push_str("; merges every small file each time"),
            Strategy::WholePartition => {
                s.push_str("; rewrites every file of a due partition in order")
            }
        }
        match &self.layout {
            LayoutRequest::Auto => {}
            LayoutRequest::Unclustered => {
                s.push_str("; rows as read, clustered tables too (strategy binpack)")
            }
            LayoutRequest::Order { kind, columns, .. } => s.push_str(&format!(
                "; each job's rows in {} by {}",
                kind.label(),
                columns.join(", ")
            )),
        }
        if let Some(r) = self.recluster {
            s.push_str(&format!(
                "; a partition whose order's columns overlap deeper than {} files is re-clustered whole (depth read at most every {})",
                r.max_depth,
                whole_units(r.every)
            ));
        }
        if let Some(p) = &self.partitions {
            s.push_str(&format!("; partitions {}", p.text));
        }
        if let Some(w) = self.written_within {
            s.push_str(&format!("; written within {}", whole_units(w)));
        }
        if let Some(q) = self.quiet_period {
            s.push_str(&format!("; quiet period {}", whole_units(q)));
        }
        if self.executor != Executor::Local {
            s.push_str(&format!("; bins run on {}", self.executor.describe()));
        }
        s.push_str(&format!(
            "; every {}, at most {} job(s) at once, suspended after {} failures in a row",
            whole_units(self.interval),
            self.max_jobs,
            self.max_failures
        ));
        if let Some(n) = self.max_jobs_per_database {
            s.push_str(&format!("; at most {n} job(s) at once per database"));
        }
        // Said when changed: the defaults are in the README.
        if self.idle_poll_max != DEFAULT_IDLE_POLL_MAX {
            s.push_str(&format!(
                "; idle tables read at least every {}",
                whole_units(self.idle_poll_max)
            ));
        }
        if self.discover_every != DEFAULT_DISCOVER_EVERY {
            s.push_str(&format!(
                "; roots listed for new tables every {}",
                whole_units(self.discover_every)
            ));
        }
        if let Some(m) = self.maintenance.summary() {
            s.push_str(&format!("; {m}"));
        }
        if let Some(c) = &self.iceberg_catalog {
            s.push_str(&format!(
                "; Iceberg tables through the catalog {} (small by the table's own band, as `report` shows it: rewrite_data_files' around write.target-file-size-bytes)",
                crate::secrets::redact_url(c)
            ));
        }
        s
    }

    /// The resolved policy as JSON (the first line of a run).
    pub fn to_json(&self) -> serde_json::Value {
        let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
        serde_json::json!({
            "source": self.source,
            "preset": self.preset.name(),
            "min_small_files": self.min_small_files,
            "small_file_size": self.small_file_size,
            "target_file_size": self.target_file_size,
            "min_file_size": self.min_file_size,
            "aged_min_small_files": self.aged.map(|a| a.min_small_files),
            "aged_after_s": secs(self.aged.map(|a| a.age)),
            "partitions": self.partitions.as_ref().map(|p| p.text.clone()),
            "written_within_s": secs(self.written_within),
            "quiet_period_s": secs(self.quiet_period),
            "interval_s": self.interval.as_secs_f64(),
            "max_jobs": self.max_jobs,
            "max_jobs_per_database": self.max_jobs_per_database,
            "max_failures": self.max_failures,
            "backoff_base_s": self.backoff_base.as_secs_f64(),
            "backoff_max_s": self.backoff_max.as_secs_f64(),
            "idle_poll_max_s": self.idle_poll_max.as_secs_f64(),
            "discover_every_s": self.discover_every.as_secs_f64(),
            "checkpoint_after_commits": self.maintenance.checkpoint_after_commits,
            "vacuum_every_s": secs(self.maintenance.vacuum_every),
            "vacuum_retention_s": secs(self.maintenance.vacuum_retention),
            "executor": self.executor.name(),
            "max_deleted_ratio": self.deleted_rows.max_ratio,
            "iceberg_catalog": self.iceberg_catalog.as_deref().map(crate::secrets::redact_url),
            "tier_fanout": match self.strategy {
                Strategy::Tiered { fanout, .. } => fanout,
                Strategy::BinPack | Strategy::WholePartition => 0,
            },
            "strategy": match &self.layout {
                LayoutRequest::Auto => "auto",
                LayoutRequest::Unclustered => "binpack",
                LayoutRequest::Order { kind: OrderKind::Sort, .. } => "sort",
                LayoutRequest::Order { kind: OrderKind::ZOrder, .. } => "zorder",
            },
            "columns": match &self.layout {
                LayoutRequest::Order { columns, .. } => columns.clone(),
                _ => Vec::new(),
            },
            "max_depth": self.recluster.map(|r| r.max_depth),
            "depth_every_s": self.recluster.map(|r| r.every.as_secs_f64()),
        })
    }
}

/// Where a policy file's value is, for its error: "line N: key message".
#[derive(Clone, Copy)]
struct At<'a>(&'a str);

impl At<'_> {
    fn err(
        self,
        span: std::ops::Range<usize>,
        key: &'static str,
        problem: SettingProblem,
    ) -> PolicySettingError {
        PolicySettingError {
            line: line_of(self.0, span.start),
            key,
            problem,
        }
    }

    /// A duration setting: at most `MAX_DURATION`, and above zero unless `zero_ok`.
    fn duration(
        self,
        v: &Option<Spanned<Seconds>>,
        key: &'static str,
        zero_ok: bool,
    ) -> Result<Option<Duration>, PolicySettingError> {
        let Some(d) = v else {
            return Ok(None);
        };
        let got = d.get_ref().0;
        if got > MAX_DURATION || (got.is_zero() && !zero_ok) {
            let low = if zero_ok {
                "from 0"
            } else {
                "greater than 0 and"
            };
            let range = format!("{low} at most {}", humantime::format_duration(MAX_DURATION));
            let got = humantime::format_duration(got).to_string();
            return Err(self.err(d.span(), key, SettingProblem::OutOfRange { got, range }));
        }
        Ok(Some(got))
    }

    /// A size setting: from `min` bytes to `MAX_SIZE`.
    fn size(
        self,
        v: &Option<Spanned<ByteSize>>,
        key: &'static str,
        min: u64,
    ) -> Result<Option<u64>, PolicySettingError> {
        let Some(s) = v else {
            return Ok(None);
        };
        let got = s.get_ref().0;
        if !(min..=MAX_SIZE).contains(&got) {
            let range = format!("from {} to {}", format_bytes(min), format_bytes(MAX_SIZE));
            // Exact too: a rounded "1 PiB" would not show why it is above 1 PiB.
            let got = match got {
                0..1024 => format_bytes(got),
                _ => format!("{} ({got} B)", format_bytes(got)),
            };
            return Err(self.err(s.span(), key, SettingProblem::OutOfRange { got, range }));
        }
        Ok(Some(got))
    }

    fn positive(
        self,
        v: &Option<Spanned<u64>>,
        key: &'static str,
        default: u64,
    ) -> Result<u64, PolicySettingError> {
        match v {
            Some(n) if *n.get_ref() == 0 => {
                Err(self.err(n.span(), key, SettingProblem::AtLeast(1)))
            }
            Some(n) => Ok(*n.get_ref()),
            None => Ok(default),
        }
    }
}

/// The policy's durations as set, each within its range (`At::duration`).
struct Durations {
    aged_after: Option<Duration>,
    written_within: Option<Duration>,
    quiet_period: Option<Duration>,
    interval: Option<Duration>,
    backoff_base: Option<Duration>,
    backoff_max: Option<Duration>,
    idle_poll_max: Option<Duration>,
    discover_every: Option<Duration>,
    vacuum_every: Option<Duration>,
    vacuum_retention: Option<Duration>,
    depth_every: Option<Duration>,
}

impl Durations {
    /// Zero is refused where it would repeat without pause (`interval`, `depth_every`); it
    /// means "off" or "at once" for the others.
    fn of(f: &PolicyFile, at: At) -> Result<Self, PolicySettingError> {
        Ok(Self {
            aged_after: at.duration(&f.aged_after, "aged_after", true)?,
            written_within: at.duration(&f.written_within, "written_within", true)?,
            quiet_period: at.duration(&f.quiet_period, "quiet_period", true)?,
            interval: at.duration(&f.interval, "interval", false)?,
            backoff_base: at.duration(&f.backoff_base, "backoff_base", true)?,
            backoff_max: at.duration(&f.backoff_max, "backoff_max", true)?,
            idle_poll_max: at.duration(&f.idle_poll_max, "idle_poll_max", true)?,
            discover_every: at.duration(&f.discover_every, "discover_every", true)?,
            vacuum_every: at.duration(&f.vacuum_every, "vacuum_every", true)?,
            vacuum_retention: at.duration(&f.vacuum_retention, "vacuum_retention", true)?,
            depth_every: at.duration(&f.depth_every, "depth_every", false)?,
        })
    }
}

/// `commit_spacing`: "auto", "off", or a duration within `MAX_DURATION`.
fn commit_spacing(f: &PolicyFile, at: At) -> Result<CommitSpacing, PolicySettingError> {
    let Some(s) = &f.commit_spacing else {
        return Ok(CommitSpacing::Auto);
    };
    let spacing = CommitSpacing::parse(s.get_ref())
        .map_err(|e| at.err(s.span(), "commit_spacing", e.into()))?;
    match spacing {
        CommitSpacing::Every(d) if d > MAX_DURATION => {
            let range = format!(
                "\"auto\", \"off\" or a duration of at most {}",
                humantime::format_duration(MAX_DURATION)
            );
            let got = humantime::format_duration(d).to_string();
            Err(at.err(
                s.span(),
                "commit_spacing",
                SettingProblem::OutOfRange { got, range },
            ))
        }
        other => Ok(other),
    }
}

/// `target_file_size` as written: a size, or "auto" (the default: the table's own target, else
/// one by the table's size, `auto_target`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum TargetSetting {
    Auto,
    Size(ByteSize),
}

impl<'de> Deserialize<'de> for TargetSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(TargetSetting::Size(ByteSize(n))),
            Raw::Str(s) if s.trim().eq_ignore_ascii_case("auto") => Ok(TargetSetting::Auto),
            Raw::Str(s) => s.parse().map(TargetSetting::Size).map_err(|e| {
                serde::de::Error::custom(format!(
                    "{e}; or \"auto\" (the table's own target, else one by its size)"
                ))
            }),
        }
    }
}

/// Tables up to this size get `AUTO_TARGET_MIN` files; from `AUTO_LARGE_TABLE` on,
/// `AUTO_TARGET_MAX`; in between the target rises linearly (Databricks' autotune by table size).
pub const AUTO_SMALL_TABLE: u64 = 2_500_000_000_000;
pub const AUTO_LARGE_TABLE: u64 = 10_000_000_000_000;
pub const AUTO_TARGET_MIN: u64 = 256 * MIB;
pub const AUTO_TARGET_MAX: u64 = 1024 * MIB;

/// The target for a table of `bytes` that sets none of its own, and why.
pub fn auto_target(bytes: u64) -> (u64, String) {
    let target = if bytes <= AUTO_SMALL_TABLE {
        AUTO_TARGET_MIN
    } else if bytes >= AUTO_LARGE_TABLE {
        AUTO_TARGET_MAX
    } else {
        let span = (AUTO_LARGE_TABLE - AUTO_SMALL_TABLE) as f64;
        let at = (bytes - AUTO_SMALL_TABLE) as f64 / span;
        let t = AUTO_TARGET_MIN as f64 + at * (AUTO_TARGET_MAX - AUTO_TARGET_MIN) as f64;
        // Whole MiB.
        (t / MIB as f64).round() as u64 * MIB
    };
    let why = format!(
        "target {} (auto: the table holds {}; 256 MiB up to 2.5 TB, rising to 1 GiB at 10 TB)",
        format_bytes(target),
        format_bytes(bytes),
    );
    (target, why)
}

/// The target file size (None: the table's, else `auto_target`) and the small-file size.
fn sizes(
    f: &PolicyFile,
    preset: Preset,
    base: Thresholds,
    at: At,
) -> Result<(Option<u64>, u64), PolicySettingError> {
    let target = match f.target_file_size.as_ref().map(|t| (t, *t.get_ref())) {
        Some((_, TargetSetting::Auto)) => None,
        Some((t, TargetSetting::Size(size))) => {
            // Unnamed: the key is already in front of it.
            crate::size::check_target_file_size(size.0, "")
                .map_err(|e| at.err(t.span(), "target_file_size", e.into()))?;
            let sized = Some(Spanned::new(t.span(), size));
            at.size(&sized, "target_file_size", MIB)?
        }
        None => preset.target(),
    };
    let small = match (at.size(&f.small_file_size, "small_file_size", 1)?, target) {
        (Some(s), _) => s,
        // The default preset without a target of its own: what the report calls small.
        (None, None) => base.small_file_size,
        (None, Some(t)) => preset.small_for(t),
    };
    Ok((target, small))
}

/// The age rule: the preset's, with the file's count and age over it.
fn aged(
    f: &PolicyFile,
    preset: Preset,
    aged_after: Option<Duration>,
    at: At,
) -> Result<Option<AgedRule>, PolicySettingError> {
    let mut aged = preset.aged();
    if let Some(n) = &f.aged_min_small_files {
        if *n.get_ref() < 2 {
            return Err(at.err(n.span(), "aged_min_small_files", SettingProblem::AtLeast(2)));
        }
        aged = Some(AgedRule {
            min_small_files: *n.get_ref(),
            age: aged_after
                .or(aged.map(|a| a.age))
                .unwrap_or(Duration::from_secs(3600)),
        });
    } else if let (Some(a), Some(age)) = (aged.as_mut(), aged_after) {
        a.age = age;
    }
    Ok(aged)
}

/// The `partitions` predicate: its macros are checked now, its columns against each table.
fn partitions(
    f: &PolicyFile,
    text: &str,
    at: At,
) -> Result<Option<PartitionFilter>, PolicySettingError> {
    let Some(p) = &f.partitions else {
        return Ok(None);
    };
    let filter = PartitionFilter {
        text: p.get_ref().clone(),
        line: line_of(text, p.span().start),
    };
    let expanded = filter
        .expand(chrono::Utc::now().date_naive())
        .map_err(|e| at.err(p.span(), "partitions", SettingProblem::Partitions(e)))?;
    // Columns are checked against each table; everything else is checked now, so a subquery
    // or a function is refused when the policy loads rather than at the first cycle.
    crate::compact::selection::Predicate::check_shape(&expanded).map_err(|e| {
        at.err(
            p.span(),
            "partitions",
            SettingProblem::PartitionsPredicate(e),
        )
    })?;
    Ok(Some(filter))
}

fn executor(f: &PolicyFile, at: At) -> Result<Executor, PolicySettingError> {
    let Some(e) = &f.executor else {
        return Ok(Executor::Local);
    };
    match (e.get_ref().as_str(), &f.ray_address) {
        ("local", _) => Ok(Executor::Local),
        ("ray", Some(addr)) if !addr.get_ref().trim().is_empty() => {
            let mut r = RayOptions::new(addr.get_ref().trim());
            r.worker_binary = f.worker_binary.as_ref().map(std::path::PathBuf::from);
            Ok(Executor::Ray(r))
        }
        ("ray", _) => Err(at.err(e.span(), "executor", SettingProblem::RayWithoutAddress)),
        (other, _) => Err(at.err(
            e.span(),
            "executor",
            SettingProblem::UnknownExecutor(other.to_string()),
        )),
    }
}

/// The Iceberg catalog's URI, checked as `compact --catalog` checks it.
fn iceberg_catalog(f: &PolicyFile, at: At) -> Result<Option<String>, PolicySettingError> {
    let Some(c) = &f.iceberg_catalog else {
        return Ok(None);
    };
    let uri = c.get_ref().trim();
    match crate::iceberg::compact::catalog::Catalog::open(uri) {
        Ok(_) => Ok(Some(uri.to_string())),
        Err(e) => Err(at.err(
            c.span(),
            "iceberg_catalog",
            SettingProblem::IcebergCatalog(Box::new(e)),
        )),
    }
}

/// The order jobs write rows in (`strategy`, `columns`).
fn layout(f: &PolicyFile, at: At) -> Result<LayoutRequest, PolicySettingError> {
    let columns: Vec<String> = f
        .columns
        .as_ref()
        .map(|c| {
            c.get_ref()
                .iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let kind = match f.strategy.as_ref().map(|s| (s, s.get_ref().trim())) {
        None | Some((_, "auto")) => None,
        Some((_, "binpack")) => {
            if let Some(c) = &f.columns {
                return Err(at.err(c.span(), "columns", SettingProblem::ColumnsUnused));
            }
            return Ok(LayoutRequest::Unclustered);
        }
        Some((_, "sort")) => Some(OrderKind::Sort),
        Some((_, "zorder")) => Some(OrderKind::ZOrder),
        Some((s, other)) => {
            return Err(at.err(
                s.span(),
                "strategy",
                SettingProblem::UnknownStrategy(other.to_string()),
            ));
        }
    };
    match (kind, &f.columns) {
        (None, Some(c)) => Err(at.err(c.span(), "columns", SettingProblem::ColumnsUnused)),
        (None, None) => Ok(LayoutRequest::Auto),
        (Some(_), _) if columns.is_empty() => {
            let s = f.strategy.as_ref().map(|s| s.span()).unwrap_or_default();
            let name = f
                .strategy
                .as_ref()
                .map(|s| s.get_ref().clone())
                .unwrap_or_default();
            Err(at.err(s, "strategy", SettingProblem::ColumnsNeeded(name)))
        }
        (Some(kind), _) => Ok(LayoutRequest::Order {
            kind,
            columns,
            whole_partitions: false,
        }),
    }
}

/// `max_depth` and `depth_every`: when a partition is due for re-clustering.
fn recluster(
    f: &PolicyFile,
    depth_every: Option<Duration>,
    at: At,
) -> Result<Option<Recluster>, PolicySettingError> {
    let Some(m) = &f.max_depth else {
        return match &f.depth_every {
            Some(e) => Err(at.err(e.span(), "depth_every", SettingProblem::DepthEveryUnused)),
            None => Ok(None),
        };
    };
    let max_depth = *m.get_ref();
    if !max_depth.is_finite() || max_depth < 1.0 {
        return Err(at.err(m.span(), "max_depth", SettingProblem::MaxDepth));
    }
    if f.strategy
        .as_ref()
        .is_some_and(|s| s.get_ref().trim() == "binpack")
    {
        return Err(at.err(m.span(), "max_depth", SettingProblem::MaxDepthUnordered));
    }
    let every = depth_every.unwrap_or(DEFAULT_DEPTH_EVERY);
    Ok(Some(Recluster { max_depth, every }))
}

/// Tiers of `tier_fanout` files (0: merge every small file each time).
fn strategy(f: &PolicyFile, min_small_files: u64, at: At) -> Result<Strategy, PolicySettingError> {
    match &f.tier_fanout {
        None => Ok(Strategy::Tiered {
            fanout: DEFAULT_FANOUT,
            keep_below: min_small_files,
        }),
        Some(n) if *n.get_ref() == 0 => Ok(Strategy::BinPack),
        Some(n) if *n.get_ref() < 2 || *n.get_ref() > 1024 => {
            Err(at.err(n.span(), "tier_fanout", SettingProblem::TierFanout))
        }
        Some(n) => Ok(Strategy::Tiered {
            fanout: *n.get_ref() as u32,
            keep_below: min_small_files,
        }),
    }
}

fn deleted_rows(f: &PolicyFile, at: At) -> Result<DeletedRows, PolicySettingError> {
    match &f.max_deleted_ratio {
        None => Ok(DeletedRows::default()),
        Some(r) if !(0.0..=1.0).contains(r.get_ref()) => {
            Err(at.err(r.span(), "max_deleted_ratio", SettingProblem::DeletedRatio))
        }
        Some(r) => Ok(DeletedRows {
            max_ratio: *r.get_ref(),
            purge: false,
        }),
    }
}

/// Replaces `today`, `yesterday`, `today - Nd` (and `+ Nd`) outside quotes by the literal date
/// (`'2026-11-30'`), so the `--where` parser sees plain literals. Dates are UTC.
pub fn expand_date_macros(input: &str, today: NaiveDate) -> Result<String, DateMacroError> {
    let chars: Vec<char> = input.chars().collect();
    let mut out = String::with_capacity(input.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // Quoted text and quoted identifiers are copied as they are ('' escapes itself).
        if c == '\'' || c == '"' || c == '`' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += 1;
            }
            i = (i + 1).min(chars.len());
            out.extend(&chars[start..i]);
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let base = match word.to_ascii_lowercase().as_str() {
                "today" => today,
                "yesterday" => today
                    .checked_sub_days(Days::new(1))
                    .ok_or(DateMacroError::OutOfRange)?,
                _ => {
                    out.push_str(&word);
                    continue;
                }
            };
            let (date, next) = offset(&chars, i, base, &word)?;
            i = next;
            out.push_str(&format!("'{}'", date.format("%Y-%m-%d")));
            continue;
        }
        out.push(c);
        i += 1;
    }
    Ok(out)
}

/// An optional `- Nd` / `+ Nd` after a date macro ending at `i`.
fn offset(
    chars: &[char],
    i: usize,
    base: NaiveDate,
    word: &str,
) -> Result<(NaiveDate, usize), DateMacroError> {
    let skip_ws = |mut j: usize| {
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        j
    };
    let j = skip_ws(i);
    let sign = match chars.get(j) {
        Some('-') => -1,
        Some('+') => 1,
        _ => return Ok((base, i)),
    };
    let mut k = skip_ws(j + 1);
    let digits_start = k;
    while k < chars.len() && chars[k].is_ascii_digit() {
        k += 1;
    }
    let digits: String = chars[digits_start..k].iter().collect();
    let unit_start = skip_ws(k);
    k = unit_start;
    while k < chars.len() && chars[k].is_alphabetic() {
        k += 1;
    }
    let unit: String = chars[unit_start..k].iter().collect();
    let n: u64 = match (digits.parse(), unit.to_ascii_lowercase().as_str()) {
        (Ok(n), "d" | "day" | "days") => n,
        _ => {
            let found: String = chars[j..k.max(j + 1)].iter().collect();
            return Err(DateMacroError::Offset {
                word: word.to_string(),
                found: found.trim().to_string(),
            });
        }
    };
    let date = if sign < 0 {
        base.checked_sub_days(Days::new(n))
    } else {
        base.checked_add_days(Days::new(n))
    }
    .ok_or_else(|| DateMacroError::OffsetOutOfRange {
        word: word.to_string(),
        sign: if sign < 0 { '-' } else { '+' },
        days: n,
    })?;
    Ok((date, k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::GIB;

    fn base() -> Thresholds {
        Thresholds {
            target_file_size: 128 * MIB,
            small_file_size: 128 * MIB,
            max_file_size: GIB,
        }
    }

    fn parse(text: &str) -> Result<Policy, String> {
        Policy::parse(text, "p.toml", base()).map_err(|e| e.to_string())
    }

    fn date(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn max_depth_turns_re_clustering_on_and_a_bound_it_cannot_keep_is_named_with_its_line() {
        assert_eq!(parse("").unwrap().recluster, None);
        let r = parse("strategy = \"zorder\"\ncolumns = [\"sensor\"]\nmax_depth = 4")
            .unwrap()
            .recluster
            .unwrap();
        assert_eq!((r.max_depth, r.every), (4.0, DEFAULT_DEPTH_EVERY));
        let p = parse("max_depth = 2.5\ndepth_every = \"1m\"").unwrap();
        assert_eq!(
            p.recluster,
            Some(Recluster {
                max_depth: 2.5,
                every: Duration::from_secs(60)
            })
        );
        assert!(p.summary().contains("overlap deeper than 2.5 files"));
        assert_eq!(p.to_json()["max_depth"], 2.5);
        let e = parse("max_depth = 0.5").unwrap_err();
        assert!(
            e.contains("line 1: max_depth must be a number of files of at least 1"),
            "{e}"
        );
        let e = parse("strategy = \"binpack\"\nmax_depth = 4").unwrap_err();
        assert!(
            e.contains("line 2: max_depth needs an order to keep"),
            "{e}"
        );
        let e = parse("depth_every = \"1m\"").unwrap_err();
        assert!(
            e.contains("line 1: depth_every is set without max_depth"),
            "{e}"
        );
        let e = parse("max_depth = 4\ndepth_every = 0").unwrap_err();
        assert!(
            e.contains("line 2: depth_every is 0s: must be greater than 0"),
            "{e}"
        );
    }

    #[test]
    fn strategy_and_columns_choose_the_order_jobs_write_rows_in_and_mistakes_are_named() {
        assert_eq!(parse("").unwrap().layout, LayoutRequest::Auto);
        assert_eq!(
            parse("strategy = \"binpack\"").unwrap().layout,
            LayoutRequest::Unclustered
        );
        let z = parse("strategy = \"zorder\"\ncolumns = [\"sensor\", \"ts\"]").unwrap();
        assert_eq!(
            z.layout,
            LayoutRequest::Order {
                kind: OrderKind::ZOrder,
                columns: vec!["sensor".into(), "ts".into()],
                whole_partitions: false,
            }
        );
        assert!(
            z.summary()
                .contains("each job's rows in z-order by sensor, ts")
        );
        assert_eq!(z.to_json()["strategy"], "zorder");
        let e = parse("strategy = \"zorder\"").unwrap_err();
        assert!(e.contains("line 1") && e.contains("needs `columns`"), "{e}");
        let e = parse("\ncolumns = [\"a\"]").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("only \"sort\" and \"zorder\""),
            "{e}"
        );
        let e = parse("strategy = \"hilbert\"").unwrap_err();
        assert!(e.contains("\"hilbert\"") && e.contains("expected"), "{e}");
    }

    #[test]
    fn builtin_default_is_50_small_files_of_the_report_every_10_seconds() {
        let p = Policy::builtin(base());
        assert_eq!(p.preset, Preset::Default);
        assert_eq!(p.min_small_files, 50);
        assert_eq!(p.small_file_size, 128 * MIB);
        assert_eq!(p.min_file_size, 128 * MIB);
        assert_eq!(p.target_file_size, None);
        assert_eq!(p.interval, Duration::from_secs(10));
        assert_eq!((p.max_jobs, p.max_failures), (4, 4));
        assert_eq!(p.backoff_base, Duration::from_secs(30));
        assert_eq!(p.quiet_period, None);
        assert_eq!(p.horizon(), Duration::ZERO);
        assert_eq!(p.source, "built-in default");
        assert_eq!(
            parse("").unwrap(),
            Policy {
                source: "p.toml".into(),
                ..p
            }
        );
    }

    #[test]
    fn max_deleted_ratio_defaults_to_delta_and_is_checked() {
        assert_eq!(parse("").unwrap().deleted_rows.max_ratio, 0.05);
        assert_eq!(
            parse("max_deleted_ratio = 0.2")
                .unwrap()
                .deleted_rows
                .max_ratio,
            0.2
        );
        let e = parse("max_deleted_ratio = 1.5").unwrap_err();
        assert!(
            e.contains("max_deleted_ratio") && e.contains("from 0 to 1"),
            "{e}"
        );
    }

    #[test]
    fn the_executor_is_local_by_default_and_ray_needs_an_address() {
        assert_eq!(parse("").unwrap().executor, Executor::Local);
        let p = parse("executor = \"ray\"\nray_address = \"http://head:8265/\"").unwrap();
        assert_eq!(
            p.executor,
            Executor::Ray(RayOptions::new("http://head:8265"))
        );
        assert!(p.summary().contains("Ray cluster at http://head:8265"));
        let e = parse("executor = \"ray\"").unwrap_err().to_string();
        assert!(
            e.contains("line 1: executor \"ray\" needs ray_address"),
            "{e}"
        );
        let e = parse("executor = \"spark\"").unwrap_err().to_string();
        assert!(e.contains("expected \"local\" or \"ray\""), "{e}");
    }

    #[test]
    fn a_ray_address_password_shows_neither_in_the_summary_nor_in_a_parse_error() {
        let p =
            parse("executor = \"ray\"\nray_address = \"http://polu:polpw7@head:8265\"").unwrap();
        let summary = p.summary();
        assert!(
            summary.contains("Ray cluster at http://head:8265"),
            "{summary}"
        );
        assert!(
            !summary.contains("polpw7") && !summary.contains("polu"),
            "{summary}"
        );
        let e = parse("executor = \"ray\"\nray_address = \"http://polu:polpw8@head:8265\nx = 1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
        assert!(!e.contains("polpw8"), "{e}");
    }

    #[test]
    fn an_iceberg_catalog_is_checked_and_its_password_never_shows() {
        assert_eq!(parse("").unwrap().iceberg_catalog, None);
        let p = parse("iceberg_catalog = \"postgresql://lh:icepw5@db:5432/cat\"").unwrap();
        assert_eq!(
            p.iceberg_catalog.as_deref(),
            Some("postgresql://lh:icepw5@db:5432/cat")
        );
        let (summary, json) = (p.summary(), p.to_json().to_string());
        assert!(
            summary.contains("through the catalog postgresql://db:5432/cat"),
            "{summary}"
        );
        assert!(
            !summary.contains("icepw5") && !json.contains("icepw5"),
            "{json}"
        );
        let e = parse("interval = \"5s\"\niceberg_catalog = \"thrift://hms:9083\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2: iceberg_catalog"), "{e}");
        assert!(e.contains("thrift://hms:9083"), "{e}");
    }

    #[test]
    fn presets_match_the_janitors_they_are_named_for() {
        let p = parse("preset = \"databricks-auto-compaction\"").unwrap();
        assert_eq!(
            (
                p.min_small_files,
                p.small_file_size,
                p.target_file_size,
                p.min_file_size
            ),
            (50, 64 * MIB, Some(128 * MIB), 64 * MIB)
        );
        assert_eq!(p.aged, None);
        let p = parse("preset = \"glue\"").unwrap();
        assert_eq!(
            (p.min_small_files, p.small_file_size, p.target_file_size),
            (101, 384 * MIB, Some(512 * MIB))
        );
        let p = parse("preset = \"amoro\"").unwrap();
        assert_eq!(
            (p.min_small_files, p.small_file_size, p.target_file_size),
            (12, 16 * MIB, Some(128 * MIB))
        );
        assert_eq!(
            p.aged,
            Some(AgedRule {
                min_small_files: 2,
                age: Duration::from_secs(3600)
            })
        );
        assert_eq!(p.horizon(), Duration::from_secs(3600));
        assert_eq!(p.rule(), "amoro");
    }

    #[test]
    fn overrides_replace_preset_values_and_a_target_moves_the_presets_small_threshold() {
        let p = parse(
            "preset = \"databricks-auto-compaction\"\n\
             target_file_size = \"256MiB\"\n\
             min_small_files = 20\n\
             partitions = \"ingestion_date >= today - 2d\"\n\
             written_within = \"6h\"\n\
             quiet_period = \"60s\"\n\
             interval = 5\n\
             max_jobs = 2\n\
             max_failures = 3\n\
             backoff_base = \"1m\"\n",
        )
        .unwrap();
        assert_eq!(p.target_file_size, Some(256 * MIB));
        assert_eq!(
            p.small_file_size,
            128 * MIB,
            "half the target, as the preset says"
        );
        assert_eq!(p.min_small_files, 20);
        assert_eq!(p.partitions.as_ref().unwrap().line, 4);
        assert_eq!(p.written_within, Some(Duration::from_secs(6 * 3600)));
        assert_eq!(p.quiet_period, Some(Duration::from_secs(60)));
        assert_eq!(
            p.interval,
            Duration::from_secs(5),
            "a bare number is seconds"
        );
        assert_eq!((p.max_jobs, p.max_failures), (2, 3));
        assert_eq!(p.backoff_base, Duration::from_secs(60));
        assert_eq!(p.horizon(), Duration::from_secs(6 * 3600));
        let p = parse("small_file_size = \"8MiB\"\nmin_file_size = \"32MiB\"\n").unwrap();
        assert_eq!((p.small_file_size, p.min_file_size), (8 * MIB, 32 * MIB));
        let p = parse("preset = \"amoro\"\naged_after = \"30m\"\n").unwrap();
        assert_eq!(p.aged.unwrap().age, Duration::from_secs(1800));
        let p = parse("aged_min_small_files = 3\n").unwrap();
        assert_eq!(p.aged.unwrap().min_small_files, 3);
    }

    #[test]
    fn a_partitions_predicate_with_a_subquery_or_a_function_is_refused_at_load() {
        for (bad, why) in [
            ("d = (SELECT 1)", "expected a literal"),
            ("d = upper('x')", "expected a literal"),
            ("lower(d) = 'x'", "partition column"),
            ("d LIKE 'x%'", "not supported"),
            ("d = today - 1d OR EXISTS (SELECT 1)", "not supported"),
        ] {
            let e = parse(&format!("\npartitions = \"{bad}\"\n")).unwrap_err();
            assert!(e.contains("line 2: partitions is invalid"), "{bad}: {e}");
            assert!(e.contains(why), "{bad}: {e}");
        }
        let ok =
            parse("partitions = \"ingestion_date >= today - 2d AND region IN ('eu', 'us')\"\n");
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key_and_line() {
        let e = parse("preset = \"glue\"\nmin_smal_files = 3\n").unwrap_err();
        assert!(e.contains("min_smal_files") && e.contains("line 2"), "{e}");
        let e = parse("preset = \"spark\"\n").unwrap_err();
        assert!(e.contains("spark") && e.contains("line 1"), "{e}");
        assert!(
            e.contains("databricks-auto-compaction"),
            "lists the presets: {e}"
        );
        let e = parse("\ninterval = \"soon\"\n").unwrap_err();
        assert!(
            e.contains("invalid duration") && e.contains("line 2"),
            "{e}"
        );
        let e = parse("\n\ntarget_file_size = \"huge\"\n").unwrap_err();
        assert!(e.contains("invalid size") && e.contains("line 3"), "{e}");
        let e = parse("max_jobs = 0\n").unwrap_err();
        assert!(e.contains("line 1: max_jobs must be at least 1"), "{e}");
        let e = parse("\nmin_small_files = 1\n").unwrap_err();
        assert!(
            e.contains("line 2: min_small_files must be at least 2"),
            "{e}"
        );
        let e = parse("\n\npartitions = \"d >= today - 2x\"\n").unwrap_err();
        assert!(
            e.contains("line 3: partitions is invalid") && e.contains("today - 2d"),
            "{e}"
        );
        let e = parse("interval = \"0s\"\n").unwrap_err();
        assert!(e.contains("interval is 0s: must be greater than 0"), "{e}");
        assert!(e.contains("p.toml"), "names the file: {e}");
    }

    #[test]
    fn a_huge_interval_is_refused_at_load_with_its_file_line_and_range() {
        // 100000000000 years fits a Duration, but not an Instant: `watch` panicked adding it.
        let e = parse("preset = \"default\"\ninterval = \"100000000000y\"\n").unwrap_err();
        assert!(e.contains("p.toml"), "names the file: {e}");
        assert!(
            e.contains(
                "line 2: interval is 100000000000years: must be greater than 0 and at most 10years"
            ),
            "{e}"
        );
        let e =
            Policy::parse("\n\ninterval = 9223372036854775807\n", "p.toml", base()).unwrap_err();
        let PolicyError::Invalid { source, .. } = &e else {
            panic!("{e}");
        };
        assert_eq!((source.line, source.key), (3, "interval"));
        assert!(matches!(source.problem, SettingProblem::OutOfRange { .. }));
    }

    #[test]
    fn every_duration_setting_is_bounded_and_the_maximum_itself_is_accepted() {
        for key in [
            "aged_after",
            "written_within",
            "quiet_period",
            "interval",
            "backoff_base",
            "backoff_max",
            "idle_poll_max",
            "discover_every",
            "vacuum_every",
            "vacuum_retention",
            "depth_every",
        ] {
            let extra = if key == "depth_every" {
                "max_depth = 4\n"
            } else {
                ""
            };
            let e = parse(&format!("{extra}\n{key} = \"11y\"\n")).unwrap_err();
            let line = if extra.is_empty() { 2 } else { 3 };
            assert!(
                e.contains(&format!("line {line}: {key} is 11years: must be "))
                    && e.contains("at most 10years"),
                "{key}: {e}"
            );
            let max = MAX_DURATION.as_secs();
            let ok = parse(&format!("{extra}{key} = {max}\n"));
            assert!(ok.is_ok(), "{key} at the maximum: {ok:?}");
        }
        let p = parse("interval = \"10y\"\n").unwrap();
        assert_eq!(p.interval, MAX_DURATION);
        let e = parse("commit_spacing = \"11y\"\n").unwrap_err();
        assert!(
            e.contains("line 1: commit_spacing is 11years: must be \"auto\", \"off\" or a duration of at most 10years"),
            "{e}"
        );
        assert!(parse("commit_spacing = \"10y\"\n").is_ok());
    }

    #[test]
    fn sizes_are_bounded_by_a_pebibyte_and_refuse_zero() {
        let e = parse("\ntarget_file_size = \"2PiB\"\n").unwrap_err();
        assert!(
            e.contains("line 2: target_file_size is 2 PiB (2251799813685248 B): must be from 1 MiB to 1 PiB"),
            "{e}"
        );
        for key in ["small_file_size", "min_file_size"] {
            let e = parse(&format!("{key} = \"1025TiB\"\n")).unwrap_err();
            assert!(
                e.contains(&format!("line 1: {key} is ")) && e.contains("PiB"),
                "{e}"
            );
            let e = parse(&format!("\n{key} = \"0B\"\n")).unwrap_err();
            assert!(e.contains(&format!("line 2: {key} is 0")), "{e}");
            assert!(
                parse(&format!("{key} = \"1PiB\"\n")).is_ok(),
                "{key} at the max"
            );
        }
        let p = parse("target_file_size = \"1PiB\"\n").unwrap();
        assert_eq!(p.target_file_size, Some(MAX_SIZE));
    }

    #[test]
    fn a_refused_value_is_a_typed_error_with_its_line_and_key() {
        let e = Policy::parse("\nmax_jobs = 0\n", "p.toml", base()).unwrap_err();
        let PolicyError::Invalid { source, .. } = &e else {
            panic!("{e}");
        };
        assert_eq!((source.line, source.key), (2, "max_jobs"));
        assert!(matches!(source.problem, SettingProblem::AtLeast(1)));
        assert!(std::error::Error::source(&e).is_some());
        let e = Policy::parse("max_jobs = \"x\"\n", "p.toml", base()).unwrap_err();
        assert!(matches!(e, PolicyError::Syntax { .. }), "{e}");
    }

    #[test]
    fn the_shipped_example_parses_and_says_what_it_sets() {
        let p = Policy::parse(EXAMPLE_POLICY, "assets/janitor-policy.toml", base()).unwrap();
        assert_eq!(p.preset, Preset::DatabricksAutoCompaction);
        assert!(p.partitions.is_some());
    }

    #[test]
    fn date_macros_expand_to_literal_dates_outside_quotes() {
        let d = date("2026-03-01");
        let x = |s: &str| expand_date_macros(s, d).unwrap();
        assert_eq!(x("ingestion_date = today"), "ingestion_date = '2026-03-01'");
        assert_eq!(
            x("ingestion_date = yesterday"),
            "ingestion_date = '2026-02-28'"
        );
        assert_eq!(
            x("ingestion_date >= today - 2d"),
            "ingestion_date >= '2026-02-27'"
        );
        assert_eq!(
            x("d >= TODAY-10days AND d < today"),
            "d >= '2026-02-19' AND d < '2026-03-01'"
        );
        assert_eq!(x("d between yesterday - 1 day"), "d between '2026-02-27'");
        assert_eq!(x("d = today + 1d"), "d = '2026-03-02'");
        // Not a macro: inside quotes, part of a longer name, or a quoted identifier.
        assert_eq!(
            x("d = 'today' AND today_x = 1"),
            "d = 'today' AND today_x = 1"
        );
        assert_eq!(x("\"today\" = 'it''s today'"), "\"today\" = 'it''s today'");
        // `today - 2` without a unit, or another unit, is refused.
        assert!(expand_date_macros("d >= today - 2", d).is_err());
        assert!(
            expand_date_macros("d >= today - 2h", d)
                .unwrap_err()
                .to_string()
                .contains("today - 2d")
        );
        // The result parses with the --where parser.
        let cols = vec!["ingestion_date".to_string()];
        let p =
            crate::compact::selection::Predicate::parse(&x("ingestion_date >= today - 2d"), &cols)
                .unwrap();
        assert!(p.matches(&[("ingestion_date".into(), Some("2026-02-27".into()))]));
        assert!(!p.matches(&[("ingestion_date".into(), Some("2026-02-26".into()))]));
    }

    #[test]
    fn the_auto_target_follows_the_tables_size() {
        let tb = 1_000_000_000_000u64;
        assert_eq!(auto_target(0).0, 256 * MIB);
        assert_eq!(auto_target(tb).0, 256 * MIB);
        assert_eq!(auto_target(2_500_000_000_000).0, 256 * MIB);
        assert_eq!(auto_target(6_250_000_000_000).0, 640 * MIB, "halfway");
        assert_eq!(auto_target(10 * tb).0, 1024 * MIB);
        assert_eq!(auto_target(50 * tb).0, 1024 * MIB);
        let (_, why) = auto_target(3 * MIB);
        assert!(
            why.starts_with("target 256 MiB (auto: the table holds 3 MiB"),
            "{why}"
        );
    }

    #[test]
    fn target_file_size_auto_is_the_default_and_a_bad_word_is_named() {
        let p = parse("target_file_size = \"auto\"\n").unwrap();
        assert_eq!(p.target_file_size, None, "auto: chosen per table");
        assert!(
            p.summary().contains("auto by the table's size"),
            "{}",
            p.summary()
        );
        let p = parse("target_file_size = \"512MiB\"\n").unwrap();
        assert_eq!(p.target_file_size, Some(512 * MIB));
        let e = parse("target_file_size = \"autom\"\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("\"autom\""), "{e}");
        assert!(e.contains("or \"auto\""), "offers auto: {e}");
    }
}
