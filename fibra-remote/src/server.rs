//! [`NatsServer`]: a real `nats-server` child process on a free loopback
//! port, for tests, examples and benchmarks.

use std::io::{self, BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The nats-server release `NatsServer` installs when none is found.
const NATS_SERVER_VERSION: &str = "v2.15.2";

/// Installs nats-server into `$HOME/go/bin` with `go install` from the Go
/// module proxy (once per process; concurrent processes serialise on a
/// lock file, and the second finds the first's binary).
fn install() -> Result<PathBuf, String> {
    static INSTALLED: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let home = std::env::var_os("HOME").ok_or("no $HOME to install into")?;
            let dir = PathBuf::from(home).join("go").join("bin");
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("creating {}: {e}", dir.display()))?;
            let bin = dir.join("nats-server");
            let lock = std::fs::File::create(dir.join(".nats-server-install.lock"))
                .map_err(|e| format!("lock file: {e}"))?;
            lock.lock().map_err(|e| format!("lock file: {e}"))?;
            if bin.is_file() {
                return Ok(bin);
            }
            let status = Command::new("go")
                .args([
                    "install",
                    &format!("github.com/nats-io/nats-server/v2@{NATS_SERVER_VERSION}"),
                ])
                .env("GOBIN", &dir)
                .stdout(Stdio::null())
                .status()
                .map_err(|e| format!("installing it with `go install` failed to start: {e}"))?;
            match status.success() && bin.is_file() {
                true => Ok(bin),
                false => Err(format!(
                    "`go install` of nats-server {NATS_SERVER_VERSION} failed ({status})"
                )),
            }
        })
        .clone()
}

/// A `nats-server` process listening on `127.0.0.1`, killed when dropped.
///
/// The binary is found in `$NATS_SERVER_BIN`, then on `PATH`, then in
/// `$HOME/go/bin`; if it is nowhere, it is installed there with `go install`
/// from the Go module proxy (what `scripts/nats-server.sh install` does).
///
/// ```
/// let server = fibra_remote::NatsServer::start().unwrap();
/// fibra::block_on(async {
///     let node = fibra_remote::Node::connect(server.url()).await.unwrap();
///     assert!(node.is_connected());
/// });
/// ```
pub struct NatsServer {
    child: Option<Child>,
    bin: PathBuf,
    port: u16,
    url: String,
    args: Vec<String>,
}

impl NatsServer {
    /// The `nats-server` binary, or an error that says how to install it.
    ///
    /// ```
    /// match fibra_remote::NatsServer::binary() {
    ///     Ok(path) => println!("nats-server at {}", path.display()),
    ///     Err(e) => println!("{e}"), // says how to install it
    /// }
    /// ```
    pub fn binary() -> io::Result<PathBuf> {
        let missing = |what: &str| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "nats-server not found ({what}): run `scripts/nats-server.sh install` \
                     (it installs nats-server into $HOME/go/bin), or set NATS_SERVER_BIN"
                ),
            )
        };
        if let Some(p) = std::env::var_os("NATS_SERVER_BIN") {
            let p = PathBuf::from(p);
            return match p.is_file() {
                true => Ok(p),
                false => Err(missing(&format!(
                    "NATS_SERVER_BIN={} is no file",
                    p.display()
                ))),
            };
        }
        let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        if let Some(home) = std::env::var_os("HOME") {
            dirs.push(PathBuf::from(home).join("go").join("bin"));
        }
        let found = dirs
            .into_iter()
            .map(|d| d.join("nats-server"))
            .find(|p| p.is_file());
        match found {
            Some(p) => Ok(p),
            None => {
                install().map_err(|e| missing(&format!("not on PATH nor in $HOME/go/bin, {e}")))
            }
        }
    }

    /// Starts a server on a free loopback port and waits until it accepts
    /// connections.
    ///
    /// ```
    /// let server = fibra_remote::NatsServer::start().unwrap(); // killed when dropped
    /// fibra::block_on(async {
    ///     let node = fibra_remote::Node::connect(server.url()).await.unwrap();
    ///     assert!(node.is_connected());
    /// });
    /// ```
    pub fn start() -> io::Result<NatsServer> {
        Self::start_with(&[])
    }

    /// Starts a server with extra command-line arguments (for example
    /// `["-c", "nats.conf"]`: settings such as `max_payload` exist only in a
    /// configuration file).
    ///
    /// ```
    /// let conf = std::env::temp_dir().join(format!("fibra-doc-{}.conf", std::process::id()));
    /// std::fs::write(&conf, "max_payload: 65536\n").unwrap();
    /// let server = fibra_remote::NatsServer::start_with(&["-c", conf.to_str().unwrap()]).unwrap();
    /// fibra::block_on(async {
    ///     let node = fibra_remote::Node::connect(server.url()).await.unwrap();
    ///     assert_eq!(node.max_payload(), 65536);
    /// });
    /// std::fs::remove_file(conf).unwrap();
    /// ```
    pub fn start_with(args: &[&str]) -> io::Result<NatsServer> {
        let mut server = NatsServer {
            child: None,
            bin: Self::binary()?,
            port: 0,
            url: String::new(),
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        // A port free when we looked may be taken by another test's server
        // before ours binds it: then ours exits, and we try another.
        let mut last = None;
        for _ in 0..5 {
            server.port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            server.url = format!("nats://127.0.0.1:{}", server.port);
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.expect("tried"))
    }

    /// Runs the binary on `self.port` and waits until *it* (not another
    /// process on that port) answers: the server's `INFO` line carries the
    /// unique name given here.
    fn spawn(&mut self) -> io::Result<()> {
        static STARTS: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "fibra-remote-{}-{}",
            std::process::id(),
            STARTS.fetch_add(1, Ordering::Relaxed)
        );
        let child = Command::new(&self.bin)
            .args(["--addr", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--name", &name])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot run {}: {e}", self.bin.display()))
            })?;
        let child = self.child.insert(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "nats-server exited at start ({status}); port {} taken?",
                        self.port
                    ),
                ));
            }
            if server_name_is(self.port, &name) {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.stop();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nats-server did not listen within 10 s",
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The client URL, `nats://127.0.0.1:PORT`.
    ///
    /// ```
    /// let server = fibra_remote::NatsServer::start().unwrap();
    /// assert!(server.url().starts_with("nats://127.0.0.1:"));
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port it listens on.
    ///
    /// ```
    /// let server = fibra_remote::NatsServer::start().unwrap();
    /// assert!(server.url().ends_with(&server.port().to_string()));
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (as a crash would: no goodbye to clients).
    ///
    /// ```
    /// let mut server = fibra_remote::NatsServer::start().unwrap();
    /// server.stop(); // nodes connected to it lose their connection
    /// ```
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts a new one on the same port.
    ///
    /// ```
    /// let mut server = fibra_remote::NatsServer::start().unwrap();
    /// server.stop();
    /// server.restart().unwrap(); // same port: nodes reconnect
    /// ```
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
        self.spawn()
    }
}

/// Whether the server listening on `port` introduces itself as `name`.
fn server_name_is(port: u16, name: &str) -> bool {
    let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut info = String::new();
    let _ = BufReader::new(stream).read_line(&mut info);
    info.starts_with("INFO ") && info.contains(&format!("\"server_name\":\"{name}\""))
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}
