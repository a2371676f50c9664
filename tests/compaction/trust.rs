//! Trust by design: the records lakehealth keeps in a table folder are sealed under the
//! installation key, and a sweep deletes only outputs named for the job whose sealed ledger
//! lists them. A table's writer can write that folder, so each test plants what such a writer
//! could (an unsigned ledger, an altered one, a name of its own choosing) and shows that
//! nothing of it is deleted, beside a control the same run does delete.

use std::path::{Path, PathBuf};

use lakehealth::engine::sealed::RecordKind;

use crate::support::common::*;
use crate::support::sealed::write_sealed;

const JOB: &str = "0badc0de";

/// A data file's folder in the table (a partition's), relative to the table.
fn a_partition_folder(table: &Path) -> String {
    let mut files = Vec::new();
    walk(table, table, &mut files);
    let f = files
        .iter()
        .find(|f| f.ends_with(".parquet") && !f.starts_with('_'))
        .expect("a data file");
    Path::new(f)
        .parent()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// A file no commit references, at `rel`, with some bytes.
fn stray(table: &Path, rel: &str) -> PathBuf {
    let p = table.join(rel);
    std::fs::write(&p, b"a file no commit references").unwrap();
    p
}

/// The ledger's place for a dead job of another host.
fn ledger_rel() -> String {
    format!("_lakehealth/local-jobs/{JOB}.1@some-other-host.ledger")
}

/// Makes the ledger two days old: a foreign job that old is dead.
fn age(table: &Path) {
    std::fs::File::options()
        .write(true)
        .open(table.join(ledger_rel()))
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400))
        .unwrap();
}

fn compact_json(table: &Path) -> serde_json::Value {
    let o = lakehealth(&["compact", table.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsigned_or_altered_ledger_is_refused_whole_and_nothing_it_names_is_deleted() {
    let (d, _, rows) = seeded(10).await;
    let folder = a_partition_folder(d.path());
    // Named as the job's output, in a partition folder, referenced by no commit: a sealed
    // ledger of that dead job would have it deleted (the control below).
    let name = format!("{folder}/part-00000-lakehealth-{JOB}-x-c000.snappy.parquet");
    let victim = stray(d.path(), &name);
    std::fs::create_dir_all(d.path().join("_lakehealth/local-jobs")).unwrap();

    // 1. Unsigned, as a writer (or an earlier version) writes it.
    std::fs::write(
        d.path().join(ledger_rel()),
        serde_json::json!([name.clone()]).to_string(),
    )
    .unwrap();
    age(d.path());
    let s = compact_json(d.path());
    let refused = strings(&s["swept"]["refused"]);
    assert_eq!(refused.len(), 1, "{s}");
    assert!(
        refused[0].contains("not sealed by lakehealth"),
        "{refused:?}"
    );
    assert!(strings(&s["swept"]["deleted"]).is_empty(), "{s}");
    assert!(
        victim.exists(),
        "a file an unsigned ledger names was deleted"
    );
    assert!(d.path().join(ledger_rel()).exists(), "left for a person");

    // 2. Sealed for another file, then altered to name this one.
    write_sealed(
        d.path(),
        &ledger_rel(),
        RecordKind::OutputLedger,
        &serde_json::json!({"job": JOB, "outputs": [format!("{folder}/part-00000-lakehealth-{JOB}-y-c000.snappy.parquet")]}),
    );
    let text = std::fs::read_to_string(d.path().join(ledger_rel())).unwrap();
    std::fs::write(
        d.path().join(ledger_rel()),
        text.replace(&format!("{JOB}-y-c000"), &format!("{JOB}-x-c000")),
    )
    .unwrap();
    age(d.path());
    let s = compact_json(d.path());
    let refused = strings(&s["swept"]["refused"]);
    assert!(
        refused.iter().any(|r| r.contains("seal does not match")),
        "{refused:?}"
    );
    assert!(
        victim.exists(),
        "a file an altered ledger names was deleted"
    );

    // 3. The control: the same ledger as lakehealth seals it is acted on.
    write_sealed(
        d.path(),
        &ledger_rel(),
        RecordKind::OutputLedger,
        &serde_json::json!({"job": JOB, "outputs": [name.clone()]}),
    );
    age(d.path());
    let s = compact_json(d.path());
    assert_eq!(strings(&s["swept"]["deleted"]), vec![name], "{s}");
    assert!(!victim.exists());
    assert!(!d.path().join(ledger_rel()).exists(), "settled");
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_ledger_never_deletes_a_name_that_does_not_carry_its_job_and_every_output_carries_one()
 {
    let (d, _, rows) = seeded(10).await;
    let folder = a_partition_folder(d.path());
    // A writer's own staging file (its name, no job id), and another job's output.
    let writers = format!("{folder}/part-00000-6b1c2d3e-c000.snappy.parquet");
    let others = format!("{folder}/part-00000-lakehealth-{JOB}0-x-c000.snappy.parquet");
    let own = format!("{folder}/part-00001-lakehealth-{JOB}-x-c000.snappy.parquet");
    let (a, b, c) = (
        stray(d.path(), &writers),
        stray(d.path(), &others),
        stray(d.path(), &own),
    );
    write_sealed(
        d.path(),
        &ledger_rel(),
        RecordKind::OutputLedger,
        &serde_json::json!({"job": JOB, "outputs": [writers, others, own]}),
    );
    age(d.path());
    let s = compact_json(d.path());
    assert_eq!(strings(&s["swept"]["refused"]).len(), 2, "{s}");
    assert_eq!(strings(&s["swept"]["deleted"]), vec![own], "{s}");
    assert!(a.exists(), "a writer's file was deleted");
    assert!(b.exists(), "another job's output was deleted");
    assert!(!c.exists());
    // This run's own outputs carry its job's id, as the sweep requires: one job, one id.
    let optimize_adds: Vec<String> = commits_from(d.path(), 0)
        .into_iter()
        .filter(|c| {
            c.iter()
                .any(|a| a["commitInfo"]["operation"].as_str() == Some("OPTIMIZE"))
        })
        .flatten()
        .filter_map(|a| {
            a.get("add")
                .and_then(|x| x["path"].as_str())
                .map(str::to_string)
        })
        .collect();
    assert!(
        !optimize_adds.is_empty(),
        "the compaction committed outputs"
    );
    let jobs: std::collections::BTreeSet<String> = optimize_adds
        .iter()
        .map(|p| {
            let (_, after) = p
                .split_once("-lakehealth-")
                .unwrap_or_else(|| panic!("{p} does not carry a job id"));
            after.split('-').next().unwrap().to_string()
        })
        .collect();
    assert_eq!(jobs.len(), 1, "{optimize_adds:?}");
    assert_exact(d.path(), rows);
}

/// `compact TABLE --json` as a run that may be refused (a link seen by the check at its start).
fn try_compact_json(table: &Path) -> Option<serde_json::Value> {
    let o = lakehealth(&["compact", table.to_str().unwrap(), "--json"]);
    if !o.status.success() {
        assert!(
            stderr(&o).contains("symbolic link"),
            "refused for another reason: {}",
            stderr(&o)
        );
        return None;
    }
    Some(serde_json::from_slice(&o.stdout).unwrap())
}

/// A real lakehealth job's outputs, live in `table` (compacted once): the job's id and their
/// paths (decoded, relative to the table).
fn compacted_outputs(table: &Path) -> (String, Vec<String>) {
    compact_json(table);
    let adds: Vec<String> = commits_from(table, 0)
        .into_iter()
        .filter(|c| {
            c.iter()
                .any(|a| a["commitInfo"]["operation"].as_str() == Some("OPTIMIZE"))
        })
        .flatten()
        .filter_map(|a| a.get("add").and_then(|x| x["path"].as_str()).map(decoded))
        .collect();
    assert!(!adds.is_empty(), "the compaction committed outputs");
    let job = adds[0]
        .split_once("-lakehealth-")
        .and_then(|(_, after)| after.split('-').next())
        .expect("a job id in the output's name")
        .to_string();
    (job, adds)
}

/// Each output as it would be reached through `link` (a folder name in another table).
fn through(link: &str, outputs: &[String]) -> Vec<String> {
    outputs
        .iter()
        .map(|p| format!("{link}/{}", p.rsplit('/').next().unwrap()))
        .collect()
}

/// The ledger of dead job `job` at its place, listing `outputs`, sealed as lakehealth seals it
/// (what a holder of the key, or a copy of another table's genuine ledger, can plant).
fn plant_sealed_ledger(table: &Path, job: &str, outputs: &[String]) -> String {
    let rel = format!("_lakehealth/local-jobs/{job}.1@some-other-host.ledger");
    write_sealed(
        table,
        &rel,
        RecordKind::OutputLedger,
        &serde_json::json!({"job": job, "outputs": outputs}),
    );
    std::fs::File::options()
        .write(true)
        .open(table.join(&rel))
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400))
        .unwrap();
    rel
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_ledger_naming_a_path_through_a_link_into_a_nested_table_deletes_nothing_there() {
    let (d, _, rows) = seeded(10).await;
    // A table nested in this one's folder, holding a real job's live outputs.
    let (n, _, nested_rows) = seeded(10).await;
    let (job, outputs) = compacted_outputs(n.path());
    let own_folder = a_partition_folder(d.path());
    let nested = d.path().join("nested");
    std::fs::rename(n.path(), &nested).unwrap();
    let part = Path::new(&outputs[0]).parent().unwrap().to_path_buf();
    // A link inside the table, into the nested table's partition: it leaves no folder, so
    // the check for links leading out of the table does not see it.
    std::os::unix::fs::symlink(nested.join(&part), d.path().join("lnk")).unwrap();
    // The control: an output of the job in this table's own folder, which the sweep deletes.
    let own = format!("{own_folder}/part-00009-lakehealth-{job}-x-c000.snappy.parquet");
    let control = stray(d.path(), &own);
    let mut named = through("lnk", &outputs);
    named.push(own.clone());
    let ledger = plant_sealed_ledger(d.path(), &job, &named);

    let s = compact_json(d.path());
    assert_eq!(strings(&s["swept"]["deleted"]), vec![own], "{s}");
    assert!(!control.exists());
    let refused = strings(&s["swept"]["refused"]);
    assert!(
        refused.iter().any(|r| r.contains("symbolic link")),
        "{refused:?}"
    );
    for o in &outputs {
        assert!(
            nested.join(o).exists(),
            "{o} of the nested table was deleted through a link"
        );
    }
    assert!(d.path().join(&ledger).exists(), "left for a person");
    assert_exact(&nested, nested_rows);
    assert_exact(d.path(), rows);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_to_a_sibling_table_that_comes_and_goes_every_few_milliseconds_never_lets_a_sweep_delete_its_files()
 {
    let (d, _, _) = seeded(10).await;
    let (sib, _, sibling_rows) = seeded(10).await;
    let (job, outputs) = compacted_outputs(sib.path());
    let part = sib.path().join(Path::new(&outputs[0]).parent().unwrap());
    let link = d.path().join("lnk");
    let named = through("lnk", &outputs);
    // The writer of this table flips a link into the sibling's partition, as fast as it can.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let (stop, link, part) = (stop.clone(), link.clone(), part.clone());
        std::thread::spawn(move || {
            let mut flips = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::os::unix::fs::symlink(&part, &link);
                std::thread::sleep(std::time::Duration::from_millis(2));
                let _ = std::fs::remove_file(&link);
                std::thread::sleep(std::time::Duration::from_millis(2));
                flips += 1;
            }
            flips
        })
    };
    let (mut runs, mut attempts, mut refused_links) = (0, 0, 0);
    while runs < 30 && attempts < 200 {
        attempts += 1;
        plant_sealed_ledger(d.path(), &job, &named);
        let Some(s) = try_compact_json(d.path()) else {
            continue;
        };
        runs += 1;
        refused_links += strings(&s["swept"]["refused"])
            .iter()
            .filter(|r| r.contains("symbolic link"))
            .count();
        assert!(
            strings(&s["swept"]["deleted"]).is_empty(),
            "run {runs}: {s}"
        );
        for o in &outputs {
            assert!(
                sib.path().join(o).exists(),
                "run {runs}: the sibling's {o} was deleted through a link"
            );
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert_eq!(runs, 30, "{attempts} attempts");
    assert!(flips > 30, "the link flipped {flips} times");
    // The race was run: some sweeps met the link at the moment of their delete.
    assert!(refused_links > 0, "no sweep met the link in {runs} runs");
    assert_exact(sib.path(), sibling_rows);
}
