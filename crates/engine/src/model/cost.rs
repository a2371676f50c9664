//! What a piece of work costs on object storage: its requests by kind, its bytes, and their
//! price at a store's rates. The same shape carries a plan's estimate and a job's actuals, so
//! the two stand side by side (`--json`: `estimate` and `actual`).

use serde::{Deserialize, Serialize};

/// Requests and bytes against a store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requests {
    /// GETs and HEADs.
    pub get: u64,
    /// PUTs, and a multipart upload's create, parts and complete (each billed as a PUT).
    pub put: u64,
    /// LIST calls (one per page on S3).
    pub list: u64,
    /// Objects deleted.
    pub delete: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

impl Requests {
    /// What was made since `earlier` (counters only grow).
    pub fn since(self, earlier: Requests) -> Requests {
        Requests {
            get: self.get.saturating_sub(earlier.get),
            put: self.put.saturating_sub(earlier.put),
            list: self.list.saturating_sub(earlier.list),
            delete: self.delete.saturating_sub(earlier.delete),
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
            bytes_written: self.bytes_written.saturating_sub(earlier.bytes_written),
        }
    }

    pub fn total_requests(&self) -> u64 {
        self.get + self.put + self.list + self.delete
    }
}

impl std::ops::Add for Requests {
    type Output = Requests;
    fn add(self, o: Requests) -> Requests {
        Requests {
            get: self.get + o.get,
            put: self.put + o.put,
            list: self.list + o.list,
            delete: self.delete + o.delete,
            bytes_read: self.bytes_read + o.bytes_read,
            bytes_written: self.bytes_written + o.bytes_written,
        }
    }
}

/// Prices in US dollars: per 1,000 requests of each kind, per GiB moved.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rates {
    pub get_per_1000: f64,
    pub put_per_1000: f64,
    pub list_per_1000: f64,
    pub delete_per_1000: f64,
    pub read_per_gib: f64,
    pub written_per_gib: f64,
}

impl Rates {
    /// S3 Standard's list prices (us-east-1): GET $0.0004 and PUT, POST, LIST $0.005 per 1,000
    /// requests, DELETE free; bytes moved inside the region are free.
    pub const S3_STANDARD: Rates = Rates {
        get_per_1000: 0.0004,
        put_per_1000: 0.005,
        list_per_1000: 0.005,
        delete_per_1000: 0.0,
        read_per_gib: 0.0,
        written_per_gib: 0.0,
    };

    /// A local disk bills nothing.
    pub const FREE: Rates = Rates {
        get_per_1000: 0.0,
        put_per_1000: 0.0,
        list_per_1000: 0.0,
        delete_per_1000: 0.0,
        read_per_gib: 0.0,
        written_per_gib: 0.0,
    };

    /// The default for a store by its URL scheme: an object store is priced as S3 Standard
    /// (GCS and Azure bill within a few percent of it), a local file system is free.
    pub fn default_for_scheme(scheme: &str) -> Rates {
        match scheme {
            "file" | "memory" => Rates::FREE,
            _ => Rates::S3_STANDARD,
        }
    }

    pub fn usd(&self, r: &Requests) -> f64 {
        const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
        let per_1000 = |n: u64, rate: f64| n as f64 / 1000.0 * rate;
        per_1000(r.get, self.get_per_1000)
            + per_1000(r.put, self.put_per_1000)
            + per_1000(r.list, self.list_per_1000)
            + per_1000(r.delete, self.delete_per_1000)
            + r.bytes_read as f64 / GIB * self.read_per_gib
            + r.bytes_written as f64 / GIB * self.written_per_gib
    }

    /// Requests priced: the object `--json`, the history and the TUI show.
    pub fn cost(&self, r: Requests) -> Cost {
        Cost {
            usd: self.usd(&r),
            requests: r,
        }
    }
}

/// What each kind of store charges: the defaults by scheme, with the user's overrides.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices(pub std::collections::BTreeMap<String, Rates>);

impl Prices {
    /// The rates of a store of URL scheme `scheme`.
    pub fn for_scheme(&self, scheme: &str) -> Rates {
        self.0
            .get(scheme)
            .copied()
            .unwrap_or_else(|| Rates::default_for_scheme(scheme))
    }
}

/// Requests with their price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    #[serde(flatten)]
    pub requests: Requests,
    pub usd: f64,
}

impl Cost {
    /// One line: `412 GET, 36 PUT, 9 LIST, 1 DELETE, 1.2 GiB read, 1.1 GiB written, $0.0003`.
    pub fn describe(&self, bytes: impl Fn(u64) -> String) -> String {
        let r = &self.requests;
        format!(
            "{} GET, {} PUT, {} LIST, {} DELETE, {} read, {} written, {}",
            r.get,
            r.put,
            r.list,
            r.delete,
            bytes(r.bytes_read),
            bytes(r.bytes_written),
            usd_text(self.usd)
        )
    }
}

/// A price to the precision that says something: `$0.0003`, `$1.24`.
pub fn usd_text(usd: f64) -> String {
    if usd == 0.0 {
        "$0".into()
    } else if usd < 0.01 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_standard_prices_a_thousand_gets_and_a_thousand_puts_at_its_list_price() {
        let r = Requests {
            get: 1000,
            put: 1000,
            list: 2000,
            delete: 500,
            ..Default::default()
        };
        let usd = Rates::S3_STANDARD.usd(&r);
        assert!((usd - (0.0004 + 0.005 + 0.010)).abs() < 1e-12, "{usd}");
        assert_eq!(Rates::FREE.usd(&r), 0.0);
    }

    #[test]
    fn bytes_are_priced_per_gib_when_a_rate_is_set() {
        let rates = Rates {
            read_per_gib: 0.09,
            ..Rates::FREE
        };
        let r = Requests {
            bytes_read: 2 * 1024 * 1024 * 1024,
            bytes_written: 5,
            ..Default::default()
        };
        assert!((rates.usd(&r) - 0.18).abs() < 1e-12);
    }

    #[test]
    fn since_subtracts_every_kind_and_never_wraps() {
        let later = Requests {
            get: 10,
            put: 4,
            list: 3,
            delete: 1,
            bytes_read: 100,
            bytes_written: 50,
        };
        let earlier = Requests {
            get: 4,
            put: 5,
            ..Default::default()
        };
        let d = later.since(earlier);
        assert_eq!((d.get, d.put, d.list, d.bytes_read), (6, 0, 3, 100));
    }

    #[test]
    fn the_default_rates_bill_object_stores_and_not_a_local_disk() {
        assert_eq!(Rates::default_for_scheme("s3"), Rates::S3_STANDARD);
        assert_eq!(Rates::default_for_scheme("gs"), Rates::S3_STANDARD);
        assert_eq!(Rates::default_for_scheme("file"), Rates::FREE);
    }

    #[test]
    fn a_cost_serializes_flat_with_its_price() {
        let c = Rates::S3_STANDARD.cost(Requests {
            get: 1000,
            ..Default::default()
        });
        let v = serde_json::to_value(c).unwrap();
        for k in [
            "get",
            "put",
            "list",
            "delete",
            "bytes_read",
            "bytes_written",
            "usd",
        ] {
            assert!(v.get(k).is_some(), "{k} in {v}");
        }
        assert_eq!(usd_text(0.0004), "$0.0004");
        assert_eq!(usd_text(1.239), "$1.24");
    }
}
