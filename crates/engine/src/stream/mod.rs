//! A streaming writer that commits like Spark Structured Streaming's Delta sink
//! (`STREAMING UPDATE` + a `txn` action per micro-batch), used by the demo and `lakehealth stream`.

pub mod batch;
pub mod writer;
