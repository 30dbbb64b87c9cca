//! A throwaway PostgreSQL server for a test binary that was given no server
//! URL: a fresh data directory in a temporary directory, listening on loopback
//! at a free port, started once per test binary on first use and stopped (its
//! directory removed) when the test process exits, however it exits.
//!
//! The server programs (`initdb`, `postgres`, `pg_isready`) are found on PATH
//! or in the usual install directories. As root, they run as the `postgres`
//! user (or a system user made for the purpose), since initdb refuses root.
//!
//! The stop does not rely on destructors (statics have none): the server runs
//! under a small `sh` that waits on a pipe whose write end only this process
//! holds. When the process ends, the pipe closes, and the shell stops the
//! server and removes the directory.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const INSTALL_HINT: &str = "install PostgreSQL's server programs (on Debian/Ubuntu \
`apt-get install postgresql`, on Fedora `dnf install postgresql-server`, on macOS \
`brew install postgresql`), or point STATEGRAPH_TEST_PG_URL at a server of yours";

/// A running throwaway server. Kept in a static, never dropped: its pipe
/// closes when the process exits.
struct Server {
    url: String,
    _watchdog: Child,
    _stop_when_closed: ChildStdin,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();

/// The URL of this test binary's throwaway server, started on first use.
/// Panics (the test fails, it is never skipped) when no server can be started.
pub fn url() -> String {
    match SERVER.get_or_init(start) {
        Ok(server) => server.url.clone(),
        Err(why) => panic!("no PostgreSQL server for the tests: {why}"),
    }
}

fn start() -> Result<Server, String> {
    let bin = bin_dir().ok_or_else(|| {
        format!("no STATEGRAPH_TEST_PG_URL, and PostgreSQL's initdb/postgres are not on PATH nor in /usr/lib/postgresql/*/bin; {INSTALL_HINT}")
    })?;
    let user = server_user()?;
    let mut last = String::new();
    // A port found free may be taken before the server binds it: try again.
    for _ in 0..5 {
        match start_once(&bin, user.as_deref()) {
            Ok(server) => return Ok(server),
            Err(why) => last = why,
        }
    }
    Err(last)
}

fn start_once(bin: &Path, user: Option<&str>) -> Result<Server, String> {
    let dir = std::env::temp_dir().join(format!(
        "stategraph-pg-test-{}-{:08x}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    if let Some(user) = user {
        let (uid, gid) = (id_of(user, "-u")?, id_of(user, "-g")?);
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
            .map_err(|e| format!("cannot give {} to {user}: {e}", dir.display()))?;
    }
    let data = dir.join("data");
    // The programs run from the directory, which the server's user can enter
    // (from the caller's directory they warn "could not change directory").
    let out = as_user(user, &bin.join("initdb"))
        .args([
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ])
        .arg("-D")
        .arg(&data)
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("cannot run initdb: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let port = free_port()?;
    let log = dir.join("server.log");
    // `sh` starts the server, waits until its stdin closes (this process
    // ended), then stops the server (fast shutdown) and removes the directory.
    let script = r#"dir=$1; shift
"$@" >"$dir/server.log" 2>&1 &
server=$!
read _
kill -INT "$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null)" 2>/dev/null || kill -INT "$server"
wait "$server"
rm -rf "$dir""#;
    let postgres = bin.join("postgres");
    let mut server_cmd: Vec<String> = Vec::new();
    if let Some(user) = user {
        server_cmd.extend(["runuser".into(), "-u".into(), user.into(), "--".into()]);
    }
    server_cmd.push(postgres.display().to_string());
    server_cmd.extend(
        [
            "-D",
            &data.display().to_string(),
            "-p",
            &port.to_string(),
            "-k",
            &dir.display().to_string(),
            // Durability is off: the server lives for one test binary.
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "max_connections=300",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]
        .map(String::from),
    );
    let mut watchdog = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg("sh")
        .arg(&dir)
        .args(&server_cmd)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start sh for the server: {e}"))?;
    let Some(stdin) = watchdog.stdin.take() else {
        return Err("the server's watchdog has no stdin".into());
    };
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-t", "1"])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run pg_isready: {e}"))?;
        if ready.success() {
            eprintln!(
                "graph-postgres tests: a throwaway PostgreSQL on {url} (in {})",
                dir.display()
            );
            return Ok(Server {
                url,
                _watchdog: watchdog,
                _stop_when_closed: stdin,
            });
        }
        if watchdog.try_wait().ok().flatten().is_some() || Instant::now() > deadline {
            let mut text = String::new();
            if let Ok(mut f) = std::fs::File::open(&log) {
                let _ = f.read_to_string(&mut text);
            }
            // Closing the pipe stops what started and removes the directory.
            drop(stdin);
            let _ = watchdog.wait();
            return Err(format!(
                "PostgreSQL did not start on port {port}: {}",
                text.trim()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The directory holding `initdb` and `postgres`: on PATH, or where Debian,
/// RHEL and source builds install them (the newest version first).
// This file is compiled by crates on editions 2021 and 2024: a let chain, which
// clippy asks for on 2024, does not parse on 2021.
#[allow(clippy::collapsible_if)]
fn bin_dir() -> Option<PathBuf> {
    let has_all = |dir: &Path| {
        ["initdb", "postgres", "pg_isready"]
            .iter()
            .all(|p| dir.join(p).is_file())
    };
    if let Some(path) = std::env::var_os("PATH") {
        if let Some(dir) = std::env::split_paths(&path).find(|d| has_all(d)) {
            return Some(dir);
        }
    }
    let mut found: Vec<(Vec<u32>, PathBuf)> = Vec::new();
    for (root, prefix) in [("/usr/lib/postgresql", ""), ("/usr", "pgsql-")] {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(version) = name.strip_prefix(prefix) else {
                continue;
            };
            let key: Vec<u32> = version.split('.').map_while(|p| p.parse().ok()).collect();
            let dir = entry.path().join("bin");
            if !key.is_empty() && has_all(&dir) {
                found.push((key, dir));
            }
        }
    }
    found.sort();
    found
        .pop()
        .map(|(_, dir)| dir)
        .or_else(|| Some(PathBuf::from("/usr/local/pgsql/bin")).filter(|d| has_all(d)))
}

/// As root, the user the server runs as (initdb refuses root): `postgres`,
/// or a system user made for the purpose. `None` otherwise.
fn server_user() -> Result<Option<String>, String> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| format!("cannot run id: {e}"))?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Ok(None);
    }
    for user in ["postgres", "stategraph-pg"] {
        if id_of(user, "-u").is_ok() {
            return Ok(Some(user.to_owned()));
        }
    }
    let made = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "stategraph-pg",
        ])
        .status()
        .map_err(|e| {
            format!("running as root, and no `postgres` user to run the server as: {e}")
        })?;
    if !made.success() {
        return Err(
            "running as root, and no `postgres` user to run the server as (useradd failed)".into(),
        );
    }
    Ok(Some("stategraph-pg".to_owned()))
}

fn id_of(user: &str, flag: &str) -> Result<u32, String> {
    let out = Command::new("id")
        .args([flag, user])
        .output()
        .map_err(|e| format!("cannot run id: {e}"))?;
    if !out.status.success() {
        return Err(format!("no user `{user}`"));
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("id {flag} {user}: {e}"))
}

fn as_user(user: Option<&str>, program: &Path) -> Command {
    match user {
        Some(user) => {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", user, "--"]).arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port on loopback: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no free port on loopback: {e}"))
}
