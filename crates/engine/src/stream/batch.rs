//! The sensor micro-batches the demo and `lakehealth stream` append. A batch is a pure function
//! of (query id, batch id), so a restarted writer that replays a batch writes the same rows.

use std::sync::Arc;

use arrow::array::{
    Float64Array, Int32Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

pub const PARTITION_COLUMN: &str = "ingestion_date";

/// Arrow schema of the sensor table (partition column last, as Delta writers expect).
pub fn sensor_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("event_id", DataType::Utf8, false),
        Field::new("sensor_id", DataType::Int32, false),
        Field::new(
            "event_time",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        Field::new("temperature", DataType::Float64, false),
        Field::new("reading", DataType::Int64, false),
        Field::new(PARTITION_COLUMN, DataType::Utf8, false),
    ]))
}

/// splitmix64: tiny, fast, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// FNV-1a, for seeding from a query id.
pub fn seed_of(s: &str, n: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes().chain(n.to_le_bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// Rows of one micro-batch. `event_id` = "<query>:<batch>:<row>" is unique across batches and
/// queries; `reading` is an integer so checksums are exact.
pub fn sensor_batch(
    query_id: &str,
    batch_id: i64,
    rows: usize,
    date: &str,
    event_time_us: i64,
) -> Result<RecordBatch, arrow::error::ArrowError> {
    let mut rng = Rng::new(seed_of(query_id, batch_id as u64));
    let ids: Vec<String> = (0..rows)
        .map(|r| format!("{query_id}:{batch_id}:{r}"))
        .collect();
    let sensors: Vec<i32> = (0..rows).map(|_| rng.below(500) as i32).collect();
    let times: Vec<i64> = (0..rows).map(|r| event_time_us + r as i64).collect();
    let temps: Vec<f64> = (0..rows)
        .map(|_| 15.0 + (rng.below(20_000) as f64) / 1000.0)
        .collect();
    let readings: Vec<i64> = (0..rows).map(|_| rng.below(1_000_000) as i64).collect();
    let dates = vec![date; rows];
    RecordBatch::try_new(
        sensor_schema(),
        vec![
            Arc::new(StringArray::from(ids)),
            Arc::new(Int32Array::from(sensors)),
            Arc::new(TimestampMicrosecondArray::from(times).with_timezone("UTC")),
            Arc::new(Float64Array::from(temps)),
            Arc::new(Int64Array::from(readings)),
            Arc::new(StringArray::from(dates)),
        ],
    )
}

/// Sum of `reading`, the checksum tests compare.
pub fn reading_sum(batch: &RecordBatch) -> i64 {
    batch
        .column(4)
        .as_any()
        .downcast_ref::<Int64Array>()
        .map(|a| a.values().iter().sum())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_deterministic_and_unique() {
        let a = sensor_batch("q", 7, 100, "2026-11-30", 0).unwrap();
        let b = sensor_batch("q", 7, 100, "2026-11-30", 0).unwrap();
        let c = sensor_batch("q", 8, 100, "2026-11-30", 0).unwrap();
        assert_eq!(a, b);
        assert_ne!(reading_sum(&a), reading_sum(&c));
        assert_eq!(a.num_rows(), 100);
        let ids = a.column(0).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(ids.value(3), "q:7:3");
    }
}
