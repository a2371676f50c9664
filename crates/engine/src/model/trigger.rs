//! Who started a lakehealth compaction. Its commits record it (`lakehealth.trigger` in
//! commitInfo), so write amplification counts the janitor's rewrites of what was streamed in
//! apart from jobs a user ran by hand.

use serde::Serialize;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// `compact`, `purge`, the TUI's preview, a pickup: a user asked for this job.
    #[default]
    Manual,
    /// The janitor decided it (`watch`, the TUI's janitor).
    Janitor,
    /// The janitor decided it to re-cluster partitions whose files overlap past its policy's
    /// `max_depth`: write amplification counts its bytes apart from the small-file merges'.
    #[serde(rename = "janitor-recluster")]
    JanitorRecluster,
}

impl Trigger {
    /// The commitInfo key it is recorded under.
    pub const KEY: &'static str = "lakehealth.trigger";

    pub fn name(self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            Trigger::Janitor => "janitor",
            Trigger::JanitorRecluster => "janitor-recluster",
        }
    }

    /// The trigger a commit recorded; None for a value no lakehealth wrote.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "manual" => Some(Trigger::Manual),
            "janitor" => Some(Trigger::Janitor),
            "janitor-recluster" => Some(Trigger::JanitorRecluster),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_trigger_reads_back_from_its_name_and_nothing_else_does() {
        for t in [Trigger::Manual, Trigger::Janitor, Trigger::JanitorRecluster] {
            assert_eq!(Trigger::parse(t.name()), Some(t));
        }
        assert_eq!(Trigger::parse("Janitor"), None);
        assert_eq!(Trigger::parse(""), None);
    }
}
