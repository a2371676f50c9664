//! User configuration: `config.toml` in the platform config dir (via `directories`), or the file
//! named by `--config` / `LAKEHEALTH_CONFIG`. Unknown keys and bad values are errors that name
//! the key and line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::engine::model::cost::{Prices, Rates};
use crate::engine::model::thresholds::Thresholds;
use crate::engine::size::{ByteSize, GIB, MIB};

/// The commented default configuration shipped in `assets/`.
pub const DEFAULT_CONFIG: &str = include_str!("../assets/config.toml");
pub const CONFIG_ENV: &str = "LAKEHEALTH_CONFIG";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[derive(Default)]
pub struct Config {
    pub health: HealthConfig,
    pub discovery: DiscoveryConfig,
    pub ui: UiConfig,
    pub stream: StreamConfig,
    pub history: HistoryConfig,
    /// Prices per store kind (`[price.s3]`, `[price.gs]`, `[price.az]`, `[price.file]`), each
    /// key overriding that kind's default (`Rates::default_for_scheme`).
    pub price: HashMap<String, RatesOverride>,
    pub storage: HashMap<String, String>,
    pub trust: TrustConfig,
}

/// The installation key that seals lakehealth's job records (`engine::sealed`). Unset: the
/// key file in the data dir (created on first use). `LAKEHEALTH_KEY` wins over this.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrustConfig {
    /// At least 32 characters; the same on every machine that runs jobs on the same tables.
    pub key: Option<String>,
    /// The key being rotated out: records it sealed are still acted on.
    pub previous_key: Option<String>,
}

impl std::fmt::Debug for TrustConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys.
        f.debug_struct("TrustConfig")
            .field("key", &self.key.as_ref().map(|_| "***"))
            .field("previous_key", &self.previous_key.as_ref().map(|_| "***"))
            .finish()
    }
}

impl TrustConfig {
    /// The keyring this config gives, if it gives a key.
    pub fn keyring(
        &self,
    ) -> Result<Option<crate::engine::sealed::Keyring>, crate::engine::sealed::KeyError> {
        use crate::engine::sealed::{Key, Keyring};
        let Some(key) = &self.key else {
            return Ok(None);
        };
        let previous = match &self.previous_key {
            Some(p) => Some(Key::from_text(p, "the config's [trust] previous_key")?),
            None => None,
        };
        Ok(Some(Keyring::new(
            Key::from_text(key, "the config's [trust] key")?,
            previous,
        )))
    }
}

/// Some of a store's prices, in US dollars: per 1,000 requests, per GiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatesOverride {
    pub get_per_1000: Option<f64>,
    pub put_per_1000: Option<f64>,
    pub list_per_1000: Option<f64>,
    pub delete_per_1000: Option<f64>,
    pub read_per_gib: Option<f64>,
    pub written_per_gib: Option<f64>,
}

impl RatesOverride {
    fn over(&self, base: Rates) -> Rates {
        Rates {
            get_per_1000: self.get_per_1000.unwrap_or(base.get_per_1000),
            put_per_1000: self.put_per_1000.unwrap_or(base.put_per_1000),
            list_per_1000: self.list_per_1000.unwrap_or(base.list_per_1000),
            delete_per_1000: self.delete_per_1000.unwrap_or(base.delete_per_1000),
            read_per_gib: self.read_per_gib.unwrap_or(base.read_per_gib),
            written_per_gib: self.written_per_gib.unwrap_or(base.written_per_gib),
        }
    }

    fn values(&self) -> [(&'static str, Option<f64>); 6] {
        [
            ("get_per_1000", self.get_per_1000),
            ("put_per_1000", self.put_per_1000),
            ("list_per_1000", self.list_per_1000),
            ("delete_per_1000", self.delete_per_1000),
            ("read_per_gib", self.read_per_gib),
            ("written_per_gib", self.written_per_gib),
        ]
    }
}

/// The store kinds `[price.<kind>]` may name: URL schemes lakehealth opens.
const PRICED_SCHEMES: &[&str] = &["s3", "s3a", "gs", "az", "abfs", "abfss", "file"];

/// The janitor's history file (`watch`, the TUI's janitor): it rotates by size.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    pub max_size: ByteSize,
    /// Rotated files kept beside the current one.
    pub keep: usize,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        let r = crate::engine::janitor::history::Rotation::default();
        Self {
            max_size: ByteSize(r.max_bytes),
            keep: r.keep,
        }
    }
}

impl HistoryConfig {
    pub fn rotation(&self) -> crate::engine::janitor::history::Rotation {
        crate::engine::janitor::history::Rotation {
            max_bytes: self.max_size.0,
            keep: self.keep,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HealthConfig {
    pub target_file_size: ByteSize,
    pub small_file_size: Option<ByteSize>,
    pub max_file_size: ByteSize,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiscoveryConfig {
    pub max_depth: usize,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UiConfig {
    #[serde(deserialize_with = "duration")]
    pub refresh_interval: Duration,
    pub history_commits: usize,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamConfig {
    #[serde(deserialize_with = "duration")]
    pub interval: Duration,
    pub rows: usize,
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(&s).map_err(|e| {
        serde::de::Error::custom(format!(
            "invalid duration {s:?}: {e} (e.g. \"1s\", \"500ms\", \"2m\")"
        ))
    })
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self {
            target_file_size: ByteSize(128 * MIB),
            small_file_size: None,
            max_file_size: ByteSize(GIB),
        }
    }
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        Self { max_depth: 3 }
    }
}

impl Default for UiConfig {
    fn default() -> Self {
        Self {
            refresh_interval: Duration::from_secs(10),
            history_commits: 100,
        }
    }
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            rows: 500,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not TOML, or not the config's keys and types. The text is the parser's with credentials
    /// redacted, so the parser's error (which quotes the input) is not kept.
    #[error("invalid config file {path}:\n{message}")]
    Syntax { path: PathBuf, message: String },
    #[error("invalid config file {path}:\n{source}")]
    Invalid {
        path: PathBuf,
        #[source]
        source: ConfigValueError,
    },
}

/// Values that parse but do not fit together.
#[derive(Debug, thiserror::Error)]
pub enum ConfigValueError {
    #[error(transparent)]
    TargetFileSize(#[from] crate::engine::size::TargetFileSizeError),
    #[error("health.max_file_size must not be below health.small_file_size")]
    MaxBelowSmall,
    #[error("stream.rows must be at least 1")]
    NoRows,
    #[error("{key} must be above zero (e.g. \"1s\"): it is the pause between repeated actions")]
    ZeroInterval { key: &'static str },
    /// Past the longest duration a setting takes (`policy::MAX_DURATION`): a deadline that far
    /// would overflow the clock.
    #[error("{key} is {got}: it must be above zero and at most {max}")]
    LongInterval {
        key: &'static str,
        got: String,
        max: String,
    },
    #[error(
        "history.max_size must be at least 64 KiB (e.g. \"10MiB\"): smaller would rotate every few lines"
    )]
    HistoryTooSmall,
    #[error("history.keep must be at least 1: with none kept, a rotation would delete the history")]
    HistoryKeepsNone,
    #[error("[price.{0}]: not a store kind; use one of {list}", list = PRICED_SCHEMES.join(", "))]
    UnknownPriceStore(String),
    #[error("price.{store}.{key} is {value}: a price must be a finite number, zero or more")]
    BadPrice {
        store: String,
        key: &'static str,
        value: f64,
    },
}

impl Config {
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        // Before parsing: an error must not show a credential of [storage] (or anywhere).
        crate::engine::secrets::register_toml_text(text);
        let c: Config = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: crate::engine::secrets::toml_error(&e, text),
        })?;
        c.validate().map_err(|source| ConfigError::Invalid {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(c)
    }

    fn validate(&self) -> Result<(), ConfigValueError> {
        crate::engine::size::check_target_file_size(
            self.health.target_file_size.0,
            "health.target_file_size",
        )?;
        if self.health.max_file_size < self.small_file_size() {
            return Err(ConfigValueError::MaxBelowSmall);
        }
        if self.stream.rows == 0 {
            return Err(ConfigValueError::NoRows);
        }
        if self.history.max_size.0 < 64 * crate::engine::size::KIB {
            return Err(ConfigValueError::HistoryTooSmall);
        }
        if self.history.keep == 0 {
            return Err(ConfigValueError::HistoryKeepsNone);
        }
        for (store, rates) in &self.price {
            if !PRICED_SCHEMES.contains(&store.as_str()) {
                return Err(ConfigValueError::UnknownPriceStore(store.clone()));
            }
            for (key, value) in rates.values() {
                if let Some(value) = value.filter(|v| !v.is_finite() || *v < 0.0) {
                    return Err(ConfigValueError::BadPrice {
                        store: store.clone(),
                        key,
                        value,
                    });
                }
            }
        }
        for (key, d) in [
            ("stream.interval", self.stream.interval),
            ("ui.refresh_interval", self.ui.refresh_interval),
        ] {
            if d.is_zero() {
                return Err(ConfigValueError::ZeroInterval { key });
            }
            let max = crate::engine::janitor::policy::MAX_DURATION;
            if d > max {
                return Err(ConfigValueError::LongInterval {
                    key,
                    got: humantime::format_duration(d).to_string(),
                    max: humantime::format_duration(max).to_string(),
                });
            }
        }
        Ok(())
    }

    pub fn small_file_size(&self) -> ByteSize {
        self.health
            .small_file_size
            .unwrap_or(self.health.target_file_size)
    }

    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            target_file_size: self.health.target_file_size.0,
            small_file_size: self.small_file_size().0,
            max_file_size: self.health.max_file_size.0,
        }
    }

    /// What a store of URL scheme `scheme` charges: its kind's defaults, overridden by
    /// `[price.<scheme>]`.
    pub fn rates_for(&self, scheme: &str) -> Rates {
        let base = Rates::default_for_scheme(scheme);
        self.price.get(scheme).map_or(base, |o| o.over(base))
    }

    /// Every store kind's rates the config overrides.
    pub fn prices(&self) -> Prices {
        Prices(
            self.price
                .keys()
                .map(|k| (k.clone(), self.rates_for(k)))
                .collect(),
        )
    }

    /// `config.toml` in the platform config directory.
    pub fn default_path() -> Option<PathBuf> {
        directories::ProjectDirs::from("dev", "lakehealth", "lakehealth")
            .map(|d| d.config_dir().join("config.toml"))
    }

    /// Loads the explicit file (which must exist), else the env var's, else the default
    /// location if present, else built-in defaults.
    pub fn load(explicit: Option<&Path>) -> Result<(Self, Option<PathBuf>), ConfigError> {
        let env = std::env::var_os(CONFIG_ENV).map(PathBuf::from);
        let (path, must_exist) = match (explicit, env) {
            (Some(p), _) => (Some(p.to_path_buf()), true),
            (None, Some(p)) => (Some(p), true),
            (None, None) => (Self::default_path(), false),
        };
        let Some(path) = path else {
            return Ok((Self::default(), None));
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok((Self::parse(&text, &path)?, Some(path))),
            Err(e) if !must_exist && e.kind() == std::io::ErrorKind::NotFound => {
                Ok((Self::default(), None))
            }
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_default_equals_built_in_default() {
        let c = Config::parse(DEFAULT_CONFIG, Path::new("assets/config.toml")).unwrap();
        assert_eq!(c, Config::default());
    }

    #[test]
    fn a_price_section_overrides_only_the_keys_it_names_for_its_store() {
        let c = Config::parse(
            "[price.s3]\nget_per_1000 = 0.001\n[price.file]\nput_per_1000 = 0.5\n",
            Path::new("c.toml"),
        )
        .unwrap();
        let s3 = c.rates_for("s3");
        assert_eq!(s3.get_per_1000, 0.001);
        assert_eq!(s3.put_per_1000, Rates::S3_STANDARD.put_per_1000);
        assert_eq!(c.rates_for("file").put_per_1000, 0.5);
        assert_eq!(c.rates_for("gs"), Rates::S3_STANDARD);
    }

    #[test]
    fn a_bad_price_names_its_store_and_key() {
        for (text, want) in [
            ("[price.s4]\nget_per_1000 = 1.0\n", "[price.s4]"),
            ("[price.s3]\nput_per_1000 = -1.0\n", "price.s3.put_per_1000"),
            ("[price.s3]\nget_per_thousand = 1.0\n", "get_per_thousand"),
        ] {
            let e = Config::parse(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn unknown_key_is_named_with_its_line() {
        let e = Config::parse(
            "[health]\ntarget_file_size = \"64MiB\"\ntarget_fille = 3\n",
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("target_fille"), "{e}");
        assert!(e.contains("line 3"), "{e}");
    }

    #[test]
    fn bad_size_is_explained() {
        let e = Config::parse(
            "[health]\ntarget_file_size = \"huge\"\n",
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("invalid size"), "{e}");
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn sizes_and_durations_parse() {
        let c = Config::parse(
            "[health]\ntarget_file_size = \"256MiB\"\nsmall_file_size = \"64MiB\"\n[ui]\nrefresh_interval = \"2s\"\n",
            Path::new("c.toml"),
        )
        .unwrap();
        let t = c.thresholds();
        assert_eq!(t.target_file_size, 256 * MIB);
        assert_eq!(t.small_file_size, 64 * MIB);
        assert_eq!(c.ui.refresh_interval, Duration::from_secs(2));
    }

    #[test]
    fn the_history_rotation_is_configured_and_bad_values_are_named() {
        let c = Config::parse(
            "[history]\nmax_size = \"1MiB\"\nkeep = 2\n",
            Path::new("c.toml"),
        )
        .unwrap();
        assert_eq!(
            c.history.rotation(),
            crate::engine::janitor::history::Rotation {
                max_bytes: MIB,
                keep: 2
            }
        );
        for (text, named) in [
            ("[history]\nkeep = 0\n", "history.keep"),
            ("[history]\nmax_size = \"1KiB\"\n", "history.max_size"),
        ] {
            let e = Config::parse(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(named), "{e}");
        }
    }

    #[test]
    fn a_parse_error_on_a_secret_line_does_not_show_the_secret() {
        for text in [
            "[storage]\nAWS_SECRET_ACCESS_KEY = \"cfgsecret9\nAWS_REGION = \"x\"\n",
            "[storage]\nAWS_SECRET_ACCESS_KEY = 12345\n",
            "[storage]\nAWS_SECRET_ACCESS_KEY = cfgs4\n",
        ] {
            let e = Config::parse(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string();
            let shown = e;
            for secret in ["cfgsecret9", "12345", "cfgs4"] {
                assert!(!shown.contains(secret), "{shown}");
            }
            assert!(shown.contains("line 2"), "{shown}");
        }
    }

    #[test]
    fn a_tiny_target_is_refused() {
        let e = Config::parse(
            "[health]\ntarget_file_size = \"4KiB\"\n",
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("health.target_file_size 4 KiB is below the minimum"),
            "{e}"
        );
    }

    #[test]
    fn an_interval_past_ten_years_is_refused_naming_the_key_and_range() {
        let e = Config::parse(
            "[stream]\ninterval = \"100000000000y\"\n",
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "stream.interval is 100000000000years: it must be above zero and at most 10years"
            ),
            "{e}"
        );
        assert!(e.contains("c.toml"), "{e}");
        assert!(Config::parse("[stream]\ninterval = \"10y\"\n", Path::new("c.toml")).is_ok());
    }
}
