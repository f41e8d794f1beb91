//! Socket addresses from names without blocking a worker: the
//! [`ToSocketAddrs`] that `bind` and `connect` take, and [`lookup_host`].
//!
//! An address written as one (`"127.0.0.1:80"`, a `SocketAddr`, an
//! `(IpAddr, u16)`) is parsed where it is given; a host name
//! (`"localhost:80"`, `("example.com", 443)`) is looked up by the system
//! resolver (`getaddrinfo`, which blocks for as long as the lookup takes)
//! on the runtime's blocking pool, while the calling task waits like any
//! other.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// What an address needs before a socket can use it (public in a private
/// module: it appears in the sealed trait, and nowhere outside the crate).
#[derive(Debug)]
pub enum Lookup {
    /// Written as addresses: nothing to look up.
    Done(Vec<SocketAddr>),
    /// A `host:port` string with a host name.
    HostPort(String),
    /// A host name and a port.
    Host(String, u16),
}

impl Lookup {
    /// The addresses: parsed already, or looked up on the blocking pool
    /// (on this thread if it is no fibra worker; sockets are made on
    /// workers, so that happens only for [`lookup_host`] called elsewhere).
    pub(super) async fn resolve(self) -> io::Result<Vec<SocketAddr>> {
        match self {
            Lookup::Done(addrs) => Ok(addrs),
            lookup if crate::rt::on_worker() => crate::spawn_blocking(move || lookup.blocking())
                .await
                .map_err(|e| io::Error::other(format!("name lookup failed: {e}")))?,
            lookup => lookup.blocking(),
        }
    }

    /// Looks the name up with the system resolver, here.
    fn blocking(self) -> io::Result<Vec<SocketAddr>> {
        use std::net::ToSocketAddrs as _;
        #[cfg(test)]
        tests::record_lookup(&self);
        match self {
            Lookup::Done(addrs) => Ok(addrs),
            Lookup::HostPort(s) => s.as_str().to_socket_addrs().map(Iterator::collect),
            Lookup::Host(host, port) => (host.as_str(), port)
                .to_socket_addrs()
                .map(Iterator::collect),
        }
    }
}

mod sealed {
    /// Only this crate implements [`ToSocketAddrs`](super::ToSocketAddrs).
    pub trait Sealed {
        /// The addresses, or the name to look up.
        fn lookup(&self) -> super::Lookup;
    }
}

/// Something that names one or more socket addresses: what
/// [`TcpListener::bind`](super::TcpListener::bind),
/// [`TcpStream::connect`](super::TcpStream::connect),
/// [`UdpSocket::bind`](super::UdpSocket::bind),
/// [`UdpSocket::connect`](super::UdpSocket::connect) and [`lookup_host`]
/// take.
///
/// Implemented for the standard library's address types (`SocketAddr`,
/// `SocketAddrV4`, `SocketAddrV6`, `(IpAddr, u16)`, `(Ipv4Addr, u16)`,
/// `(Ipv6Addr, u16)`, `&[SocketAddr]`, `Vec<SocketAddr>`), for strings
/// (`"host:port"` as `&str` or `String`) and for `(&str, u16)` and `(String,
/// u16)`, and for references to any of them. A host name is looked up on
/// the runtime's blocking pool, so it never stalls a worker (the std trait
/// of the same name looks names up wherever it is called). Sealed: the
/// crate's own list.
///
/// ```
/// use fibra::net::TcpListener;
///
/// # fibra::run(async {
/// // Looked up on the blocking pool; the worker runs other tasks meanwhile.
/// let l = TcpListener::bind("localhost:0").await.unwrap();
/// assert!(l.local_addr().unwrap().ip().is_loopback());
/// // Written as an address: parsed, nothing looked up.
/// let l = TcpListener::bind(("127.0.0.1".parse::<std::net::IpAddr>().unwrap(), 0)).await;
/// assert!(l.is_ok());
/// # });
/// ```
pub trait ToSocketAddrs: sealed::Sealed {}

impl<T: ToSocketAddrs + ?Sized> sealed::Sealed for &T {
    fn lookup(&self) -> Lookup {
        (**self).lookup()
    }
}
impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}

/// Implements the trait for address types that need no lookup.
macro_rules! written_as_addresses {
    ($($t:ty => |$v:ident| $addrs:expr;)*) => {$(
        impl sealed::Sealed for $t {
            fn lookup(&self) -> Lookup {
                let $v = self;
                Lookup::Done($addrs)
            }
        }
        impl ToSocketAddrs for $t {}
    )*};
}

written_as_addresses! {
    SocketAddr => |a| vec![*a];
    SocketAddrV4 => |a| vec![SocketAddr::V4(*a)];
    SocketAddrV6 => |a| vec![SocketAddr::V6(*a)];
    (IpAddr, u16) => |a| vec![SocketAddr::new(a.0, a.1)];
    (Ipv4Addr, u16) => |a| vec![SocketAddr::new(IpAddr::V4(a.0), a.1)];
    (Ipv6Addr, u16) => |a| vec![SocketAddr::new(IpAddr::V6(a.0), a.1)];
    [SocketAddr] => |a| a.to_vec();
    Vec<SocketAddr> => |a| a.clone();
}

impl sealed::Sealed for str {
    fn lookup(&self) -> Lookup {
        match self.parse::<SocketAddr>() {
            Ok(a) => Lookup::Done(vec![a]),
            // Not an address as written: a name (or an error the resolver
            // reports, such as a missing port).
            Err(_) => Lookup::HostPort(self.to_owned()),
        }
    }
}
impl ToSocketAddrs for str {}

impl sealed::Sealed for String {
    fn lookup(&self) -> Lookup {
        self.as_str().lookup()
    }
}
impl ToSocketAddrs for String {}

impl sealed::Sealed for (&str, u16) {
    fn lookup(&self) -> Lookup {
        let (host, port) = *self;
        match host.parse::<IpAddr>() {
            Ok(ip) => Lookup::Done(vec![SocketAddr::new(ip, port)]),
            Err(_) => Lookup::Host(host.to_owned(), port),
        }
    }
}
impl ToSocketAddrs for (&str, u16) {}

impl sealed::Sealed for (String, u16) {
    fn lookup(&self) -> Lookup {
        (self.0.as_str(), self.1).lookup()
    }
}
impl ToSocketAddrs for (String, u16) {}

/// The addresses `host` names: parsed if written as addresses, else looked
/// up by the system resolver on the runtime's blocking pool (on the calling
/// thread outside a fibra worker).
///
/// ```
/// # fibra::run(async {
/// let addrs: Vec<_> = fibra::net::lookup_host("localhost:8080").await.unwrap().collect();
/// assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 8080));
/// // A string with no port is an error, as for the standard library.
/// assert!(fibra::net::lookup_host("localhost").await.is_err());
/// # });
/// ```
pub async fn lookup_host(
    host: impl ToSocketAddrs,
) -> io::Result<impl Iterator<Item = SocketAddr> + Send + 'static> {
    Ok(sealed::Sealed::lookup(&host).resolve().await?.into_iter())
}

/// Tries `f` on each address `addr` names, in order, until one succeeds;
/// the last error if none does (`what` names the attempt when there is no
/// address at all).
pub(super) async fn first_that<A, T, F, Fut>(addr: A, what: &str, mut f: F) -> io::Result<T>
where
    A: ToSocketAddrs,
    F: FnMut(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = io::Result<T>>,
{
    let mut last = None;
    for a in sealed::Sealed::lookup(&addr).resolve().await? {
        match f(a).await {
            Ok(t) => return Ok(t),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("no address to {what}"))
    }))
}

#[cfg(test)]
mod tests {
    use super::sealed::Sealed;
    use super::*;

    fn done(l: Lookup) -> Option<Vec<SocketAddr>> {
        match l {
            Lookup::Done(a) => Some(a),
            _ => None,
        }
    }

    #[test]
    fn addresses_as_written_are_parsed_not_looked_up() {
        let a: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        assert_eq!(done("127.0.0.1:80".lookup()), Some(vec![a]));
        assert_eq!(done("[::1]:80".to_string().lookup()), Some(vec![v6]));
        assert_eq!(done(("127.0.0.1", 80).lookup()), Some(vec![a]));
        assert_eq!(done(("::1".to_string(), 80).lookup()), Some(vec![v6]));
        assert_eq!(done((a.ip(), 80).lookup()), Some(vec![a]));
        let both: &[SocketAddr] = &[a, v6];
        assert_eq!(done(both.lookup()), Some(vec![a, v6]));
        assert_eq!(done((&&a).lookup()), Some(vec![a]));
    }

    #[test]
    fn names_are_looked_up() {
        assert!(matches!("localhost:80".lookup(), Lookup::HostPort(s) if s == "localhost:80"));
        assert!(matches!(("localhost", 80).lookup(), Lookup::Host(h, 80) if h == "localhost"));
        // No port: the resolver reports it (as `std::net` does).
        assert!(matches!("localhost".lookup(), Lookup::HostPort(_)));
        assert!(Lookup::HostPort("localhost".into()).blocking().is_err());
    }

    /// The threads that looked names up, with the names.
    static LOOKUPS: std::sync::Mutex<Vec<(String, std::thread::ThreadId)>> =
        std::sync::Mutex::new(Vec::new());

    pub(super) fn record_lookup(l: &Lookup) {
        let name = format!("{l:?}");
        let me = std::thread::current().id();
        LOOKUPS.lock().unwrap().push((name, me));
    }

    fn looked_up_on(name: &str) -> Vec<std::thread::ThreadId> {
        let all = LOOKUPS.lock().unwrap();
        all.iter()
            .filter(|(n, _)| n == name)
            .map(|(_, t)| *t)
            .collect()
    }

    #[test]
    fn a_name_is_looked_up_off_the_worker() {
        // A port no other test uses, to find this test's lookups.
        let rt = crate::Runtime::builder().current_thread().build().unwrap();
        let worker = std::thread::current().id();
        let addrs: Vec<_> =
            rt.block_on(async { lookup_host(("localhost", 7)).await.unwrap().collect() });
        assert!(!addrs.is_empty());
        assert!(addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 7));
        let threads = looked_up_on(r#"Host("localhost", 7)"#);
        assert_eq!(threads.len(), 1, "{threads:?}");
        assert_ne!(threads[0], worker, "looked up on the worker");
        // Outside a worker, on the calling thread.
        let addrs: Vec<_> = crate::block_on(lookup_host(("localhost", 9)))
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.port() == 9));
        assert_eq!(looked_up_on(r#"Host("localhost", 9)"#), [worker]);
    }
}
