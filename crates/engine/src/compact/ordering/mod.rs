//! Orders a compaction can write its rows in, beside bin-packing: z-order keys (`zorder`).
pub mod zorder;
