//! Supervisors (Erlang/OTP's `supervisor`): an actor that starts children,
//! restarts them by a strategy when they end, gives up when they restart
//! too often, and stops them in order.
//!
//! Invariants (all state is the supervisor task's own; no lock):
//! * Each child has a stable address whose mailbox outlives the child's
//!   lives (`mailbox::supervised_life`): a new life starts only after the
//!   last one's `Ended` event, which its task sends after dropping its body
//!   (and the mailbox it received with). So a mailbox never has two
//!   receivers.
//! * A slot is known by its child's address's id, stable for the slot's
//!   life in the supervisor (the slot holds the address; a child added
//!   while the supervisor runs is appended, one stopped with
//!   `terminate_child` removed): events name that id, never a position.
//! * `Slot::life` numbers a child's lives; an `Ended` event names the life
//!   it reports. A life the supervisor killed for a group restart reports
//!   through the same event, which the restart waits for (a selective
//!   receive); an event of a life already replaced is ignored.
//! * A restart is counted in `restarts` before it happens; more than
//!   `max_restarts` within `period` and the supervisor stops every child
//!   (reverse start order) and fails with `Exit::Failed`.

use crate::mailbox::{
    ActorId, Addr, Exit, Mailbox, OnEnd, Reply, supervised_addr, supervised_life,
};
use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which children a supervisor restarts when one ends and must be
/// restarted (OTP's restart strategies).
///
/// ```
/// use fibra::actors::{Strategy, Supervisor};
///
/// let sup = Supervisor::new(Strategy::RestForOne);
/// assert!(format!("{sup:?}").contains("RestForOne"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Only that child.
    OneForOne,
    /// Every child: the others are stopped (reverse start order), then all
    /// start again in order.
    OneForAll,
    /// That child and those started after it: they are stopped (reverse
    /// start order), then start again in order.
    RestForOne,
}

/// When a child that ended is restarted (OTP's restart types).
///
/// ```
/// use fibra::actors::{ChildSpec, Restart};
///
/// assert_eq!(Restart::default(), Restart::Permanent);
/// let _spec = ChildSpec::new("job").restart(Restart::Temporary);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Restart {
    /// Always.
    #[default]
    Permanent,
    /// Only if it ended abnormally ([`Exit::is_abnormal`]).
    Transient,
    /// Never: its end is its final end.
    Temporary,
}

/// How a child is supervised: its name, [`Restart`] type and shutdown
/// timeout (how long a graceful stop may take before the child is killed).
///
/// ```
/// use fibra::actors::{ChildSpec, Restart};
/// use std::time::Duration;
///
/// let spec = ChildSpec::new("cache")
///     .restart(Restart::Transient)
///     .shutdown(Duration::from_millis(100));
/// assert_eq!(spec.name(), "cache");
/// ```
#[derive(Clone, Debug)]
pub struct ChildSpec {
    name: String,
    restart: Restart,
    shutdown: Duration,
}

impl ChildSpec {
    /// A permanent child with a shutdown timeout of 5 seconds.
    ///
    /// ```
    /// let spec = fibra::actors::ChildSpec::new("db");
    /// assert_eq!(spec.name(), "db");
    /// ```
    pub fn new(name: impl Into<String>) -> Self {
        ChildSpec {
            name: name.into(),
            restart: Restart::Permanent,
            shutdown: Duration::from_secs(5),
        }
    }

    /// When the child is restarted.
    ///
    /// ```
    /// use fibra::actors::{ChildSpec, Restart};
    ///
    /// let _spec = ChildSpec::new("retry-on-crash").restart(Restart::Transient);
    /// ```
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// How long a graceful stop may take: the supervisor closes the
    /// child's mailbox (the child receives what is queued, then `None`) and
    /// kills it ([`Addr::kill`]) if it has not ended after `timeout`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let _spec = fibra::actors::ChildSpec::new("slow").shutdown(Duration::from_secs(1));
    /// ```
    pub fn shutdown(mut self, timeout: Duration) -> Self {
        self.shutdown = timeout;
        self
    }

    /// The child's name.
    ///
    /// ```
    /// assert_eq!(fibra::actors::ChildSpec::new("cache").name(), "cache");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A child seen by its supervisor, whatever its message type.
trait Child: Send {
    fn spec(&self) -> &ChildSpec;
    /// Its address's id: the slot's key.
    fn id(&self) -> ActorId;
    /// How it ended for good, once it did.
    fn exit(&self) -> Option<Exit>;
    /// Spawns a new life.
    fn start(&mut self, on_end: OnEnd);
    fn kill(&self);
    /// Asks the life to stop: closes its mailbox.
    fn close(&self);
    /// Stops the child for good: its address reports `exit`.
    fn end(&self, exit: Exit);
}

struct ChildOf<M, B> {
    spec: ChildSpec,
    addr: Addr<M>,
    body: B,
}

impl<M, B, F> Child for ChildOf<M, B>
where
    M: Send + 'static,
    B: FnMut(Mailbox<M>) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    fn spec(&self) -> &ChildSpec {
        &self.spec
    }

    fn id(&self) -> ActorId {
        self.addr.id()
    }

    fn exit(&self) -> Option<Exit> {
        self.addr.try_exited()
    }

    fn start(&mut self, on_end: OnEnd) {
        let life = supervised_life(&self.addr, &mut self.body, on_end);
        drop(crate::rt::spawn(life));
    }

    fn kill(&self) {
        self.addr.kill();
    }

    fn close(&self) {
        self.addr.close_supervised();
    }

    fn end(&self, exit: Exit) {
        self.addr.end_supervised(exit);
    }
}

/// A supervisor's children, kept between the supervisor's own lives when
/// it is itself a child (`Supervisor::supervisor`).
#[derive(Default)]
struct ShelfState {
    /// The children, while no life of the supervisor holds them.
    slots: Option<Vec<Slot>>,
    /// The supervisor was stopped for good: a life that ends now stops its
    /// children for good too.
    ended: bool,
}

type Shelf = Arc<Mutex<ShelfState>>;

fn lock_shelf(shelf: &Shelf) -> std::sync::MutexGuard<'_, ShelfState> {
    // No user code runs under this lock: a poisoned one is still consistent.
    shelf.lock().unwrap_or_else(|e| e.into_inner())
}

/// A supervisor supervised by another.
struct SupervisorChild {
    spec: ChildSpec,
    addr: Addr<Event>,
    shelf: Shelf,
    strategy: Strategy,
    max_restarts: usize,
    period: Duration,
}

impl Child for SupervisorChild {
    fn spec(&self) -> &ChildSpec {
        &self.spec
    }

    fn id(&self) -> ActorId {
        self.addr.id()
    }

    fn exit(&self) -> Option<Exit> {
        self.addr.try_exited()
    }

    fn start(&mut self, on_end: OnEnd) {
        let (shelf, strategy, max_restarts, period) = (
            self.shelf.clone(),
            self.strategy,
            self.max_restarts,
            self.period,
        );
        let body = move |mb: Mailbox<Event>| async move {
            // The last life put the children back when it ended, before
            // this one could start.
            let Some(slots) = lock_shelf(&shelf).slots.take() else {
                return;
            };
            let mut state = State {
                strategy,
                max_restarts,
                period,
                slots,
                restarts: VecDeque::new(),
                me: mb.addr(),
                mb,
                shelf: Some(shelf),
            };
            state.run().await;
        };
        drop(crate::rt::spawn(supervised_life(&self.addr, body, on_end)));
    }

    /// Kills the subtree first: the supervisor kills its children, waits
    /// for their ends, then ends as killed.
    fn kill(&self) {
        let _ = self.addr.send(Event::Terminate);
    }

    /// A graceful stop: the supervisor stops its children for good, then
    /// ends.
    fn close(&self) {
        let _ = self.addr.send(Event::Shutdown);
    }

    fn end(&self, exit: Exit) {
        let slots = {
            let mut shelf = lock_shelf(&self.shelf);
            shelf.ended = true;
            shelf.slots.take()
        };
        // Children left by a life that was killed (or that failed): stop
        // them for good now. (If a life still holds them, its end does.)
        if let Some(mut slots) = slots {
            end_all_now(&mut slots);
        }
        self.addr.end_supervised(exit);
    }
}

/// Kills every child that runs and stops every child for good, at once
/// (no waiting: the supervisor is gone).
fn end_all_now(slots: &mut [Slot]) {
    for slot in slots.iter_mut().rev() {
        if !slot.ended {
            slot.ended = true;
            if slot.running {
                slot.child.kill();
            }
            slot.child.end(Exit::Killed);
        }
    }
}

/// A supervisor's description: strategy, intensity and children, in start
/// order. [`spawn`](Self::spawn) starts it.
///
/// A child's address is known before the supervisor starts and stays the
/// same across restarts: clients keep using it. Its mailbox outlives each
/// life: a send during a restart succeeds, and **the messages queued when
/// a life ends are received by the next life**, in order (the message the
/// life was handling when it crashed was received, and is gone). When the
/// supervisor stops the child for good (shutdown, a temporary child's end,
/// the supervisor failing), its mailbox closes: later sends fail and hand
/// the message back, and its address's [`exited_op`](Addr::exited_op)
/// reports the last life's exit. A graceful stop lets the child receive
/// everything queued first (see [`ChildSpec::shutdown`]); a killed child's
/// unreceived messages are dropped.
///
/// A child is killed by [`Addr::kill`]'s mechanism: its body is dropped at
/// its next poll (a child whose poll never returns cannot be stopped).
///
/// # Examples
///
/// A worker that crashes on a poison message and is restarted, keeping its
/// address and the messages queued behind the poison:
///
/// ```
/// use fibra::actors::{Strategy, Supervisor};
/// use fibra::Reply;
/// use std::time::Duration;
///
/// enum Msg {
///     Square(u64, Reply<u64>),
///     Poison,
/// }
///
/// fibra::run(async {
///     let mut sup = Supervisor::new(Strategy::OneForOne);
///     let worker = sup.child("squarer", |mut mb| async move {
///         while let Some(msg) = mb.recv().await {
///             match msg {
///                 Msg::Square(n, reply) => { let _ = reply.send(n * n); }
///                 Msg::Poison => panic!("poisoned"),
///             }
///         }
///     });
///     let sup = sup.spawn();
///     worker.send(Msg::Poison).unwrap();
///     let call = worker.request(|r| Msg::Square(7, r)).unwrap(); // queued behind the poison
///     assert_eq!(call.reply_timeout(Duration::from_secs(5)).await, Ok(49));
///     let lives = sup.children().await.unwrap()[0].lives;
///     assert_eq!(lives, 2);
///     sup.shutdown();
///     assert_eq!(sup.exited().await, fibra::Exit::Normal);
///     assert!(worker.is_closed());
/// });
/// ```
pub struct Supervisor {
    strategy: Strategy,
    max_restarts: usize,
    period: Duration,
    children: Vec<Box<dyn Child>>,
}

impl Supervisor {
    /// A supervisor with no children yet and an intensity of 3 restarts in
    /// 5 seconds.
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     worker.send(1).unwrap();
    ///     sup.shutdown();
    ///     assert_eq!(sup.exited().await, fibra::Exit::Normal);
    /// });
    /// ```
    pub fn new(strategy: Strategy) -> Self {
        Supervisor {
            strategy,
            max_restarts: 3,
            period: Duration::from_secs(5),
            children: Vec::new(),
        }
    }

    /// Restart intensity (OTP's `intensity` and `period`): if more than
    /// `max_restarts` restarts happen within `period`, the supervisor stops
    /// every child (reverse start order) and fails with [`Exit::Failed`],
    /// which whatever watches it ([`SupervisorRef::exited_op`], a link, a
    /// supervisor above) sees. A group restart (one-for-all, rest-for-one)
    /// counts as one.
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    /// use fibra::Exit;
    /// use std::time::Duration;
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne).intensity(2, Duration::from_secs(60));
    ///     let crasher = sup.child("crasher", |mut mb| async move {
    ///         let _: Option<()> = mb.recv().await;
    ///         panic!("again");
    ///     });
    ///     let sup = sup.spawn();
    ///     for _ in 0..3 {
    ///         crasher.send(()).unwrap(); // three crashes: the third is one too many
    ///     }
    ///     assert!(matches!(sup.exited().await, Exit::Failed(_)));
    ///     assert!(matches!(crasher.exited().await, Exit::Panicked(_)));
    /// });
    /// ```
    pub fn intensity(mut self, max_restarts: usize, period: Duration) -> Self {
        self.max_restarts = max_restarts;
        self.period = period;
        self
    }

    /// Adds a permanent child named `name` (see [`child_spec`](Self::child_spec)).
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     worker.send(7).unwrap(); // a stable address, known before the start
    ///     sup.shutdown();
    ///     sup.exited().await;
    ///     assert!(worker.is_closed());
    /// });
    /// ```
    pub fn child<M, B, F>(&mut self, name: impl Into<String>, body: B) -> Addr<M>
    where
        M: Send + 'static,
        B: FnMut(Mailbox<M>) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        self.child_spec(ChildSpec::new(name), body)
    }

    /// Adds a child, started after those added before it: `body` is called
    /// for each of its lives with its mailbox. Returns the child's address,
    /// stable across restarts.
    ///
    /// ```
    /// use fibra::actors::{ChildSpec, Restart, Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let once = sup.child_spec(ChildSpec::new("once").restart(Restart::Temporary), |mut mb| async move {
    ///         let _: Option<()> = mb.recv().await;
    ///     });
    ///     let sup = sup.spawn();
    ///     once.send(()).unwrap();
    ///     assert_eq!(once.exited().await, fibra::Exit::Normal); // not restarted
    ///     assert!(once.send(()).is_err());
    ///     sup.shutdown();
    ///     sup.exited().await;
    /// });
    /// ```
    pub fn child_spec<M, B, F>(&mut self, spec: ChildSpec, body: B) -> Addr<M>
    where
        M: Send + 'static,
        B: FnMut(Mailbox<M>) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let addr = supervised_addr();
        self.children.push(Box::new(ChildOf {
            spec,
            addr: addr.clone(),
            body,
        }));
        addr
    }

    /// Adds a supervisor as a child (a supervision tree). Each of its lives
    /// runs `child`'s strategy over the same children, whose addresses stay
    /// the same. When a life ends — it failed its intensity, or this
    /// supervisor killed it for a restart — its children's lives are
    /// killed (their mailboxes stay open) and the next life starts them
    /// again; a graceful stop (this supervisor's shutdown) stops them for
    /// good, in reverse start order.
    ///
    /// ```
    /// use fibra::actors::{ChildSpec, Strategy, Supervisor};
    /// use fibra::Exit;
    /// use std::time::Duration;
    ///
    /// fibra::run(async {
    ///     let mut inner = Supervisor::new(Strategy::OneForOne).intensity(0, Duration::from_secs(60));
    ///     let worker = inner.child("worker", |mut mb: fibra::Mailbox<bool>| async move {
    ///         while let Some(crash) = mb.recv().await {
    ///             assert!(!crash, "worker crashed");
    ///         }
    ///     });
    ///     let mut top = Supervisor::new(Strategy::OneForOne);
    ///     let inner = top.supervisor(ChildSpec::new("inner"), inner);
    ///     let top = top.spawn();
    ///     // The worker's crash exceeds the inner supervisor's intensity (0):
    ///     // it fails, and the top supervisor restarts it, and so the worker.
    ///     worker.send(true).unwrap();
    ///     let lives = loop {
    ///         let lives = top.children().await.unwrap()[0].lives;
    ///         if lives == 2 {
    ///             break lives;
    ///         }
    ///         fibra::yield_now().await;
    ///     };
    ///     assert_eq!(lives, 2);
    ///     assert_eq!(inner.children().await.unwrap()[0].lives, 2);
    ///     worker.send(false).unwrap(); // the same address, a new life
    ///     top.shutdown();
    ///     assert_eq!(top.exited().await, Exit::Normal);
    ///     assert_eq!(worker.exited().await, Exit::Normal);
    /// });
    /// ```
    pub fn supervisor(&mut self, spec: ChildSpec, child: Supervisor) -> SupervisorRef {
        let Supervisor {
            strategy,
            max_restarts,
            period,
            children,
        } = child;
        let addr = supervised_addr();
        let shelf = Arc::new(Mutex::new(ShelfState {
            slots: Some(children.into_iter().map(Slot::new).collect()),
            ended: false,
        }));
        self.children.push(Box::new(SupervisorChild {
            spec,
            addr: addr.clone(),
            shelf,
            strategy,
            max_restarts,
            period,
        }));
        SupervisorRef { addr }
    }

    /// Starts the supervisor (an actor) and its children, in order.
    ///
    /// # Panics
    ///
    /// Outside a fibra runtime.
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     assert!(sup.children().await.unwrap()[0].running);
    ///     sup.shutdown();
    ///     sup.exited().await;
    /// });
    /// ```
    pub fn spawn(self) -> SupervisorRef {
        let Supervisor {
            strategy,
            max_restarts,
            period,
            children,
        } = self;
        let addr = crate::rt::spawn_actor(move |mb: Mailbox<Event>| async move {
            let me = mb.addr();
            let mut state = State {
                strategy,
                max_restarts,
                period,
                slots: children.into_iter().map(Slot::new).collect(),
                restarts: VecDeque::new(),
                me,
                mb,
                shelf: None,
            };
            state.run().await;
        });
        SupervisorRef { addr }
    }
}

impl fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervisor")
            .field("strategy", &self.strategy)
            .field("max_restarts", &self.max_restarts)
            .field("period", &self.period)
            .field(
                "children",
                &self
                    .children
                    .iter()
                    .map(|c| c.spec().name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// What a supervisor's mailbox receives.
enum Event {
    /// A life of the child `id` ended.
    Ended { id: ActorId, life: u64, exit: Exit },
    /// Add a child after the others and start it
    /// ([`SupervisorRef::start_child`]).
    StartChild(Box<dyn Child>, Reply<()>),
    /// Stop a child for good and remove it; replies with its exit, or
    /// `None` if it is not a child ([`SupervisorRef::terminate_child`]).
    TerminateChild(ActorId, Reply<Option<Exit>>),
    /// Stop every child (reverse start order), then end normally.
    Shutdown,
    /// Kill every child (reverse start order, waiting for each), then end
    /// this life as killed: how a supervisor above kills a supervisor, so
    /// that its subtree is gone before its end is reported (OTP's
    /// `shutdown => infinity` for supervisor children).
    Terminate,
    /// Report the children.
    Children(Reply<Vec<ChildInfo>>),
}

/// A child as its supervisor sees it ([`SupervisorRef::children`]).
///
/// ```
/// use fibra::actors::{Strategy, Supervisor};
///
/// fibra::run(async {
///     let mut sup = Supervisor::new(Strategy::OneForOne);
///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
///         while mb.recv().await.is_some() {}
///     });
///     let sup = sup.spawn();
///     let info = &sup.children().await.unwrap()[0];
///     assert_eq!((info.name.as_str(), info.lives, info.running), ("worker", 1, true));
///     sup.shutdown();
///     sup.exited().await;
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChildInfo {
    /// Its name.
    pub name: String,
    /// How many lives it has started (1 + its restarts).
    pub lives: u64,
    /// Whether a life runs now.
    pub running: bool,
}

/// A running supervisor: stop it, watch it, list its children.
///
/// ```
/// use fibra::actors::{Strategy, Supervisor};
///
/// fibra::run(async {
///     let mut sup = Supervisor::new(Strategy::OneForOne);
///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
///         while mb.recv().await.is_some() {}
///     });
///     let sup = sup.spawn();
///     let watcher = sup.clone();
///     sup.shutdown();
///     assert_eq!(watcher.exited().await, fibra::Exit::Normal);
/// });
/// ```
#[derive(Clone)]
pub struct SupervisorRef {
    addr: Addr<Event>,
}

impl SupervisorRef {
    /// Asks the supervisor to stop: it stops its children in reverse start
    /// order (each gracefully, then killed after its shutdown timeout) and
    /// ends with [`Exit::Normal`]. Returns at once: wait with
    /// [`exited`](Self::exited).
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     worker.send(1).unwrap(); // received before the worker stops
    ///     sup.shutdown();
    ///     assert_eq!(sup.exited().await, fibra::Exit::Normal);
    ///     assert_eq!(worker.exited().await, fibra::Exit::Normal);
    /// });
    /// ```
    pub fn shutdown(&self) {
        let _ = self.addr.send(Event::Shutdown);
    }

    /// The op that becomes ready when the supervisor ends: [`Exit::Normal`]
    /// after a shutdown, [`Exit::Failed`] when its intensity was exceeded.
    ///
    /// ```
    /// use fibra::{Op, always, choose_biased};
    ///
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     let running = choose_biased((sup.exited_op().wrap(|_| false), always(true))).await;
    ///     assert!(running);
    ///     sup.shutdown();
    ///     sup.exited_op().await;
    /// });
    /// ```
    pub fn exited_op(&self) -> crate::sync::GetOp<'_, Exit> {
        self.addr.exited_op()
    }

    /// Waits until the supervisor ends; see [`exited_op`](Self::exited_op).
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     sup.shutdown();
    ///     assert_eq!(sup.exited().await, fibra::Exit::Normal);
    /// });
    /// ```
    pub async fn exited(&self) -> Exit {
        self.addr.exited().await
    }

    /// How the supervisor ended, if it did.
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     assert_eq!(sup.try_exited(), None);
    ///     sup.shutdown();
    ///     sup.exited().await;
    ///     assert_eq!(sup.try_exited(), Some(fibra::Exit::Normal));
    /// });
    /// ```
    pub fn try_exited(&self) -> Option<Exit> {
        self.addr.try_exited()
    }

    /// Its children, in start order.
    ///
    /// # Errors
    ///
    /// If the supervisor has ended.
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     let names: Vec<String> = sup.children().await.unwrap().into_iter().map(|c| c.name).collect();
    ///     assert_eq!(names, ["worker"]);
    ///     sup.shutdown();
    ///     sup.exited().await;
    ///     assert!(sup.children().await.is_err());
    /// });
    /// ```
    pub async fn children(&self) -> Result<Vec<ChildInfo>, crate::CallError> {
        self.addr.request(Event::Children)?.reply().await
    }

    /// Adds a child while the supervisor runs (OTP's `start_child`): it is
    /// appended after the others (so a rest-for-one restart of an earlier
    /// child restarts it too) and started; `body` is called for each of its
    /// lives, as for [`Supervisor::child_spec`]. Returns its address, stable
    /// across restarts, once the supervisor has started it. A supervised
    /// supervisor keeps the child across its own restarts.
    ///
    /// # Errors
    ///
    /// [`CallError::NotDelivered`](crate::CallError::NotDelivered) if the
    /// supervisor has ended, [`CallError::NoReply`](crate::CallError::NoReply)
    /// if it ends before it gets to the request: the child never started,
    /// and its address is dropped. Dropping the returned future once the
    /// request has gone out does not withdraw it: the child is started, and
    /// only its address is lost to the caller.
    ///
    /// ```
    /// use fibra::actors::{ChildSpec, Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     // A pool that grows on demand (Elixir's DynamicSupervisor).
    ///     let pool = Supervisor::new(Strategy::OneForOne).spawn();
    ///     let worker = pool
    ///         .start_child(ChildSpec::new("conn-1"), |mut mb: fibra::Mailbox<u32>| async move {
    ///             while mb.recv().await.is_some() {}
    ///         })
    ///         .await
    ///         .unwrap();
    ///     worker.send(1).unwrap();
    ///     assert_eq!(pool.children().await.unwrap()[0].name, "conn-1");
    ///     pool.shutdown();
    ///     pool.exited().await;
    ///     assert!(worker.is_closed());
    /// });
    /// ```
    pub async fn start_child<M, B, F>(
        &self,
        spec: ChildSpec,
        body: B,
    ) -> Result<Addr<M>, crate::CallError>
    where
        M: Send + 'static,
        B: FnMut(Mailbox<M>) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let addr = supervised_addr();
        let child = Box::new(ChildOf {
            spec,
            addr: addr.clone(),
            body,
        });
        // Not started: the child went with the refused or dropped request,
        // and `addr`, its last address, goes here.
        self.addr
            .request(|reply| Event::StartChild(child, reply))?
            .reply()
            .await?;
        Ok(addr)
    }

    /// Stops the child `child` (an actor's `&Addr`, a supervisor child's
    /// `&SupervisorRef`, or an [`ActorId`](crate::ActorId)) for good and
    /// removes it (OTP's `terminate_child` and `delete_child`): as in a
    /// shutdown, its mailbox is closed, it gets its shutdown timeout to
    /// end, then it is killed (a supervisor child stops its own children
    /// first, in reverse order). Returns its exit, or `None` if it is not
    /// (or no longer) a child of this supervisor.
    ///
    /// # Errors
    ///
    /// If the supervisor has ended.
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    /// use fibra::Exit;
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let a = sup.child("a", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     assert_eq!(sup.terminate_child(&a).await.unwrap(), Some(Exit::Normal));
    ///     assert!(sup.children().await.unwrap().is_empty());
    ///     assert_eq!(sup.terminate_child(&a).await.unwrap(), None);
    ///     assert!(a.send(1).is_err());
    ///     sup.shutdown();
    ///     sup.exited().await;
    /// });
    /// ```
    pub async fn terminate_child(
        &self,
        child: impl Into<ActorId>,
    ) -> Result<Option<Exit>, crate::CallError> {
        let id = child.into();
        self.addr
            .request(|reply| Event::TerminateChild(id, reply))?
            .reply()
            .await
    }

    /// A monitor of the supervisor.
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     let monitor = sup.monitor();
    ///     sup.shutdown();
    ///     assert_eq!(monitor.exited().await, fibra::Exit::Normal);
    /// });
    /// ```
    pub fn monitor(&self) -> crate::Monitor {
        self.addr.monitor()
    }

    /// Links the supervisor with `other` ([`Addr::link`]): the supervisor
    /// does not trap exits, so an abnormal death of `other` kills it (its
    /// children are then killed too), and its failure reaches `other`.
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     let (me, mut inbox) = fibra::mailbox::<fibra::ExitSignal>();
    ///     inbox.trap_exits(|s| s);
    ///     sup.link(&me);
    ///     sup.shutdown();
    ///     assert_eq!(inbox.recv().await.unwrap().from, sup.id());
    /// });
    /// ```
    pub fn link<N: Send + 'static>(&self, other: &Addr<N>) {
        self.addr.link(other);
    }

    /// The supervisor's identity, as exit signals name it.
    ///
    /// ```
    /// use fibra::actors::{Strategy, Supervisor};
    ///
    /// fibra::run(async {
    ///     let mut sup = Supervisor::new(Strategy::OneForOne);
    ///     let worker = sup.child("worker", |mut mb: fibra::Mailbox<u32>| async move {
    ///         while mb.recv().await.is_some() {}
    ///     });
    ///     let sup = sup.spawn();
    ///     assert_eq!(sup.id(), sup.clone().id());
    ///     assert_ne!(sup.id(), worker.id());
    ///     sup.shutdown();
    ///     sup.exited().await;
    /// });
    /// ```
    pub fn id(&self) -> crate::ActorId {
        self.addr.id()
    }
}

/// The supervisor's identity ([`SupervisorRef::id`]).
///
/// ```
/// use fibra::actors::{Strategy, Supervisor};
///
/// fibra::run(async {
///     let sup = Supervisor::new(Strategy::OneForOne).spawn();
///     assert_eq!(fibra::ActorId::from(&sup), sup.id());
///     sup.shutdown();
///     sup.exited().await;
/// });
/// ```
impl From<&SupervisorRef> for ActorId {
    fn from(sup: &SupervisorRef) -> Self {
        sup.id()
    }
}

impl fmt::Debug for SupervisorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SupervisorRef").field(&self.addr).finish()
    }
}

struct Slot {
    child: Box<dyn Child>,
    /// The number of the current (or last) life; 0 before the first.
    life: u64,
    running: bool,
    /// Stopped for good (temporary, or transient that ended normally).
    ended: bool,
}

impl Slot {
    fn new(child: Box<dyn Child>) -> Self {
        Slot {
            child,
            life: 0,
            running: false,
            ended: false,
        }
    }
}

struct State {
    strategy: Strategy,
    max_restarts: usize,
    period: Duration,
    slots: Vec<Slot>,
    /// When the restarts within the last `period` happened.
    restarts: VecDeque<Instant>,
    /// Our own address, for the children's `Ended` events.
    me: Addr<Event>,
    mb: Mailbox<Event>,
    /// A supervised supervisor: where the children wait between its lives.
    shelf: Option<Shelf>,
}

impl State {
    async fn run(&mut self) {
        for i in 0..self.slots.len() {
            // Killed when our last life ended: its end is on its way to us.
            if self.slots[i].running {
                self.wait_ended(i).await;
            }
        }
        for i in 0..self.slots.len() {
            if !self.slots[i].ended {
                self.start(i);
            }
        }
        while let Some(event) = self.mb.recv().await {
            match event {
                Event::Ended { id, life, exit } => {
                    let Some(index) = self.position(id) else {
                        continue; // a child removed since
                    };
                    if life == self.slots[index].life && self.slots[index].running {
                        self.slots[index].running = false;
                        if let Err(failure) = self.child_ended(index, exit).await {
                            if self.shelf.is_some() {
                                // Supervised: our next life restarts them.
                                self.kill_all().await;
                            } else {
                                self.stop_all().await;
                            }
                            self.me.fail(failure);
                            return std::future::pending().await;
                        }
                    }
                }
                Event::Shutdown => {
                    self.stop_all().await;
                    return;
                }
                Event::Terminate => {
                    self.kill_all().await;
                    self.me.fail(Exit::Killed);
                    return std::future::pending().await;
                }
                Event::StartChild(child, reply) => {
                    self.slots.push(Slot::new(child));
                    self.start(self.slots.len() - 1);
                    let _ = reply.send(());
                }
                Event::TerminateChild(id, reply) => {
                    let exit = match self.position(id) {
                        Some(i) => {
                            let exit = self.stop(i).await;
                            self.slots.remove(i);
                            Some(exit)
                        }
                        None => None,
                    };
                    let _ = reply.send(exit);
                }
                Event::Children(reply) => {
                    let infos = self
                        .slots
                        .iter()
                        .map(|s| ChildInfo {
                            name: s.child.spec().name().to_string(),
                            lives: s.life,
                            running: s.running,
                        })
                        .collect();
                    let _ = reply.send(infos);
                }
            }
        }
    }

    /// The position of the child `id` among the slots.
    fn position(&self, id: ActorId) -> Option<usize> {
        self.slots.iter().position(|s| s.child.id() == id)
    }

    fn start(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        slot.life += 1;
        slot.running = true;
        let (me, life, id) = (self.me.clone(), slot.life, slot.child.id());
        slot.child.start(Box::new(move |exit| {
            // Refused only once the supervisor itself has ended.
            let _ = me.send(Event::Ended { id, life, exit });
        }));
    }

    /// Child `index`'s current life ended with `exit`: restart what the
    /// strategy says, or report the failure that exceeds the intensity.
    async fn child_ended(&mut self, index: usize, exit: Exit) -> Result<(), Exit> {
        let restart = match self.slots[index].child.spec().restart {
            Restart::Permanent => true,
            Restart::Transient => exit.is_abnormal(),
            Restart::Temporary => false,
        };
        if !restart {
            self.slots[index].ended = true;
            self.slots[index].child.end(exit);
            return Ok(());
        }
        let now = Instant::now();
        self.restarts.push_back(now);
        while self
            .restarts
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.period)
        {
            self.restarts.pop_front();
        }
        if self.restarts.len() > self.max_restarts {
            if self.shelf.is_none() {
                // The crashed child's last exit is its final one.
                self.slots[index].ended = true;
                self.slots[index].child.end(exit.clone());
            }
            return Err(Exit::Failed(format!(
                "{} restarts within {:?}; child {:?} {exit}",
                self.restarts.len(),
                self.period,
                self.slots[index].child.spec().name()
            )));
        }
        let group = match self.strategy {
            Strategy::OneForOne => index..index + 1,
            Strategy::OneForAll => 0..self.slots.len(),
            Strategy::RestForOne => index..self.slots.len(),
        };
        for i in group.clone().rev() {
            if self.slots[i].running {
                self.slots[i].child.kill();
                self.wait_ended(i).await;
            }
        }
        for i in group {
            if !self.slots[i].ended {
                self.start(i);
            }
        }
        Ok(())
    }

    /// Waits for the `Ended` event of child `index`'s current life (other
    /// events stay queued, in order).
    async fn wait_ended(&mut self, index: usize) -> Exit {
        let (id, life) = (self.slots[index].child.id(), self.slots[index].life);
        let event = self
            .mb
            .recv_matching(
                |e| matches!(e, Event::Ended { id: i, life: l, .. } if *i == id && *l == life),
            )
            .await;
        self.slots[index].running = false;
        match event {
            Some(Event::Ended { exit, .. }) => exit,
            // Our mailbox has our own address: it cannot run dry.
            _ => Exit::Killed,
        }
    }

    /// Kills every running child, in reverse start order, and waits for
    /// each end; their mailboxes stay open for a next life.
    async fn kill_all(&mut self) {
        for i in (0..self.slots.len()).rev() {
            if self.slots[i].running {
                self.slots[i].child.kill();
                self.wait_ended(i).await;
            }
        }
    }

    /// Stops every child for good, in reverse start order ([`stop`](Self::stop)).
    async fn stop_all(&mut self) {
        for i in (0..self.slots.len()).rev() {
            self.stop(i).await;
        }
    }

    /// Stops child `i` for good: close its mailbox, wait up to its
    /// shutdown timeout, kill it if it has not ended; its address then
    /// reports the exit of its last life, which this returns.
    async fn stop(&mut self, i: usize) -> Exit {
        if self.slots[i].ended {
            return self.slots[i].child.exit().unwrap_or(Exit::Normal);
        }
        let exit = if self.slots[i].running {
            let slot = &self.slots[i];
            slot.child.close();
            let (id, life, timeout) = (slot.child.id(), slot.life, slot.child.spec().shutdown);
            let ended = crate::time::timeout(
                self.mb.recv_matching_op(
                    |e| matches!(e, Event::Ended { id: j, life: l, .. } if *j == id && *l == life),
                ),
                timeout,
            )
            .await;
            match ended {
                Ok(Some(Event::Ended { exit, .. })) => {
                    self.slots[i].running = false;
                    exit
                }
                _ => {
                    self.slots[i].child.kill();
                    self.wait_ended(i).await
                }
            }
        } else {
            Exit::Normal
        };
        self.slots[i].ended = true;
        self.slots[i].child.end(exit.clone());
        exit
    }
}

impl Drop for State {
    /// The supervisor's life ended without stopping its children (killed,
    /// failed, or its runtime shut down). Supervised: kill the running
    /// children and leave them for the next life, which waits for their
    /// ends — unless the supervisor was stopped for good meanwhile. Else:
    /// kill them and stop them for good now.
    fn drop(&mut self) {
        let mut slots = std::mem::take(&mut self.slots);
        if let Some(shelf) = &self.shelf {
            let mut shelf = lock_shelf(shelf);
            if !shelf.ended {
                for slot in slots.iter().rev() {
                    if slot.running {
                        slot.child.kill();
                    }
                }
                shelf.slots = Some(slots);
                return;
            }
        }
        end_all_now(&mut slots);
    }
}
