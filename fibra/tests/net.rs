//! `fibra::net`: TCP and UDP on fibra's runtime, their ops in choices, and
//! the faults a network brings (refused, reset, half-close, a peer that
//! never reads, an idle peer, shutdown).

use fibra::net::{TcpListener, TcpStream, UdpSocket};
use fibra::time::after;
use fibra::{Op, Runtime, choose, select};
use std::io::{ErrorKind, Read, Write};
use std::net::Shutdown;
use std::time::Duration;

fn rt() -> Runtime {
    Runtime::builder().workers(2).build().unwrap()
}

#[test]
fn echo_many_messages_both_ways() {
    rt().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = fibra::spawn(async move {
            let (conn, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let mut total = 0usize;
            loop {
                let n = conn.read(&mut buf).await.unwrap();
                if n == 0 {
                    return total;
                }
                total += n;
                conn.write_all(&buf[..n]).await.unwrap();
            }
        });
        let c = TcpStream::connect(addr).await.unwrap();
        c.set_nodelay(true).unwrap();
        let mut sent = 0usize;
        for i in 0..2000u32 {
            let msg = i.to_le_bytes();
            c.write_all(&msg).await.unwrap();
            let mut back = [0u8; 4];
            c.read_exact(&mut back).await.unwrap();
            assert_eq!(back, msg);
            sent += 4;
        }
        c.shutdown(Shutdown::Write).unwrap();
        assert_eq!(
            c.read(&mut [0; 8]).await.unwrap(),
            0,
            "EOF after the server ends"
        );
        assert_eq!(server.await.unwrap(), sent);
    });
}

#[test]
fn choices_between_accept_and_a_ready_channel_deliver_the_connection_once() {
    rt().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Connected (the kernel completes the handshake) before the choice.
        let client = std::net::TcpStream::connect(addr).unwrap();
        let (tx, rx) = fibra::bounded::<u32>(1);
        tx.try_send(7).unwrap();
        // Both branches are ready; the choice runs many times with a
        // biased order that puts the accept first half of the time.
        for round in 0..20 {
            let got = if round % 2 == 0 {
                fibra::choose_biased((
                    rx.recv_op().wrap(|v| Err(v.unwrap())),
                    listener.accept_op().wrap(Ok),
                ))
                .await
            } else {
                choose((
                    rx.recv_op().wrap(|v| Err(v.unwrap())),
                    listener.accept_op().wrap(Ok),
                ))
                .await
            };
            match got {
                Err(v) => {
                    assert_eq!(v, 7);
                    tx.try_send(7).unwrap();
                }
                Ok(conn) => {
                    let (conn, peer) = conn.unwrap();
                    assert_eq!(peer, client.local_addr().unwrap());
                    drop(conn);
                    return;
                }
            }
        }
        // The connection was never delivered by the choices: the accept
        // must still have it.
        let (_, peer) = listener.accept().await.unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
    });
}

#[test]
fn select_accept_message_and_timeout() {
    rt().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (ctl_tx, ctl) = fibra::channel::<&'static str>();
        let mut events = Vec::new();
        let connector = fibra::spawn(async move {
            fibra::time::sleep(Duration::from_millis(20)).await;
            let c = TcpStream::connect(addr).await.unwrap();
            fibra::time::sleep(Duration::from_millis(20)).await;
            ctl_tx.send("stop").await.unwrap();
            c
        });
        loop {
            select! {
                conn = listener.accept_op() => { conn.unwrap(); events.push("conn") }
                msg = ctl.recv_op() => { events.push(msg.unwrap()); break }
                () = after(Duration::from_secs(5)) => panic!("timed out"),
            }
        }
        assert_eq!(events, ["conn", "stop"]);
        drop(connector.await.unwrap());
    });
}

#[test]
fn choices_between_a_receive_and_a_ready_channel_deliver_every_datagram_in_order() {
    rt().block_on(async {
        let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let to = b.local_addr().unwrap();
        let mut received = Vec::new();
        for i in 0..50u8 {
            a.send_to(&[i], to).await.unwrap();
        }
        // Let every datagram land, so the receive branch is ready too.
        fibra::time::sleep(Duration::from_millis(20)).await;
        let (tx, rx) = fibra::bounded::<()>(1);
        let mut buf = [0u8; 8];
        while received.len() < 50 {
            let _ = tx.try_send(());
            let got = choose((
                rx.recv_op().wrap(|_| None),
                b.recv_from_op(&mut buf).wrap(|r| Some(r.unwrap().0)),
            ))
            .await;
            if let Some(n) = got {
                assert_eq!(n, 1);
                received.push(buf[0]);
            }
        }
        assert_eq!(
            received,
            (0..50).collect::<Vec<u8>>(),
            "every datagram, in order"
        );
    });
}

#[test]
fn connect_refused_is_an_error() {
    rt().block_on(async {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let err = TcpStream::connect(addr).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    });
}

#[test]
fn peer_reset_mid_read_and_mid_write() {
    rt().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // The peer: a std socket that closes with unread data, which makes
        // the kernel send RST.
        let peer = std::thread::spawn(move || {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"x").unwrap();
            let mut b = [0u8; 1];
            s.read_exact(&mut b).unwrap();
            // Unread data pending: close sends RST.
            std::thread::sleep(Duration::from_millis(20));
        });
        let (conn, _) = listener.accept().await.unwrap();
        let mut b = [0u8; 1];
        conn.read_exact(&mut b).await.unwrap();
        conn.write_all(b"yy").await.unwrap();
        peer.join().unwrap();
        // Reading after the reset: an error or EOF, never a hang.
        let mut buf = [0u8; 16];
        let mut outcome = None;
        for _ in 0..10 {
            match conn.read(&mut buf).await {
                Ok(0) => {
                    outcome = Some("eof");
                    break;
                }
                Ok(_) => continue,
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
                    outcome = Some("reset");
                    break;
                }
            }
        }
        assert!(outcome.is_some());
        // Writing to a reset connection fails (EPIPE or ECONNRESET).
        let mut write_err = None;
        for _ in 0..100 {
            if let Err(e) = conn.write_all(&[0u8; 1024]).await {
                write_err = Some(e);
                break;
            }
        }
        let e = write_err.expect("writes to a reset peer fail");
        assert!(
            matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
            "{e}"
        );
    });
}

#[test]
fn half_close_the_other_direction_still_works() {
    rt().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (s, _) = listener.accept().await.unwrap();
        c.write_all(b"request").await.unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut req = Vec::new();
        let mut buf = [0u8; 4];
        loop {
            match s.read(&mut buf).await.unwrap() {
                0 => break,
                n => req.extend_from_slice(&buf[..n]),
            }
        }
        assert_eq!(req, b"request");
        s.write_all(b"response").await.unwrap();
        drop(s);
        let mut resp = [0u8; 8];
        c.read_exact(&mut resp).await.unwrap();
        assert_eq!(&resp, b"response");
        assert_eq!(c.read(&mut buf).await.unwrap(), 0);
    });
}

#[test]
fn a_peer_that_never_reads_makes_writes_wait_not_fail() {
    rt().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (s, _) = listener.accept().await.unwrap();
        // Fill the kernel buffers: writes then wait (back-pressure).
        let chunk = vec![7u8; 64 * 1024];
        let mut written = 0usize;
        let blocked = loop {
            select! {
                r = s.writable_op() => {
                    r.unwrap();
                    match s.try_write(&chunk) {
                        Ok(n) => written += n,
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                () = after(Duration::from_millis(100)) => break true,
            }
            assert!(written < 512 << 20, "the kernel buffers never filled");
        };
        assert!(blocked && written > 0);
        // The reader drains it all; every byte arrives.
        let writer = fibra::spawn(async move {
            s.write_all(b"end").await.unwrap();
            s.shutdown(Shutdown::Write).unwrap();
        });
        let mut got = 0usize;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match c.read(&mut buf).await.unwrap() {
                0 => break,
                n => got += n,
            }
        }
        writer.await.unwrap();
        assert_eq!(got, written + 3);
    });
}

#[test]
fn an_idle_peer_times_out_as_an_op() {
    rt().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        // Slowloris: connects and sends nothing.
        let _idle = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (s, _) = listener.accept().await.unwrap();
        let timed_out = select! {
            r = s.readable_op() => { r.unwrap(); false }
            () = after(Duration::from_millis(30)) => true,
        };
        assert!(timed_out);
        // The timeout withdrew the wait: the socket still works.
        _idle.write_all(b"late").await.unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"late");
    });
}

#[test]
fn outside_a_runtime_sockets_are_not_made_but_work_once_made() {
    // Made outside: a clear error, no hang.
    let err = fibra::block_on(TcpListener::bind("127.0.0.1:0")).unwrap_err();
    assert!(err.to_string().contains("outside a fibra runtime"), "{err}");
    // Made in a runtime, used from an OS thread and from tokio.
    let rt = rt();
    let (listener, client) = rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        (l, c)
    });
    let server = std::thread::spawn(move || {
        fibra::block_on(async {
            let (s, _) = listener.accept().await.unwrap();
            let mut b = [0u8; 3];
            s.read_exact(&mut b).await.unwrap();
            s.write_all(&b).await.unwrap();
        })
    });
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async {
            client.write_all(b"tok").await.unwrap();
            let mut b = [0u8; 3];
            client.read_exact(&mut b).await.unwrap();
            assert_eq!(&b, b"tok");
        });
    server.join().unwrap();
}

#[test]
fn after_its_runtime_shuts_down_a_socket_fails_instead_of_hanging() {
    let rt = rt();
    let (conn, peer_std) = rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().await.unwrap();
        (s, peer)
    });
    drop(rt);
    let err = fibra::block_on(conn.read(&mut [0u8; 4])).unwrap_err();
    assert!(err.to_string().contains("shut down"), "{err}");
    drop(peer_std);
}

#[test]
fn shutting_the_runtime_down_closes_the_sockets_its_tasks_held() {
    let rt = rt();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    rt.handle().spawn(async move {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        addr_tx.send(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().await.unwrap();
        // Holds the connection until the runtime goes.
        let _ = s.read(&mut [0u8; 1]).await;
        std::future::pending::<()>().await;
    });
    let addr = addr_rx.recv().unwrap();
    let mut peer = std::net::TcpStream::connect(addr).unwrap();
    peer.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    drop(rt);
    let mut b = [0u8; 1];
    assert_eq!(
        peer.read(&mut b).unwrap(),
        0,
        "EOF: the server's socket closed"
    );
}

#[test]
fn a_current_thread_runtime_outside_block_on_fails_waits_instead_of_hanging() {
    let rt = Runtime::builder().current_thread().build().unwrap();
    let (conn, peer) = rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().await.unwrap();
        (s, peer)
    });
    let conn = std::sync::Arc::new(conn);
    // Nobody polls the runtime's sockets now: a wait fails at once.
    let err = fibra::block_on(conn.read(&mut [0u8; 4])).unwrap_err();
    assert!(err.to_string().contains("not running"), "{err}");
    // A non-waiting call still works.
    assert_eq!(conn.try_write(b"x").unwrap(), 1);
    // A thread waiting while `block_on` runs is told when it returns.
    let waiter = {
        let conn = conn.clone();
        std::thread::spawn(move || fibra::block_on(conn.read(&mut [0u8; 4])))
    };
    rt.block_on(async { fibra::time::sleep(Duration::from_millis(50)).await });
    let err = waiter.join().unwrap().unwrap_err();
    assert!(err.to_string().contains("not running"), "{err}");
    // Inside `block_on` again, the socket works.
    let mut peer = peer;
    peer.write_all(b"back").unwrap();
    let conn2 = conn.clone();
    let got = rt.block_on(async move {
        let mut b = [0u8; 4];
        conn2.read_exact(&mut b).await.map(|()| b)
    });
    assert_eq!(&got.unwrap(), b"back");
}

#[test]
fn sockets_ready_in_one_poll_are_served_in_the_order_they_became_ready() {
    use std::sync::{Arc, Mutex};
    // One worker, so the order the tasks run in is the order they were
    // queued in.
    let rt = Runtime::builder().workers(1).build().unwrap();
    const N: usize = 32;
    let order = rt.block_on(rt.spawn(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut clients = Vec::new();
        let mut readers = Vec::new();
        let order = Arc::new(Mutex::new(Vec::new()));
        for i in 0..N {
            clients.push(std::net::TcpStream::connect(addr).unwrap());
            let (conn, _) = listener.accept().await.unwrap();
            let order = order.clone();
            readers.push(fibra::spawn(async move {
                let mut byte = [0u8; 1];
                assert_eq!(conn.read(&mut byte).await.unwrap(), 1);
                order.lock().unwrap().push(i);
            }));
        }
        // Behind the readers: each runs first and waits in its read.
        fibra::yield_now().await;
        // Within this one poll, so no I/O poll comes between them: the
        // sockets become readable one after the other, and the worker's
        // next poll finds them all ready.
        for client in &mut clients {
            client.write_all(&[1]).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        for reader in readers {
            reader.await.unwrap();
        }
        Arc::try_unwrap(order).unwrap().into_inner().unwrap()
    }));
    assert_eq!(
        order.unwrap(),
        (0..N).collect::<Vec<_>>(),
        "first ready, first served"
    );
}

#[test]
fn host_names_are_looked_up_and_each_address_tried() {
    rt().block_on(async {
        // Bound on IPv4 only: if "localhost" names ::1 first, that address
        // is refused and the next one connects.
        let listener = TcpListener::bind(("localhost", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        assert!(addr.ip().is_loopback());
        let v4 = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = v4.local_addr().unwrap().port();
        let c = TcpStream::connect(format!("localhost:{port}"))
            .await
            .unwrap();
        let (s, from) = v4.accept().await.unwrap();
        assert_eq!(from, c.local_addr().unwrap());
        c.write_all(b"hi").await.unwrap();
        let mut buf = [0; 2];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"hi");
        // UDP too, by name and as (host, port).
        let u = UdpSocket::bind("localhost:0").await.unwrap();
        u.connect(("localhost", u.local_addr().unwrap().port()))
            .await
            .unwrap();
        // Bad input: no port, or no address at all.
        let err = TcpStream::connect("localhost").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        let none: &[std::net::SocketAddr] = &[];
        let err = TcpStream::connect(none).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains("no address"), "{err}");
    });
}
