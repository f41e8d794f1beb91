//! Running out of file descriptors on accept: the error is reported and
//! the listener backs off instead of spinning, and the connections queued
//! meanwhile are accepted once descriptors are free. A file of its own: it
//! lowers the process's descriptor limit.

use fibra::net::TcpListener;
use std::time::{Duration, Instant};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

#[test]
fn accept_out_of_descriptors_backs_off_and_recovers() {
    let rt = fibra::Runtime::builder().workers(2).build().unwrap();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // Queued in the kernel before we run out.
        let clients: Vec<_> = (0..4)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        // Lower the limit a little above what is open, then use up the rest.
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain libc calls on a valid struct.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        let saved = limit;
        limit.rlim_cur = (open_fds() + 16) as libc::rlim_t;
        // SAFETY: as above.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
        let mut fillers = Vec::new();
        while let Ok(f) = std::fs::File::open("/dev/null") {
            fillers.push(f);
        }
        // An accept loop that logs errors and goes on: with the back-off it
        // sees a handful of errors in 150 ms, not thousands.
        let start = Instant::now();
        let mut errors = 0;
        while start.elapsed() < Duration::from_millis(150) {
            match listener.accept().await {
                Ok(_) => panic!("accepted with no descriptor free"),
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
                    errors += 1;
                }
            }
        }
        assert!(
            (2..=20).contains(&errors),
            "{errors} accept errors in 150 ms"
        );
        // Descriptors free again: every queued connection is accepted.
        drop(fillers);
        // SAFETY: as above.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &saved) };
        let mut peers = Vec::new();
        for _ in 0..clients.len() {
            let (_, peer) = listener.accept().await.unwrap();
            peers.push(peer);
        }
        let mut want: Vec<_> = clients.iter().map(|c| c.local_addr().unwrap()).collect();
        peers.sort();
        want.sort();
        assert_eq!(peers, want);
    });
}
