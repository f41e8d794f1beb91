//! [`Node`]: one connection to NATS, the small tokio runtime that drives it,
//! and the bridge between that runtime and fibra.
//!
//! Invariants:
//! * The runtime (one worker thread, named `fibra-remote`) runs every task
//!   that touches the NATS client: the publisher, the node's service task
//!   (heartbeats, liveness queries, replies), one bridge task per
//!   registered actor and one watcher per remote node monitored. Nothing
//!   else awaits a NATS future.
//! * Outgoing messages go through one queue (`out`, see `out_queue.rs`: a
//!   push never blocks, from any thread, and is refused when the queue is
//!   full) drained by the one publisher task, in order. So the messages of one node to one actor
//!   reach NATS in the order their `send`s were queued, and the publisher,
//!   the only task that touches a target's sequence counter, numbers them
//!   in that order.
//! * Results come back to the caller's executor through fibra channels
//!   (`run_on`): a caller on fibra's runtime, on tokio or on an OS thread
//!   waits the same way, and never blocks the NATS runtime.
//! * Tasks hold `Arc<NodeInner>`, never the `Shared` that owns the
//!   runtime: when the last `Node` (or `RemoteAddr`) goes, `Shared`'s drop
//!   shuts the runtime down, which drops the tasks and their `Arc`s.

use crate::error::{ConnectError, Down};
use crate::out_queue::{OutQueue, PushError};
use crate::service;
use crate::stats::{Counters, Stats, bump};
use async_nats::Subject;
use bytes::Bytes;
use fibra::{Addr, IVar};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How a [`Node`] connects and how fast it detects dead peers.
///
/// ```no_run
/// use fibra_remote::NodeOptions;
/// use std::time::Duration;
///
/// # fibra::block_on(async {
/// let node = NodeOptions::new()
///     .name("billing-1")
///     .nats(fibra_remote::async_nats::ConnectOptions::with_user_and_password(
///         "me".into(),
///         "secret".into(),
///     ))
///     .heartbeat(Duration::from_millis(100), Duration::from_millis(500))
///     .connect("nats://127.0.0.1:4222")
///     .await
///     .unwrap();
/// # });
/// ```
pub struct NodeOptions {
    name: Option<String>,
    nats: Option<async_nats::ConnectOptions>,
    prefix: String,
    heartbeat: Duration,
    down_after: Duration,
    request_timeout: Duration,
    subscription_capacity: usize,
    max_reconnect_delay: Duration,
    outgoing_capacity: usize,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeOptions {
    /// The defaults: heartbeats every 250 ms, a node down after 1 s without
    /// one, requests (lookups, registrations) answered within 2 s, 65,536
    /// messages buffered per subscription, 1,048,576 sends and replies
    /// waiting at most in the outgoing queue, reconnection attempts at most
    /// 500 ms apart, subjects under `fibra.`.
    ///
    /// ```no_run
    /// use fibra_remote::NodeOptions;
    ///
    /// # fibra::block_on(async {
    /// let node = NodeOptions::new().connect("nats://127.0.0.1:4222").await.unwrap();
    /// assert!(node.is_connected());
    /// # });
    /// ```
    pub fn new() -> Self {
        Self {
            name: None,
            nats: None,
            prefix: "fibra".to_string(),
            heartbeat: Duration::from_millis(250),
            down_after: Duration::from_secs(1),
            request_timeout: Duration::from_secs(2),
            subscription_capacity: 65_536,
            max_reconnect_delay: Duration::from_millis(500),
            outgoing_capacity: DEFAULT_OUTGOING_CAPACITY,
        }
    }

    /// The connection's name, as NATS monitoring shows it.
    ///
    /// ```no_run
    /// use fibra_remote::NodeOptions;
    ///
    /// # fibra::block_on(async {
    /// let node = NodeOptions::new()
    ///     .name("billing-1")
    ///     .connect("nats://127.0.0.1:4222")
    ///     .await
    ///     .unwrap();
    /// assert_eq!(node.name(), "billing-1");
    /// # });
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The NATS client's options: credentials (user and password, token,
    /// NKey, JWT, `.creds` file) and TLS (`require_tls`, root and client
    /// certificates) are set here. The node then sets its own name, event
    /// callback, subscription capacity and reconnection delay on them.
    ///
    /// ```no_run
    /// use fibra_remote::NodeOptions;
    ///
    /// # fibra::block_on(async {
    /// let nats = fibra_remote::async_nats::ConnectOptions::new().name("my-service");
    /// let node = NodeOptions::new().nats(nats).connect("nats://127.0.0.1:4222").await.unwrap();
    /// # });
    /// ```
    pub fn nats(mut self, options: async_nats::ConnectOptions) -> Self {
        self.nats = Some(options);
        self
    }

    /// The first token of every subject this node uses (default `fibra`):
    /// nodes see each other only under the same prefix.
    ///
    /// # Panics
    ///
    /// If `prefix` is empty or holds whitespace, `*` or `>`.
    ///
    /// ```no_run
    /// use fibra_remote::NodeOptions;
    ///
    /// # fibra::block_on(async {
    /// // Nodes with different prefixes do not see each other's names.
    /// let staging = NodeOptions::new().prefix("staging").connect("nats://127.0.0.1:4222").await.unwrap();
    /// # });
    /// ```
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        assert!(
            !prefix.is_empty()
                && !prefix.contains(|c: char| c.is_whitespace() || c == '*' || c == '>'),
            "invalid subject prefix {prefix:?}"
        );
        self.prefix = prefix;
        self
    }

    /// This node publishes a heartbeat every `interval`; it declares a
    /// remote node down (firing every monitor of its actors with
    /// [`Down::NodeUnreachable`]) after `down_after` without one from it,
    /// checked every `interval`: a dead node is detected within
    /// `down_after + interval`.
    ///
    /// # Panics
    ///
    /// If `interval` is zero or `down_after` is not above `interval`.
    ///
    /// ```no_run
    /// use fibra_remote::NodeOptions;
    /// use std::time::Duration;
    ///
    /// # fibra::block_on(async {
    /// let node = NodeOptions::new()
    ///     .heartbeat(Duration::from_millis(100), Duration::from_millis(500))
    ///     .connect("nats://127.0.0.1:4222")
    ///     .await
    ///     .unwrap();
    /// assert_eq!(node.down_after(), Duration::from_millis(500));
    /// # });
    /// ```
    pub fn heartbeat(mut self, interval: Duration, down_after: Duration) -> Self {
        assert!(
            !interval.is_zero() && down_after > interval,
            "the heartbeat interval must be non-zero and below the node-down timeout"
        );
        self.heartbeat = interval;
        self.down_after = down_after;
        self
    }

    /// How long a lookup or a registration waits for answers.
    ///
    /// ```no_run
    /// use fibra_remote::NodeOptions;
    /// use std::time::Duration;
    ///
    /// # fibra::block_on(async {
    /// let node = NodeOptions::new()
    ///     .request_timeout(Duration::from_secs(2))
    ///     .connect("nats://127.0.0.1:4222")
    ///     .await
    ///     .unwrap();
    /// # });
    /// ```
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Messages the NATS client buffers per subscription (each registered
    /// actor has one) before it drops them and reports a slow consumer.
    ///
    /// ```no_run
    /// use fibra_remote::NodeOptions;
    ///
    /// # fibra::block_on(async {
    /// let node = NodeOptions::new()
    ///     .subscription_capacity(65_536)
    ///     .connect("nats://127.0.0.1:4222")
    ///     .await
    ///     .unwrap();
    /// # });
    /// ```
    pub fn subscription_capacity(mut self, capacity: usize) -> Self {
        self.subscription_capacity = capacity.max(1);
        self
    }

    /// The longest wait between two attempts to reconnect.
    ///
    /// ```no_run
    /// use fibra_remote::NodeOptions;
    /// use std::time::Duration;
    ///
    /// # fibra::block_on(async {
    /// let node = NodeOptions::new()
    ///     .max_reconnect_delay(Duration::from_millis(500))
    ///     .connect("nats://127.0.0.1:4222")
    ///     .await
    ///     .unwrap();
    /// # });
    /// ```
    pub fn max_reconnect_delay(mut self, delay: Duration) -> Self {
        self.max_reconnect_delay = delay;
        self
    }

    /// How many messages (sends and replies) may wait in this node's
    /// outgoing queue for the connection (default 1,048,576). When that many
    /// wait — the node sends faster than its connection drains, or NATS is
    /// unreachable and the client's own buffer is full —
    /// [`RemoteAddr::send`](crate::RemoteAddr::send) fails at once with
    /// [`SendError::Full`](crate::SendError::Full), handing the message
    /// back, and [`ReplyTo::send`](crate::ReplyTo::send) with
    /// [`ReplyError::Full`](crate::ReplyError::Full). Nothing ever waits
    /// for room.
    ///
    /// ```
    /// use fibra_remote::{NodeOptions, SendError};
    ///
    /// let options = NodeOptions::new().outgoing_capacity(10_000);
    /// // A sender that would rather wait than drop:
    /// # fn retry_later(_: u64) {}
    /// # fn handle(r: Result<(), SendError<u64>>) {
    /// match r {
    ///     Err(SendError::Full(msg)) => retry_later(msg),
    ///     _ => {}
    /// }
    /// # }
    /// # let _ = options;
    /// ```
    ///
    /// # Panics
    ///
    /// If `capacity` is zero.
    pub fn outgoing_capacity(mut self, capacity: usize) -> Self {
        assert!(capacity > 0, "the outgoing capacity must be at least 1");
        self.outgoing_capacity = capacity;
        self
    }

    /// Connects to the NATS server(s) at `url` (`nats://host:port`, or
    /// several separated by commas) and starts the node.
    ///
    /// ```no_run
    /// use fibra_remote::NodeOptions;
    ///
    /// # fibra::block_on(async {
    /// let node = NodeOptions::new().name("worker").connect("nats://127.0.0.1:4222").await?;
    /// assert_eq!(node.name(), "worker");
    /// # Ok::<(), fibra_remote::ConnectError>(())
    /// # }).unwrap();
    /// ```
    pub async fn connect(self, url: &str) -> Result<Node, ConnectError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fibra-remote")
            .enable_all()
            .build()
            .map_err(|e| ConnectError(format!("cannot start the node's runtime: {e}")))?;
        let rt = RtGuard(Some(rt));
        let handle = rt.handle();
        let counters = Arc::new(Counters::default());
        let id = fresh_id();
        let name = self.name.unwrap_or_else(|| format!("fibra-{id:016x}"));
        let events = counters.clone();
        let max_delay = self.max_reconnect_delay;
        let options = self
            .nats
            .unwrap_or_default()
            .name(name.clone())
            .subscription_capacity(self.subscription_capacity)
            .max_reconnects(None)
            .reconnect_delay_callback(move |attempts| {
                let exp = u32::try_from(attempts).unwrap_or(u32::MAX).min(20);
                Duration::from_millis(1u64 << exp).min(max_delay)
            })
            .event_callback(move |event| {
                on_event(&events, event);
                async {}
            });
        let url = url.to_string();
        let client = run_on(&handle, async move { options.connect(url).await })
            .await
            .ok_or_else(|| ConnectError("the node's runtime stopped".into()))?
            .map_err(|e| ConnectError(e.to_string()))?;
        let out = OutQueue::new(self.outgoing_capacity);
        let inner = Arc::new(NodeInner {
            id,
            name,
            prefix: self.prefix,
            max_payload: client.server_info().max_payload,
            client,
            handle: handle.clone(),
            out,
            heartbeat: self.heartbeat,
            down_after: self.down_after,
            request_timeout: self.request_timeout,
            counters,
            registry: Mutex::new(Registry::default()),
            watches: tokio::sync::Mutex::new(HashMap::new()),
            targets: Mutex::new(HashMap::new()),
            reply_boxes: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
        });
        handle.spawn(publisher(inner.clone()));
        let started = inner.clone();
        run_on(&handle, async move { service::start(started).await })
            .await
            .ok_or_else(|| ConnectError("the node's runtime stopped".into()))?
            .map_err(ConnectError)?;
        Ok(Node {
            shared: Arc::new(Shared { inner, _rt: rt }),
        })
    }
}

/// A process's membership in a cluster of fibra nodes: one connection to
/// NATS, through which its actors are published ([`register`](Self::register))
/// and remote actors found ([`lookup`](Self::lookup)).
///
/// Clonable; the connection and its runtime live until the last clone (and
/// the last [`RemoteAddr`](crate::RemoteAddr) made from it) is dropped.
/// Dropping them abandons messages still queued, like a crash;
/// [`close`](Self::close) first to flush them and tell the peers. Its
/// methods are `async` and work from any executor; from an OS thread, wrap
/// them in [`fibra::block_on`].
///
/// ```no_run
/// # fibra::block_on(async {
/// let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
/// println!("node {:016x}", node.id());
/// # });
/// ```
#[derive(Clone)]
pub struct Node {
    pub(crate) shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) inner: Arc<NodeInner>,
    _rt: RtGuard,
}

/// Owns the runtime; shuts it down without waiting (the only shutdown that
/// is allowed inside another runtime's task, where a `Node` may be dropped).
struct RtGuard(Option<tokio::runtime::Runtime>);

impl RtGuard {
    fn handle(&self) -> tokio::runtime::Handle {
        self.0
            .as_ref()
            .expect("runtime present until drop")
            .handle()
            .clone()
    }
}

impl Drop for RtGuard {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// What the node's tasks share.
pub(crate) struct NodeInner {
    pub(crate) id: u64,
    pub(crate) name: String,
    pub(crate) prefix: String,
    pub(crate) client: async_nats::Client,
    pub(crate) handle: tokio::runtime::Handle,
    /// The publisher's queue: see the invariants.
    pub(crate) out: OutQueue,
    /// The server's `max_payload`, as announced at connect.
    pub(crate) max_payload: usize,
    pub(crate) heartbeat: Duration,
    pub(crate) down_after: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) counters: Arc<Counters>,
    /// Names and actors this node hosts. Locked briefly, never across an
    /// await.
    pub(crate) registry: Mutex<Registry>,
    /// Monitors of remote actors, by node id then actor id. An async lock:
    /// a lookup holds it while it subscribes to a new node's heartbeats, so
    /// two lookups cannot both start a watcher for one node.
    pub(crate) watches: tokio::sync::Mutex<HashMap<u64, Monitors>>,
    /// Send targets shared by every `RemoteAddr` of one remote actor, so
    /// they share one sequence counter. Kept for the node's life: a
    /// receiver drops a sequence number it has seen, so a counter must
    /// never restart (one small entry per remote actor ever looked up).
    /// Locked briefly.
    pub(crate) targets: Mutex<HashMap<(u64, u64), Arc<Target>>>,
    /// Where replies to this node's calls go, by reply box id. Locked
    /// briefly.
    pub(crate) reply_boxes: Mutex<HashMap<u64, Addr<(u64, Bytes)>>>,
    next_id: AtomicU64,
    pub(crate) closed: AtomicBool,
}

/// The monitors of one remote node's actors, by actor id.
pub(crate) type Monitors = HashMap<u64, Arc<IVar<Down>>>;

/// The actors a node hosts.
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) names: HashMap<String, u64>,
    pub(crate) alive: HashSet<u64>,
}

/// One remote actor, as this node sends to it.
pub(crate) struct Target {
    pub(crate) subject: Subject,
    /// The last sequence number stamped. Only the publisher task touches
    /// it (atomic only because the `Target` is shared by `Arc`).
    seq: AtomicU64,
}

/// A message for the publisher.
pub(crate) enum Outgoing {
    /// An actor message: the publisher stamps its sequence number.
    Cast { target: Arc<Target>, buf: Vec<u8> },
    /// Anything else, as is.
    Raw { subject: Subject, buf: Vec<u8> },
    /// Signalled when everything queued before it was handed to NATS.
    Marker(tokio::sync::oneshot::Sender<()>),
}

impl NodeInner {
    /// A number unique within this node (actor ids, reply boxes).
    pub(crate) fn next_id(&self) -> u64 {
        // Relaxed: only uniqueness matters, which the RMW gives.
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn actor_subject(&self, node: u64, actor: u64) -> String {
        format!("{}.n.{node:016x}.a.{actor}", self.prefix)
    }

    pub(crate) fn node_subject(&self, node: u64, what: &str) -> String {
        format!("{}.n.{node:016x}.{what}", self.prefix)
    }

    pub(crate) fn name_subject(&self, name: &str) -> String {
        format!("{}.name.{name}", self.prefix)
    }

    pub(crate) fn target(&self, node: u64, actor: u64) -> Arc<Target> {
        let mut targets = self.targets.lock().unwrap();
        targets
            .entry((node, actor))
            .or_insert_with(|| {
                Arc::new(Target {
                    subject: Subject::from(self.actor_subject(node, actor)),
                    seq: AtomicU64::new(0),
                })
            })
            .clone()
    }

    /// Queues a message that a user sends (a cast or a reply) for the
    /// publisher; refused if the queue is full or the node closed.
    pub(crate) fn push(&self, msg: Outgoing) -> Result<(), PushError> {
        self.out.push(msg, true)
    }
}

impl Node {
    /// Connects with the default [`NodeOptions`].
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await?;
    /// assert!(node.is_connected());
    /// # Ok::<(), fibra_remote::ConnectError>(())
    /// # }).unwrap();
    /// ```
    pub async fn connect(url: &str) -> Result<Node, ConnectError> {
        NodeOptions::new().connect(url).await
    }

    pub(crate) fn inner(&self) -> &Arc<NodeInner> {
        &self.shared.inner
    }

    /// This node's id: random, fixed for the node's life, unique in the
    /// cluster with overwhelming probability.
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let other = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// assert_ne!(node.id(), other.id()); // unique per node
    /// # });
    /// ```
    pub fn id(&self) -> u64 {
        self.inner().id
    }

    /// The connection's name.
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// println!("this node is {}", node.name()); // `fibra-<id>` unless named
    /// # });
    /// ```
    pub fn name(&self) -> &str {
        &self.inner().name
    }

    /// The largest encoded message the server takes (its `max_payload`).
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// println!("messages up to {} bytes, header included", node.max_payload());
    /// # });
    /// ```
    pub fn max_payload(&self) -> usize {
        self.inner().max_payload
    }

    /// How long after its last heartbeat a remote node is declared down.
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// println!("a silent node counts as down after {:?}", node.down_after());
    /// # });
    /// ```
    pub fn down_after(&self) -> Duration {
        self.inner().down_after
    }

    /// The node's counters: what it sent, delivered, and dropped (and why).
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// let stats = node.stats();
    /// println!("sent {}, delivered {}, lost {}", stats.sent, stats.delivered, stats.lost);
    /// # });
    /// ```
    pub fn stats(&self) -> Stats {
        self.inner().counters.snapshot()
    }

    /// Whether the client is connected to a NATS server now.
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// if !node.is_connected() {
    ///     eprintln!("NATS is unreachable; sends fail until it reconnects");
    /// }
    /// # });
    /// ```
    pub fn is_connected(&self) -> bool {
        self.inner().client.connection_state() == async_nats::connection::State::Connected
    }

    /// Closes the node: messages already queued are flushed to the server,
    /// then its remote peers see [`Down::NodeStopped`] for its actors at
    /// once (rather than after the heartbeat timeout), and the connection
    /// is drained and closed. Sends through it fail from now on with
    /// [`SendError::NodeClosed`](crate::SendError). Its registered actors
    /// stay alive locally, unreachable: their names are gone.
    ///
    /// ```no_run
    /// # fibra::block_on(async {
    /// # let node = fibra_remote::Node::connect("nats://127.0.0.1:4222").await.unwrap();
    /// node.close().await; // monitors on other nodes see `Down::NodeStopped`
    /// assert!(!node.is_connected());
    /// # });
    /// ```
    pub async fn close(&self) {
        let inner = self.inner().clone();
        if inner.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let done = inner.clone();
        run_on(&inner.handle, async move {
            let (tx, rx) = tokio::sync::oneshot::channel();
            // Behind every queued message: the publisher drains in order.
            done.out.close();
            done.out.push_control(Outgoing::Raw {
                subject: Subject::from(done.node_subject(done.id, "hb")),
                buf: crate::wire::header(crate::wire::Kind::Stopping, done.id, 0),
            });
            done.out.push_control(Outgoing::Marker(tx));
            let _ = rx.await;
            // Flushes, unsubscribes everything (the bridges' streams end)
            // and closes the connection.
            let _ = done.client.drain().await;
        })
        .await;
    }
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("id", &format_args!("{:016x}", self.id()))
            .field("name", &self.name())
            .finish()
    }
}

/// Runs `fut` on the node's runtime; the result comes back through a fibra
/// channel, so the caller may wait on any executor or thread. `None` if the
/// runtime dropped the task (it is shutting down).
pub(crate) fn run_on<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    fut: impl Future<Output = T> + Send + 'static,
) -> impl Future<Output = Option<T>> {
    let (tx, rx) = fibra::bounded(1);
    handle.spawn(async move {
        // Room for the one value: never waits.
        let _ = tx.try_send(fut.await);
    });
    async move { rx.recv().await.ok() }
}

/// The publisher: see the invariants.
async fn publisher(inner: Arc<NodeInner>) {
    let mut batch = std::collections::VecDeque::new();
    loop {
        inner.out.take(&mut batch).await;
        for msg in batch.drain(..) {
            let (subject, payload) = match msg {
                Outgoing::Cast { target, mut buf } => {
                    let seq = target.seq.load(Ordering::Relaxed) + 1;
                    target.seq.store(seq, Ordering::Relaxed);
                    crate::wire::set_b(&mut buf, seq);
                    (target.subject.clone(), Bytes::from(buf))
                }
                Outgoing::Raw { subject, buf } => (subject, Bytes::from(buf)),
                Outgoing::Marker(done) => {
                    let _ = done.send(());
                    continue;
                }
            };
            // The whole queue may be one batch: give the node's other tasks
            // (heartbeats, monitors, the connection's I/O) their turn, as a
            // tokio channel's receive would.
            tokio::task::coop::consume_budget().await;
            match inner.client.publish(subject.clone(), payload).await {
                Ok(()) => bump(&inner.counters.sent, 1),
                Err(e) => {
                    bump(&inner.counters.publish_errors, 1);
                    tracing::warn!(%subject, error = %e, "fibra-remote: publish failed");
                }
            }
        }
    }
}

fn on_event(counters: &Counters, event: async_nats::Event) {
    use async_nats::Event;
    match event {
        Event::Connected => {
            if counters.disconnects.load(Ordering::Relaxed) > 0 {
                bump(&counters.reconnects, 1);
            }
            tracing::info!("fibra-remote: connected to NATS");
        }
        Event::Disconnected => {
            bump(&counters.disconnects, 1);
            tracing::warn!("fibra-remote: disconnected from NATS, reconnecting");
        }
        Event::SlowConsumer(sid) => {
            bump(&counters.slow_consumer, 1);
            tracing::warn!(
                sid,
                "fibra-remote: slow consumer: a subscription's buffer is full, NATS messages dropped"
            );
        }
        other => tracing::warn!("fibra-remote: NATS event: {other}"),
    }
}

/// The default of [`NodeOptions::outgoing_capacity`].
const DEFAULT_OUTGOING_CAPACITY: usize = 1 << 20;

/// A random node id (never 0).
fn fresh_id() -> u64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish().max(1)
}
