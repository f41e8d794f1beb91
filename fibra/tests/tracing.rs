//! The `tracing` feature: spans and events under the target `fibra`.
#![cfg(feature = "tracing")]

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Counts spans and events of the target `fibra` by name (an event's name
/// is its message).
#[derive(Default)]
struct Counter {
    seen: Mutex<HashMap<String, usize>>,
    next_id: AtomicU64,
}

struct Message(Option<String>);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

impl Counter {
    fn bump(&self, name: &str) {
        *self
            .seen
            .lock()
            .unwrap()
            .entry(name.to_string())
            .or_default() += 1;
    }

    fn count(&self, name: &str) -> usize {
        self.seen.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

impl Subscriber for Counter {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "fibra"
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        self.bump(&format!("span:{}", span.metadata().name()));
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut m = Message(None);
        event.record(&mut m);
        self.bump(&m.0.unwrap_or_default());
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[test]
fn spawn_poll_complete_commit_and_park_are_reported() {
    static COUNTER: std::sync::OnceLock<&'static Counter> = std::sync::OnceLock::new();
    let counter: &'static Counter = COUNTER.get_or_init(|| Box::leak(Box::default()));
    tracing::subscriber::set_global_default(Forward(counter)).unwrap();

    let rt = fibra::Runtime::builder().workers(1).build().unwrap();
    rt.block_on(async {
        let (tx, rx) = fibra::channel::<u32>();
        let h = fibra::spawn(async move { rx.recv_op().await });
        tx.send(1).await.unwrap();
        assert_eq!(h.await.unwrap(), Ok(1));
    });
    // Idle: the worker parks.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while counter.count("park") == 0 {
        assert!(std::time::Instant::now() < deadline, "no park reported");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(
        counter.count("spawn"),
        2,
        "block_on's task and the spawned one"
    );
    assert_eq!(counter.count("complete"), 2);
    assert!(counter.count("span:poll") >= 3);
    assert!(counter.count("commit") >= 1, "the receive op committed");
}

/// `set_global_default` takes the subscriber by value.
struct Forward(&'static Counter);

impl Subscriber for Forward {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        self.0.enabled(m)
    }
    fn new_span(&self, s: &Attributes<'_>) -> Id {
        self.0.new_span(s)
    }
    fn record(&self, i: &Id, r: &Record<'_>) {
        self.0.record(i, r)
    }
    fn record_follows_from(&self, a: &Id, b: &Id) {
        self.0.record_follows_from(a, b)
    }
    fn event(&self, e: &Event<'_>) {
        self.0.event(e)
    }
    fn enter(&self, i: &Id) {
        self.0.enter(i)
    }
    fn exit(&self, i: &Id) {
        self.0.exit(i)
    }
}
