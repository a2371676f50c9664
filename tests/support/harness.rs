//! What the integration tests need from outside Rust, set up by the tests themselves so that a
//! fresh clone passes `cargo test --release` with only Python 3 (+ venv) on the machine:
//!
//! - [`python()`]: a venv under cargo's `CARGO_TARGET_TMPDIR` holding `tests/py/requirements.txt`
//!   (Python deltalake + pyarrow, the independent reader; moto, the S3 server), created once and
//!   recreated when the requirements file changes;
//! - [`Moto`]: a moto S3 server on a free local port, killed on drop.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn manifest_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// cargo's scratch folder for integration tests (inside the target dir, shared by checkouts that
/// share a target dir; the venv is keyed by the requirements file's hash, not by the checkout).
fn target_tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

fn requirements() -> PathBuf {
    manifest_dir().join("tests/py/requirements.txt")
}

/// FNV-1a, 64 bits: stable across Rust releases (unlike `DefaultHasher`), enough to notice a
/// changed requirements file.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// The venv's interpreter, with tests/py/requirements.txt installed. The first caller (in any
/// thread, or in any process sharing the target dir) creates the venv; the others wait for it.
/// Panics with one line when Python 3 or its venv module is missing, or pip fails.
pub fn python() -> &'static Path {
    static PY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match PY.get_or_init(install_venv) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

/// An exclusive lock on `name` in the target's tmp dir, held until the file is dropped: one
/// venv installer at a time across test processes.
fn install_lock(name: &str) -> Result<std::fs::File, String> {
    std::fs::create_dir_all(target_tmp())
        .map_err(|e| format!("cannot create {}: {e}", target_tmp().display()))?;
    let lock_path = target_tmp().join(name);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    Ok(lock)
}

fn install_venv() -> Result<PathBuf, String> {
    let venv = target_tmp().join("pyenv");
    let py = venv.join("bin").join("python");
    let marker = venv.join(".lakehealth-requirements");
    let reqs = std::fs::read(requirements())
        .map_err(|e| format!("cannot read {}: {e}", requirements().display()))?;
    let want = format!("requirements.txt fnv1a64 {:016x}\n", fnv1a64(&reqs));
    let installed = || py.exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == want);
    if installed() {
        return Ok(py);
    }

    // One installer at a time across processes (cargo-nextest runs each test in its own
    // process). The OS drops the lock when its holder exits, so a killed installer leaves no
    // stale lock; its half-made venv has no marker and is rebuilt below.
    let lock = install_lock("pyenv.lock")?;
    if installed() {
        return Ok(py);
    }

    let need = format!(
        "these tests need Python 3 with venv (apt install python3 python3-venv); the harness installs deltalake, pyarrow and moto into {} itself",
        venv.display()
    );
    let _ = std::fs::remove_file(&marker);
    if venv.exists() {
        std::fs::remove_dir_all(&venv)
            .map_err(|e| format!("cannot remove the outdated {}: {e}", venv.display()))?;
    }
    match Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .stdin(Stdio::null())
        .output()
    {
        Err(e) => return Err(format!("{need} (running python3: {e})")),
        Ok(o) if !o.status.success() || !py.exists() => {
            let _ = std::fs::remove_dir_all(&venv);
            return Err(format!(
                "{need} (python3 -m venv failed: {})",
                last_line(&o.stderr)
            ));
        }
        Ok(_) => {}
    }
    eprintln!(
        "harness: installing tests/py/requirements.txt into {} (once; about a minute)",
        venv.display()
    );
    let o = Command::new(&py)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "-r",
        ])
        .arg(requirements())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{need} (running the venv's pip: {e})"))?;
    if !o.status.success() {
        return Err(format!(
            "pip could not install tests/py/requirements.txt into {} (network?): {}",
            venv.display(),
            last_line(&o.stderr)
        ));
    }
    let tmp_marker = venv.join(".lakehealth-requirements.tmp");
    std::fs::write(&tmp_marker, &want)
        .and_then(|_| std::fs::rename(&tmp_marker, &marker))
        .map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    drop(lock);
    Ok(py)
}

/// `python tests/py/<script>` with the venv's interpreter.
pub fn py_script(script: &str) -> Command {
    let mut c = Command::new(python());
    c.arg(manifest_dir().join("tests/py").join(script));
    c
}

/// A local port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// One HTTP/1.1 request without a body; returns the status code and the response body.
pub fn http(port: u16, method: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response: {resp:?}")))?;
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// A moto S3 server (`moto_server` from the venv) on 127.0.0.1, in memory, killed on drop.
pub struct Moto {
    pub port: u16,
    child: Child,
    log: PathBuf,
}

impl Moto {
    pub fn start() -> Moto {
        let bin = python().parent().unwrap().join("moto_server");
        let mut last = String::new();
        // A free port can be taken between our probe and moto's bind: try a few.
        for _ in 0..3 {
            let port = free_port();
            let log = target_tmp().join(format!("moto-{port}.log"));
            let out = File::create(&log).expect("moto log file");
            let child = Command::new(&bin)
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
            let mut m = Moto { port, child, log };
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if let Ok(Some(status)) = m.child.try_wait() {
                    last = format!("moto_server exited with {status}");
                    break;
                }
                match http(port, "GET", "/") {
                    Ok((200, _)) => return m,
                    Ok((code, body)) => last = format!("GET / answered {code}: {body}"),
                    Err(e) => last = e.to_string(),
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if let Ok(l) = std::fs::read_to_string(&m.log) {
                last.push_str(&format!("; log: {l}"));
            }
        }
        panic!("moto_server did not come up: {last}");
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The server's process id (a process-wide server is stopped by a watchdog, not by drop).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn create_bucket(&self, bucket: &str) {
        let (code, body) = http(self.port, "PUT", &format!("/{bucket}")).expect("PUT bucket");
        assert_eq!(code, 200, "creating bucket {bucket}: {body}");
    }

    /// Copies the local table at `dir` to `uri` (`s3://bucket/prefix`, the bucket created).
    pub async fn upload(
        &self,
        dir: &std::path::Path,
        uri: &str,
    ) -> lakehealth::engine::location::Location {
        use object_store::ObjectStoreExt;
        let loc = lakehealth::engine::location::Location::parse(uri).unwrap();
        let store = loc.open_store(&self.storage_options()).unwrap();
        for f in super::common::files_under(dir) {
            let rel = f
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let bytes = std::fs::read(&f).unwrap();
            store
                .put(&object_store::path::Path::from(rel.as_str()), bytes.into())
                .await
                .unwrap();
        }
        loc
    }

    /// The options delta-rs (lakehealth, via `-o KEY=VALUE`) and Python deltalake need for this
    /// server. Commits are `PUT` with `If-None-Match: *` (object_store's conditional put,
    /// `conditional_put=etag`, the default spelled out), which moto honours; no DynamoDB lock,
    /// and never `AWS_S3_ALLOW_UNSAFE_RENAME` (racing commits would overwrite each other).
    pub fn storage_options(&self) -> HashMap<String, String> {
        [
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("conditional_put", "etag".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// `-o KEY=VALUE` arguments for the lakehealth CLI.
    pub fn cli_args(&self) -> Vec<String> {
        let mut v: Vec<(String, String)> = self.storage_options().into_iter().collect();
        v.sort();
        v.into_iter()
            .flat_map(|(k, v)| ["-o".to_string(), format!("{k}={v}")])
            .collect()
    }

    /// The storage options as JSON, for the Python scripts.
    pub fn options_json(&self) -> String {
        serde_json::to_string(&self.storage_options()).unwrap()
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// The Ray venv's `bin/` folder, with tests/py/requirements-ray.txt installed (its own venv:
/// Ray is large and only the Ray tests need it). Created once, like [`python()`].
pub fn ray_venv_bin() -> &'static Path {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BIN.get_or_init(install_ray_venv) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn install_ray_venv() -> Result<PathBuf, String> {
    let reqs_path = manifest_dir().join("tests/py/requirements-ray.txt");
    let venv = target_tmp().join("rayenv");
    let bin = venv.join("bin");
    let marker = venv.join(".lakehealth-requirements");
    let reqs = std::fs::read(&reqs_path)
        .map_err(|e| format!("cannot read {}: {e}", reqs_path.display()))?;
    let want = format!("requirements-ray.txt fnv1a64 {:016x}\n", fnv1a64(&reqs));
    let installed =
        || bin.join("ray").exists() && std::fs::read_to_string(&marker).is_ok_and(|m| m == want);
    if installed() {
        return Ok(bin);
    }
    let lock = install_lock("rayenv.lock")?;
    if installed() {
        return Ok(bin);
    }
    let _ = std::fs::remove_file(&marker);
    if !bin.join("python").exists() {
        let o = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("the Ray tests need python3 with venv: {e}"))?;
        if !o.status.success() {
            return Err(format!("python3 -m venv failed: {}", last_line(&o.stderr)));
        }
    }
    eprintln!(
        "harness: installing tests/py/requirements-ray.txt into {} (once; a few minutes)",
        venv.display()
    );
    let o = Command::new(bin.join("python"))
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-input",
            "-r",
        ])
        .arg(&reqs_path)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("running the Ray venv's pip: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "pip could not install tests/py/requirements-ray.txt (network?): {}",
            last_line(&o.stderr)
        ));
    }
    std::fs::write(&marker, &want).map_err(|e| e.to_string())?;
    drop(lock);
    Ok(bin)
}

/// A local Ray head (`ray start --head --num-cpus 2`) on 127.0.0.1, started once per test
/// process and stopped when the process exits (a watchdog kills the head's process group).
/// Its nodes have a moto S3 server's endpoint and credentials in their environment (`AWS_*`),
/// as a cluster's nodes have their cloud credentials: workers read S3 tables with them.
pub struct RayHead {
    /// The dashboard (Jobs API) address.
    pub address: String,
    /// The S3 server the head's environment names (stopped by the same watchdog).
    pub moto: Moto,
}

/// The test process's Ray head; starts it on first use.
pub fn ray_head() -> &'static RayHead {
    static HEAD: OnceLock<Result<RayHead, String>> = OnceLock::new();
    match HEAD.get_or_init(start_ray_head) {
        Ok(h) => h,
        Err(e) => panic!("{e}"),
    }
}

/// What a node needs in its environment to reach `moto` (object_store reads `AWS_*`); not
/// the commit setting `conditional_put`: workers never commit.
fn moto_environment(moto: &Moto) -> Vec<(String, String)> {
    moto.storage_options()
        .into_iter()
        .filter(|(k, _)| k.starts_with("AWS_"))
        .collect()
}

fn start_ray_head() -> Result<RayHead, String> {
    use std::os::unix::process::CommandExt;
    let bin = ray_venv_bin();
    let dashboard = free_port();
    let gcs = free_port();
    let client = free_port();
    // Short: Ray's socket paths must fit in 107 bytes.
    let temp = std::env::temp_dir().join(format!("lh-ray-{}", std::process::id()));
    std::fs::create_dir_all(&temp).map_err(|e| e.to_string())?;
    let log = target_tmp().join(format!("ray-head-{dashboard}.log"));
    let out = File::create(&log).map_err(|e| e.to_string())?;
    // The job's `python driver.py` and the workers find the venv's interpreter first.
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let moto = Moto::start();
    let mut child = Command::new(bin.join("ray"))
        .args(["start", "--head", "--block", "--disable-usage-stats"])
        .args(["--num-cpus", "2", "--node-ip-address", "127.0.0.1"])
        .args(["--dashboard-host", "127.0.0.1"])
        .args(["--dashboard-port", &dashboard.to_string()])
        .args(["--port", &gcs.to_string()])
        .args(["--ray-client-server-port", &client.to_string()])
        .arg("--temp-dir")
        .arg(&temp)
        .env("PATH", path)
        .env("RAY_USAGE_STATS_ENABLED", "0")
        .envs(moto_environment(&moto))
        // Workers seal their records with the coordinator's key, given in the cluster's
        // environment as docs/guide.md says.
        .envs(installation_key().map(|k| ("LAKEHEALTH_KEY", k)))
        .stdin(Stdio::null())
        .stdout(out.try_clone().map_err(|e| e.to_string())?)
        .stderr(out)
        // Its own process group: the watchdog stops the head and everything it started.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start ray: {e}"))?;
    let pgid = child.id();
    // Stops the head and moto when this test process exits, however it exits.
    let script = format!(
        "while kill -0 {me} 2>/dev/null; do sleep 1; done; kill -TERM -{pgid} {moto} 2>/dev/null; sleep 5; kill -KILL -{pgid} {moto} 2>/dev/null; rm -rf '{temp}'",
        me = std::process::id(),
        moto = moto.pid(),
        temp = temp.display()
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start the Ray watchdog: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            let l = std::fs::read_to_string(&log).unwrap_or_default();
            return Err(format!(
                "ray start exited with {status}: {}",
                l.lines().rev().take(5).collect::<Vec<_>>().join(" | ")
            ));
        }
        match http(dashboard, "GET", "/api/jobs/") {
            Ok((200, _)) => {
                return Ok(RayHead {
                    address: format!("http://127.0.0.1:{dashboard}"),
                    moto,
                });
            }
            Ok((code, body)) => last = format!("GET /api/jobs/ answered {code}: {body}"),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Err(format!("the Ray head did not come up in 180 s: {last}"))
}

/// A PostgreSQL server on 127.0.0.1 for the Iceberg SQL catalog tests: Debian's binaries when
/// the machine has them, else those of the `pgserver` wheel, installed into the venv; a fresh
/// data folder, trust authentication, superuser `lh`; stopped on drop. PostgreSQL refuses to
/// run as root, so under root it runs as the `postgres` user (or `nobody`).
pub struct Postgres {
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

/// The folder with `initdb` and `postgres`.
fn pg_bin_dir() -> PathBuf {
    if let Ok(versions) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut dirs: Vec<PathBuf> = versions
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|b| b.join("initdb").exists() && b.join("postgres").exists())
            .collect();
        dirs.sort();
        if let Some(d) = dirs.pop() {
            return d;
        }
    }
    static WHEEL: OnceLock<PathBuf> = OnceLock::new();
    WHEEL
        .get_or_init(|| {
            let st = Command::new(python())
                .args(["-m", "pip", "install", "--quiet", "pgserver==0.1.4"])
                .status()
                .expect("pip");
            assert!(st.success(), "pip install pgserver failed");
            let o = Command::new(python())
                .args([
                    "-c",
                    "import os, pgserver; print(os.path.join(os.path.dirname(pgserver.__file__), 'pginstall', 'bin'))",
                ])
                .output()
                .expect("python");
            let bin = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
            // A copy under /tmp: a server run as another user than root cannot reach the venv
            // when the target dir is under /root.
            let copy = std::env::temp_dir().join("lakehealth-pgserver-0.1.4");
            if !copy.join("bin/postgres").exists() {
                let _ = std::fs::remove_dir_all(&copy);
                let st = Command::new("cp")
                    .arg("-a")
                    .arg(bin.parent().expect("pginstall"))
                    .arg(&copy)
                    .status()
                    .expect("cp");
                assert!(st.success(), "cannot copy pgserver's binaries to {}", copy.display());
            }
            copy.join("bin")
        })
        .clone()
}

/// The numeric id `id` prints for `args`.
fn id(args: &[&str]) -> Option<u32> {
    let o = Command::new("id").args(args).output().ok()?;
    String::from_utf8_lossy(&o.stdout).trim().parse().ok()
}

impl Postgres {
    pub fn start() -> Postgres {
        let bin = pg_bin_dir();
        // Under /tmp: the server's user must reach it (the target dir may be under /root).
        let dir = tempfile::tempdir().expect("postgres folder");
        let data = dir.path().join("data");
        // Under root: the server's own user, owning its folder.
        let user = (id(&["-u"]) == Some(0)).then(|| {
            ["postgres", "nobody"]
                .into_iter()
                .find(|u| id(&["-u", u]).is_some())
                .expect("a user other than root to run PostgreSQL")
        });
        if let Some(u) = user {
            let (uid, gid) = (id(&["-u", u]), id(&["-g", u]));
            std::os::unix::fs::chown(dir.path(), uid, gid).expect("chown the data folder");
        }
        // setpriv execs the program itself (no parent process left between us and the server).
        let run = |program: &Path| {
            let mut c = match user {
                Some(u) => {
                    let (uid, gid) = (id(&["-u", u]).unwrap_or(0), id(&["-g", u]).unwrap_or(0));
                    let mut c = Command::new("setpriv");
                    c.arg(format!("--reuid={uid}"))
                        .arg(format!("--regid={gid}"))
                        .args(["--clear-groups", "--"])
                        .arg(program);
                    c
                }
                None => Command::new(program),
            };
            c.stdin(Stdio::null());
            c
        };
        let o = run(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "lh", "--no-sync", "-E", "UTF8"])
            .output()
            .expect("initdb");
        assert!(
            o.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let port = free_port();
        let log = dir.path().join("server.log");
        let out = File::create(&log).expect("postgres log");
        if let Some(u) = user {
            let (uid, gid) = (id(&["-u", u]), id(&["-g", u]));
            std::os::unix::fs::chown(&log, uid, gid).expect("chown the log");
        }
        let child = run(&bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "fsync=off", "-k"])
            .arg(dir.path())
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .spawn()
            .expect("postgres");
        let mut pg = Postgres {
            port,
            child,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            if said.contains("ready to accept connections") {
                return pg;
            }
            if let Ok(Some(status)) = pg.child.try_wait() {
                panic!("postgres exited with {status}: {said}");
            }
            assert!(
                Instant::now() < deadline,
                "postgres did not come up: {said}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The catalog database, as SQLAlchemy (pyiceberg) and lakehealth both take it.
    pub fn uri(&self, password: &str) -> String {
        format!(
            "postgresql+psycopg2://lh:{password}@127.0.0.1:{}/postgres",
            self.port
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // A fast shutdown: the server stops its backends too (a SIGKILL would leave them).
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// The key this machine's lakehealth seals job records with (`$LAKEHEALTH_KEY`, else the data
/// dir's key file, created if need be), to hand to processes that do not share the data dir.
pub fn installation_key() -> Option<String> {
    if let Ok(k) = std::env::var("LAKEHEALTH_KEY") {
        return Some(k);
    }
    lakehealth::engine::sealed::keyring().ok()?;
    let file = lakehealth::engine::sealed::key_file()?;
    std::fs::read_to_string(file)
        .ok()
        .map(|k| k.trim().to_string())
}
