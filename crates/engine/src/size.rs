//! Byte sizes: parsing user input ("128MiB", "1.5GB", "4096B": a unit is required, since
//! "128" would silently mean 128 bytes) and formatting for humans.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;
pub const TIB: u64 = 1024 * GIB;
pub const PIB: u64 = 1024 * TIB;

/// A number of bytes that parses from and prints as a human size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

/// The smallest target file size accepted: below it a compaction would write a swarm of tiny
/// files (and predicting them costs memory per output).
pub const MIN_TARGET_FILE_SIZE: u64 = MIB;

/// A target below `MIN_TARGET_FILE_SIZE`; `what` names where it was given (empty: the message
/// starts with the size, for a caller that names it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetFileSizeError {
    pub what: &'static str,
    pub bytes: u64,
}

impl fmt::Display for TargetFileSizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.what.is_empty() {
            write!(f, "{} ", self.what)?;
        }
        write!(
            f,
            "{} is below the minimum of {}: files that small defeat compaction (the usual target is 128MiB)",
            format_bytes(self.bytes),
            format_bytes(MIN_TARGET_FILE_SIZE)
        )
    }
}

impl std::error::Error for TargetFileSizeError {}

/// Refuses a target below `MIN_TARGET_FILE_SIZE`; `what` names where it was given.
pub fn check_target_file_size(bytes: u64, what: &'static str) -> Result<(), TargetFileSizeError> {
    if bytes < MIN_TARGET_FILE_SIZE {
        return Err(TargetFileSizeError { what, bytes });
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid size {input:?}: {reason}")]
pub struct SizeParseError {
    pub input: String,
    pub reason: String,
}

const EXAMPLES: &str = "write a number with a unit, e.g. 128MiB, 1GiB, 512MB, 4096B";

impl FromStr for ByteSize {
    type Err = SizeParseError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason: &str| SizeParseError {
            input: input.to_string(),
            reason: format!("{reason}; {EXAMPLES}"),
        };
        let s = input.trim();
        if s.is_empty() {
            return Err(err("it is empty"));
        }
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        if num.is_empty() {
            return Err(err("it does not start with a number"));
        }
        let value: f64 = num.parse().map_err(|_| err("the number is malformed"))?;
        let multiplier = match unit.trim().to_ascii_lowercase().as_str() {
            // "128" is ambiguous (bytes? MiB?): say which.
            "" if value != 0.0 => {
                return Err(SizeParseError {
                    input: input.to_string(),
                    reason: format!(
                        "it has no unit; write {num}MiB (or {num}B if bytes are meant)"
                    ),
                });
            }
            "" | "b" => 1,
            "k" | "kib" => KIB,
            "kb" => 1000,
            "m" | "mib" => MIB,
            "mb" => 1000 * 1000,
            "g" | "gib" => GIB,
            "gb" => 1000 * 1000 * 1000,
            "t" | "tib" => TIB,
            "tb" => 1000 * 1000 * 1000 * 1000,
            // What `format_bytes` writes from 1 PiB up must read back (`lakehealth config`).
            "p" | "pib" => PIB,
            "pb" => 1000 * 1000 * 1000 * 1000 * 1000,
            _ => {
                return Err(err(
                    "the unit is unknown (use B, KiB, MiB, GiB, TiB, PiB, KB, MB, GB, TB, PB)",
                ));
            }
        };
        let bytes = value * multiplier as f64;
        if !bytes.is_finite() || bytes > u64::MAX as f64 {
            return Err(err("it is too large"));
        }
        Ok(ByteSize(bytes.round() as u64))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_bytes(self.0))
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_bytes(self.0))
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Binary units, at most 3 significant digits: "0 B", "999 B", "1.5 KiB", "128 MiB", "1.02 GiB".
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    let text = if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    };
    // "128.0" reads worse than "128"
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text} {}", UNITS[unit])
}

/// Compact counts for narrow columns: 999, 1.2k, 45k, 1.2M.
pub fn format_count(n: u64) -> String {
    if n < 1_000 {
        n.to_string()
    } else if n < 10_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else if n < 1_000_000 {
        format!("{}k", n / 1_000)
    } else if n < 10_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else {
        format!("{}M", n / 1_000_000)
    }
}

/// `n` and its noun, singular for one (`1 bin`, `2 bins`); English nouns taking an `s`.
pub fn plural(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!("128MiB".parse::<ByteSize>(), Ok(ByteSize(128 * MIB)));
        assert_eq!("128 mib".parse::<ByteSize>(), Ok(ByteSize(128 * MIB)));
        assert_eq!("1GiB".parse::<ByteSize>(), Ok(ByteSize(GIB)));
        assert_eq!("1.5G".parse::<ByteSize>(), Ok(ByteSize(GIB + GIB / 2)));
        assert_eq!("512MB".parse::<ByteSize>(), Ok(ByteSize(512_000_000)));
        assert_eq!("4096B".parse::<ByteSize>(), Ok(ByteSize(4096)));
        assert_eq!("0".parse::<ByteSize>(), Ok(ByteSize(0)));
        assert_eq!("10 B".parse::<ByteSize>(), Ok(ByteSize(10)));
    }

    #[test]
    fn rejects_garbage_with_a_reason() {
        let e = "12 parsecs".parse::<ByteSize>().unwrap_err();
        assert!(e.to_string().contains("unit is unknown"), "{e}");
        assert!("".parse::<ByteSize>().is_err());
        assert!("MiB".parse::<ByteSize>().is_err());
        assert!("1.2.3MiB".parse::<ByteSize>().is_err());
        assert!("-5MiB".parse::<ByteSize>().is_err());
    }

    #[test]
    fn a_number_without_a_unit_is_refused_with_a_suggestion() {
        let e = "128".parse::<ByteSize>().unwrap_err().to_string();
        assert!(e.contains("no unit") && e.contains("128MiB"), "{e}");
        assert!(e.contains("128B"), "{e}");
    }

    #[test]
    fn targets_below_one_mib_are_refused() {
        assert!(check_target_file_size(MIB, "--target").is_ok());
        let e = check_target_file_size(MIB - 1, "--target")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--target 1024 KiB") && e.contains("minimum of 1 MiB"),
            "{e}"
        );
        assert!(check_target_file_size(1, "x").is_err());
    }

    #[test]
    fn formats_binary_units() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(128 * MIB), "128 MiB");
        assert_eq!(format_bytes(GIB), "1 GiB");
        assert_eq!(format_bytes(10 * GIB + GIB / 2), "10.5 GiB");
    }

    #[test]
    fn round_trips_through_display() {
        for s in ["128 MiB", "1 GiB", "8 MiB", "1.5 KiB"] {
            let b: ByteSize = s.parse().unwrap();
            assert_eq!(b.to_string(), s);
        }
    }

    /// Found by fuzzing (tests/cli/fuzz.rs): 1 PiB and above displayed as "... PiB", which
    /// did not parse back (a config printed by `lakehealth config` could not be read).
    #[test]
    fn fuzz_regression_petabytes_read_back_as_displayed() {
        for b in [PIB, 3 * PIB / 2, u64::MAX] {
            let shown = ByteSize(b).to_string();
            let again: ByteSize = shown.parse().unwrap();
            let (a, b) = (again.0 as f64, b as f64);
            assert!((a - b).abs() <= b * 0.01, "{shown} reads {a}, was {b}");
        }
        assert_eq!(
            "2PB".parse::<ByteSize>().unwrap(),
            ByteSize(2_000_000_000_000_000)
        );
    }

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(
            [plural(0, "bin"), plural(1, "bin"), plural(2, "file")],
            ["0 bins", "1 bin", "2 files"]
        );
    }

    #[test]
    fn counts_are_compact() {
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1234), "1.2k");
        assert_eq!(format_count(45_678), "45k");
        assert_eq!(format_count(1_234_567), "1.2M");
    }
}
