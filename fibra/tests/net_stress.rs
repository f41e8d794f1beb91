//! Many connections opened, used and dropped at random, with waits
//! cancelled mid-way by `select!`: every byte is counted both ways.

use fibra::net::{TcpListener, TcpStream};
use fibra::time::after;
use fibra::{Runtime, select};
use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr};
use std::time::Duration;

/// What the server saw on one connection.
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    read: usize,
    written: usize,
}

async fn echo(conn: TcpStream) -> Seen {
    let mut seen = Seen::default();
    let mut buf = vec![0u8; 4096];
    loop {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return seen,
            Ok(n) => {
                seen.read += n;
                if conn.write_all(&buf[..n]).await.is_err() {
                    return seen;
                }
                seen.written += n;
            }
        }
    }
}

/// A tiny deterministic generator per client.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// What a client did: bytes sent, bytes read back, and whether it hung up
/// early.
struct Did {
    addr: SocketAddr,
    sent: usize,
    received: usize,
    dropped: bool,
}

async fn client(server: SocketAddr, seed: u64) -> Did {
    let mut rng = Rng(seed * 2_654_435_761 + 1);
    let conn = TcpStream::connect(server).await.unwrap();
    let addr = conn.local_addr().unwrap();
    let mut did = Did {
        addr,
        sent: 0,
        received: 0,
        dropped: false,
    };
    let rounds = rng.below(20);
    let mut buf = vec![0u8; 8192];
    for _ in 0..rounds {
        let len = 1 + rng.below(6000) as usize;
        let msg: Vec<u8> = (0..len).map(|i| (i as u64 ^ seed) as u8).collect();
        conn.write_all(&msg).await.unwrap();
        did.sent += len;
        // Hang up with the echo in flight, now and then.
        if rng.below(8) == 0 {
            did.dropped = true;
            return did;
        }
        let mut got = 0;
        while got < len {
            // A wait cancelled at random by a timeout: it must lose
            // nothing (the bytes stay in the socket for the next look).
            let timeout = Duration::from_micros(rng.below(300));
            select! {
                r = conn.readable_op() => {
                    r.unwrap();
                    match conn.try_read(&mut buf[..len - got]) {
                        Ok(0) => panic!("EOF from an echo server"),
                        Ok(n) => {
                            assert!(buf[..n].iter().enumerate().all(|(i, &b)| b == ((got + i) as u64 ^ seed) as u8));
                            got += n;
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                () = after(timeout) => {}
            }
        }
        did.received += got;
    }
    conn.shutdown(Shutdown::Write).unwrap();
    assert_eq!(conn.read(&mut buf).await.unwrap(), 0);
    did
}

/// Whether what the server saw on one connection fits what its client did:
/// everything echoed back, or, for a client that hung up early, no more read
/// than sent, no more echoed than read, no more received than echoed.
fn fits(did: &Did, s: &Seen) -> bool {
    if did.dropped {
        s.read <= did.sent && s.written <= s.read && did.received <= s.written
    } else {
        (s.read, s.written, did.received) == (did.sent, did.sent, did.sent)
    }
}

/// Whether the clients that had one address pair up one-to-one with the
/// server's connections from that address (at most a few: a reused port).
fn pairs_up(clients: &[&Did], server_side: &[Seen]) -> bool {
    let Some((first, rest)) = clients.split_first() else {
        return server_side.is_empty();
    };
    (0..server_side.len()).any(|k| {
        let mut others = server_side.to_vec();
        let s = others.swap_remove(k);
        fits(first, &s) && pairs_up(rest, &others)
    })
}

#[test]
fn many_connections_every_byte_counted() {
    let rt = Runtime::builder().workers(2).build().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server_addr = listener.local_addr().unwrap();
        const CLIENTS: u64 = 300;
        let server = fibra::spawn(async move {
            let mut conns = fibra::JoinSet::new();
            for _ in 0..CLIENTS {
                let (conn, peer) = listener.accept().await.unwrap();
                conns.spawn(async move { (peer, echo(conn).await) });
            }
            // By peer address; a port freed by a reset (a client that hung
            // up with the echo in flight) may come back for a later client.
            let mut seen: HashMap<SocketAddr, Vec<Seen>> = HashMap::new();
            while let Some(r) = conns.join_next().await {
                let (peer, s) = r.unwrap();
                seen.entry(peer).or_default().push(s);
            }
            seen
        });
        // Clients in waves of 50 at once.
        let mut dids = Vec::new();
        for wave in 0..CLIENTS / 50 {
            let clients: Vec<_> = (0..50)
                .map(|i| fibra::spawn(client(server_addr, wave * 50 + i)))
                .collect();
            for c in clients {
                dids.push(c.await.unwrap());
            }
        }
        let seen = server.await.unwrap();
        assert_eq!(seen.values().map(Vec::len).sum::<usize>(), CLIENTS as usize);
        let (mut sent, mut dropped) = (0, 0);
        let mut by_addr: HashMap<SocketAddr, Vec<&Did>> = HashMap::new();
        for did in &dids {
            sent += did.sent;
            dropped += usize::from(did.dropped);
            by_addr.entry(did.addr).or_default().push(did);
        }
        for (addr, clients) in &by_addr {
            let server_side = seen.get(addr).map_or(&[][..], Vec::as_slice);
            assert!(
                pairs_up(clients, server_side),
                "{addr}: clients {:?} against the server's {server_side:?}",
                clients
                    .iter()
                    .map(|d| (d.sent, d.received, d.dropped))
                    .collect::<Vec<_>>()
            );
        }
        assert!(sent > 0 && dropped > 0 && dropped < CLIENTS as usize);
    });
}
