//! A supervised key-value service.
//!
//! A supervisor runs the `kv` actor, registered under the name "kv". Clients
//! find it by name and call it (`Addr::call`: a request carrying a reply
//! slot, waited for with a timeout). A poison request makes `kv` crash; its
//! supervisor restarts it. What the clients see, as documented for
//! supervised children:
//!
//! * the poison call gets `CallError::NoReply` (the crash dropped its reply
//!   slot) — at once, not after the timeout;
//! * the address and the name stay the same: clients keep using them;
//! * requests queued behind the poison are answered by the next life, in
//!   order: none is lost;
//! * the data survives, because it lives in a table the supervisor's child
//!   spec owns (like an ETS table owned by an Erlang supervisor), not in
//!   the life that crashed.
//!
//! The program checks all of this and exits with status 0 (CI runs it).
//!
//! ```sh
//! cargo run -p fibra --example supervised_kv
//! ```

use fibra::actors::{Strategy, Supervisor};
use fibra::{Addr, CallError, Exit, Mailbox, Reply};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

enum Kv {
    Put(String, u64, Reply<Option<u64>>),
    Get(String, Reply<Option<u64>>),
    /// Crashes the server (a bug triggered by a bad request).
    Poison(Reply<()>),
}

const CLIENTS: u64 = 8;
const KEYS_PER_CLIENT: u64 = 50;
const TIMEOUT: Duration = Duration::from_secs(10);

fn main() {
    // Keep the expected crashes' panic messages short; report any other.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() == Some(&"poison request") {
            eprintln!("kv crashed on a poison request (restarting)");
        } else {
            default_hook(info);
        }
    }));
    let restarts = fibra::run(async {
        let table: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
        let mut sup = Supervisor::new(Strategy::OneForOne).intensity(100, Duration::from_secs(10));
        let kv: Addr<Kv> = sup.child("kv", move |mut mb: Mailbox<Kv>| {
            let table = table.clone();
            async move {
                while let Some(req) = mb.recv().await {
                    match req {
                        Kv::Put(k, v, reply) => {
                            let old = table.lock().unwrap().insert(k, v);
                            let _ = reply.send(old);
                        }
                        Kv::Get(k, reply) => {
                            let v = table.lock().unwrap().get(&k).copied();
                            let _ = reply.send(v);
                        }
                        Kv::Poison(_reply) => panic!("poison request"),
                    }
                }
            }
        });
        fibra::register("kv", &kv).expect("the name is free");
        let sup = sup.spawn();

        // Clients: each writes its keys, poisons the server once in the
        // middle, and reads everything back.
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                fibra::spawn(async move {
                    let kv: Addr<Kv> = fibra::whereis("kv").expect("registered");
                    for i in 0..KEYS_PER_CLIENT {
                        let key = format!("client{c}/key{i}");
                        let old = kv.call(|r| Kv::Put(key, c * 1000 + i, r), TIMEOUT).await;
                        assert_eq!(old, Ok(None), "a fresh key");
                        if i == KEYS_PER_CLIENT / 2 {
                            // Queue a put right behind the poison: the next
                            // life applies it.
                            let poison = kv.request(Kv::Poison).expect("delivered");
                            let behind = kv
                                .request(|r| Kv::Put(format!("client{c}/behind"), c, r))
                                .expect("delivered: the mailbox stays open");
                            assert_eq!(
                                poison.reply_timeout(TIMEOUT).await,
                                Err(CallError::NoReply)
                            );
                            assert_eq!(behind.reply_timeout(TIMEOUT).await, Ok(None));
                        }
                    }
                    // The same address and name, after the restarts.
                    let again: Addr<Kv> = fibra::whereis("kv").expect("still registered");
                    assert_eq!(again, kv);
                    for i in 0..KEYS_PER_CLIENT {
                        let got = kv
                            .call(|r| Kv::Get(format!("client{c}/key{i}"), r), TIMEOUT)
                            .await;
                        assert_eq!(got, Ok(Some(c * 1000 + i)), "data survives the crashes");
                    }
                    let behind = kv
                        .call(|r| Kv::Get(format!("client{c}/behind"), r), TIMEOUT)
                        .await;
                    assert_eq!(behind, Ok(Some(c)));
                })
            })
            .collect();
        for client in clients {
            client.await.expect("client checks passed");
        }

        let lives = sup.children().await.expect("supervisor running")[0].lives;
        sup.shutdown();
        assert_eq!(sup.exited().await, Exit::Normal);
        assert_eq!(kv.exited().await, Exit::Normal, "stopped gracefully");
        assert!(fibra::whereis::<Kv>("kv").is_err(), "the name is freed");
        let reply = kv
            .call(|r| Kv::Get("client0/key0".into(), r), TIMEOUT)
            .await;
        assert_eq!(reply, Err(CallError::NotDelivered), "stopped for good");
        lives - 1
    });
    assert_eq!(restarts, CLIENTS, "one restart per poison request");
    println!(
        "supervised_kv: {CLIENTS} clients, {} puts and gets, {restarts} crashes and restarts: \
         every reply checked",
        2 * CLIENTS * (KEYS_PER_CLIENT + 1)
    );
}
