//! [`NatsServer`]: a real `nats-server` child process on a free loopback
//! port, for tests, examples and benchmarks.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `nats-server` process listening on `127.0.0.1`, killed when dropped.
///
/// The binary is found in `$NATS_SERVER_BIN`, then on `PATH`, then in
/// `$HOME/go/bin`; `scripts/nats-server.sh install` puts it there.
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
        dirs.into_iter()
            .map(|d| d.join("nats-server"))
            .find(|p| p.is_file())
            .ok_or_else(|| missing("looked on PATH and in $HOME/go/bin"))
    }

    /// Starts a server on a free loopback port and waits until it accepts
    /// connections.
    pub fn start() -> io::Result<NatsServer> {
        Self::start_with(&[])
    }

    /// Starts a server with extra command-line arguments (for example
    /// `["--max_payload", "4096"]`).
    pub fn start_with(args: &[&str]) -> io::Result<NatsServer> {
        let bin = Self::binary()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut server = NatsServer {
            child: None,
            bin,
            port,
            url: format!("nats://127.0.0.1:{port}"),
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        server.spawn()?;
        Ok(server)
    }

    fn spawn(&mut self) -> io::Result<()> {
        let child = Command::new(&self.bin)
            .args(["--addr", "127.0.0.1", "--port", &self.port.to_string()])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot run {}: {e}", self.bin.display()))
            })?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(io::Error::other(format!(
                    "nats-server exited at start ({status}); is port {} free?",
                    self.port
                )));
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nats-server did not listen within 10 s",
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// The client URL, `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (as a crash would: no goodbye to clients).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts a new one on the same port.
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
        self.spawn()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
    }
}
