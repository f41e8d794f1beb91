//! An actor with request/reply: a key-value store that owns its map and
//! answers `Get` requests on a reply address each request carries.
//!
//! `cargo run -p fibra --example actor`

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use fibra::{Addr, Exit, Mailbox, select, spawn_actor, time::after};

/// What the store understands.
enum Request {
    /// Store `value` under `key`.
    Put { key: String, value: u64 },
    /// Send the value under `key` (or `None`) to `reply`.
    Get {
        key: String,
        reply: Addr<Option<u64>>,
    },
}

/// The store's body: one message at a time, so the map needs no lock. It
/// ends when no address is left.
async fn store(mut mailbox: Mailbox<Request>) {
    let mut map = HashMap::new();
    while let Some(request) = mailbox.recv().await {
        match request {
            Request::Put { key, value } => {
                map.insert(key, value);
            }
            Request::Get { key, reply } => {
                // The asker may have given up; a failed reply is not an error.
                let _ = reply.send(map.get(&key).copied());
            }
        }
    }
}

/// Asks `store` for `key` and waits for the answer, the store's end or a
/// timeout, whichever comes first.
async fn get(store: &Addr<Request>, key: &str) -> Result<Option<u64>, String> {
    let (reply, mut answers) = fibra::mailbox();
    let key = key.to_string();
    store
        .send(Request::Get { key, reply })
        .map_err(|_| "the store has stopped".to_string())?;
    select! {
        answer = answers.recv_op() => answer.ok_or_else(|| "no answer".to_string()),
        exit = store.exited_op() => Err(format!("the store ended: {exit:?}")),
        () = after(Duration::from_secs(5)) => Err("timed out".to_string()),
    }
}

fn main() -> ExitCode {
    let outcome = fibra::run(async {
        let addr = spawn_actor(store);
        for (i, fruit) in ["apple", "pear", "plum"].into_iter().enumerate() {
            let value = 10 * (i as u64 + 1);
            addr.send(Request::Put {
                key: fruit.to_string(),
                value,
            })
            .map_err(|_| "the store has stopped")?;
            println!("put {fruit} = {value}");
        }
        let pear = get(&addr, "pear").await?;
        let kiwi = get(&addr, "kiwi").await?;
        println!("get pear -> {pear:?}, get kiwi -> {kiwi:?}");
        if (pear, kiwi) != (Some(20), None) {
            return Err(format!("wrong answers: {pear:?}, {kiwi:?}"));
        }

        // Dropping the last address ends the store; a monitor sees how.
        let monitor = addr.monitor();
        drop(addr);
        let exit = monitor.exited().await;
        println!("the store ended: {exit:?}");
        if exit != Exit::Normal {
            return Err(format!("the store ended abnormally: {exit:?}"));
        }
        Ok::<_, String>(())
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("actor example failed: {e}");
            ExitCode::FAILURE
        }
    }
}
