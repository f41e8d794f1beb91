//! `Builder`: configure and start a runtime.

use super::queue::{Injector, Worker as Deque};
use super::worker::LocalQueues;
use super::{Flavor, Idle, MAX_WORKERS, Parker, Registry, Runtime, Shared, WorkerCtx};
use crate::loom::{AtomicBool, AtomicPtr, AtomicUsize, Mutex};
use std::sync::Arc;

/// Configures a [`Runtime`].
///
/// ```
/// let rt = fibra::Runtime::builder()
///     .workers(2)
///     .thread_name("fibra-worker")
///     .pin_cores(false)
///     .build()
///     .unwrap();
/// assert_eq!(rt.block_on(async { 40 + 2 }), 42);
///
/// let ct = fibra::Runtime::builder().current_thread().build().unwrap();
/// assert_eq!(ct.block_on(async { 1 }), 1);
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    flavor: Flavor,
    workers: Option<usize>,
    thread_name: String,
    pin_cores: bool,
    stack_size: Option<usize>,
    parasite_inflation: bool,
    /// Under loom, whether idle workers tick and rescue (`rescue.rs`): off
    /// unless a model asks, as its barriers and ticks multiply the
    /// interleavings of every model (the freeze has a model of its own).
    #[cfg(loom)]
    rescue: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// A multi-thread runtime with one worker per core.
    ///
    /// ```
    /// let rt = fibra::rt::Builder::new().workers(2).build().unwrap();
    /// assert_eq!(rt.block_on(async { 1 + 1 }), 2);
    /// ```
    pub fn new() -> Self {
        Builder {
            flavor: Flavor::MultiThread,
            workers: None,
            thread_name: "fibra-worker".to_string(),
            pin_cores: false,
            stack_size: None,
            parasite_inflation: true,
            #[cfg(loom)]
            rescue: false,
        }
    }

    /// Multi-thread flavour (the default): `workers` threads run tasks and
    /// steal from each other.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().multi_thread().workers(2).build().unwrap();
    /// let h = rt.spawn(async { std::thread::current().name().map(str::to_string) });
    /// assert!(rt.block_on(h).unwrap().is_some()); // ran on a named worker thread
    /// ```
    pub fn multi_thread(mut self) -> Self {
        self.flavor = Flavor::MultiThread;
        self
    }

    /// Current-thread flavour: no worker threads; tasks run on the thread
    /// that calls [`Runtime::block_on`], while it is in there.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().current_thread().build().unwrap();
    /// let caller = std::thread::current().id();
    /// let h = rt.spawn(async { std::thread::current().id() });
    /// assert_eq!(rt.block_on(h).unwrap(), caller); // tasks run inside block_on
    /// ```
    pub fn current_thread(mut self) -> Self {
        self.flavor = Flavor::CurrentThread;
        self
    }

    /// Number of worker threads (multi-thread flavour). Default: the
    /// number of cores. Values below 1 count as 1; more than
    /// [`MAX_WORKERS`](super::MAX_WORKERS) make [`build`](Self::build) fail.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(3).build().unwrap();
    /// assert_eq!(rt.block_on(rt.spawn(async { 7 })).unwrap(), 7);
    /// let too_many = fibra::Runtime::builder().workers(fibra::rt::MAX_WORKERS + 1).build();
    /// assert_eq!(too_many.unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    /// ```
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n.max(1));
        self
    }

    /// Name of the worker threads (suffixed with `-N`).
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(1).thread_name("db").build().unwrap();
    /// let h = rt.spawn(async { std::thread::current().name().unwrap().to_string() });
    /// assert!(rt.block_on(h).unwrap().starts_with("db"));
    /// ```
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = name.into();
        self
    }

    /// Pins worker `i` to core `i % cores` (Linux; ignored elsewhere).
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(2).pin_cores(true).build().unwrap();
    /// assert_eq!(rt.block_on(rt.spawn(async { 1 })).unwrap(), 1);
    /// ```
    pub fn pin_cores(mut self, pin: bool) -> Self {
        self.pin_cores = pin;
        self
    }

    /// Stack size of the worker threads.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().stack_size(4 << 20).build().unwrap();
    /// let deep = rt.spawn(async { [0u8; 1 << 20].iter().map(|&b| b as u32).sum::<u32>() });
    /// assert_eq!(rt.block_on(deep).unwrap(), 0);
    /// ```
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// Whether parasites ([`spawn_eager`](super::spawn_eager)) that turn
    /// out long-running inflate (on by default): a parasite whose poll ends
    /// with it runnable again (it yielded, or used up its cooperative
    /// budget) becomes an ordinary task on a stealable queue, where idle
    /// workers may take it, and the worker it ran on spawns its next 10
    /// parasites as ordinary tasks. Off, such a parasite stays on its
    /// worker (a private queue no other worker steals from), like the
    /// parasites of the paper without inflation: cheap, but never run in
    /// parallel. `docs/runtime.md` ("Parasites") has the whole policy.
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().parasite_inflation(false).build().unwrap();
    /// let n = rt.block_on(async {
    ///     let h = fibra::spawn_eager(async {
    ///         fibra::yield_now().await;
    ///         1
    ///     });
    ///     h.await.unwrap()
    /// });
    /// assert_eq!(n, 1);
    /// ```
    pub fn parasite_inflation(mut self, on: bool) -> Self {
        self.parasite_inflation = on;
        self
    }

    /// Under loom: whether idle workers tick and rescue stuck workers'
    /// private tasks (`rescue.rs`), as they always do otherwise.
    #[cfg(all(loom, test))]
    pub(crate) fn rescue(mut self, on: bool) -> Self {
        self.rescue = on;
        self
    }

    /// Starts the runtime.
    ///
    /// # Errors
    ///
    /// If a worker thread cannot be spawned, or more than
    /// [`MAX_WORKERS`](super::MAX_WORKERS) workers were asked for
    /// ([`ErrorKind::InvalidInput`](std::io::ErrorKind::InvalidInput)).
    ///
    /// ```
    /// let rt = fibra::Runtime::builder().workers(2).build()?;
    /// assert_eq!(rt.block_on(async { "ok" }), "ok");
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn build(self) -> std::io::Result<Runtime> {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let n = match self.flavor {
            Flavor::CurrentThread => 1,
            Flavor::MultiThread => self.workers.unwrap_or(cores.min(MAX_WORKERS)),
        };
        if let Some(asked) = self.workers.filter(|&w| w > MAX_WORKERS) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "fibra: {asked} workers asked for, at most {MAX_WORKERS} are supported \
                     (one per core is the default and usually best)"
                ),
            ));
        }
        let locals: Vec<LocalQueues> = (0..n)
            .map(|_| LocalQueues {
                spawned: Deque::new_lifo(),
                yielded: Deque::new_fifo(),
            })
            .collect();
        let shared = Arc::new(Shared {
            injector: Injector::new(),
            stealers: locals.iter().map(|q| q.spawned.stealer()).collect(),
            yield_stealers: locals.iter().map(|q| q.yielded.stealer()).collect(),
            parkers: (0..n).map(|_| Parker::default()).collect(),
            idle: Idle::new(n),
            tasks: Registry::new(),
            shutdown: AtomicBool::new(false),
            workers_stopped: AtomicBool::new(false),
            drain_lock: Mutex::new(()),
            heaps: (0..n).map(|_| super::task_alloc::Heap::new()).collect(),
            retained_woken: (0..n).map(|_| Default::default()).collect(),
            inboxes: (0..n).map(|_| Default::default()).collect(),
            workers_running: AtomicUsize::new(match self.flavor {
                Flavor::CurrentThread => 0,
                Flavor::MultiThread => n,
            }),
            drain_on_stop: AtomicBool::new(false),
            rescuable: self.flavor == Flavor::MultiThread && n > 1 && self.rescue_on(),
            watches: (0..n).map(|_| Default::default()).collect(),
            workers_ctx: (0..n)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            ticking: AtomicUsize::new(0),
            parasite_inflation: self.parasite_inflation,
            lock_tags: super::gather::TagBase::new(),
            io: std::sync::OnceLock::new(),
            #[cfg(feature = "metrics")]
            counters: (0..n).map(|_| Default::default()).collect(),
            #[cfg(feature = "metrics")]
            outside: Default::default(),
        });
        if shared.rescuable {
            super::rescue::prepare();
        }
        let mut rt = Runtime {
            shared: shared.clone(),
            flavor: self.flavor,
            threads: Vec::new(),
            ct_local: None,
        };
        if self.flavor == Flavor::CurrentThread {
            let local = locals.into_iter().next().expect("one local queue");
            rt.ct_local = Some(Mutex::new(Some(local)));
            return Ok(rt);
        }
        for (index, local) in locals.into_iter().enumerate() {
            let shared = shared.clone();
            let pin = self.pin_cores.then_some(index % cores);
            let mut b =
                crate::loom::thread::Builder::new().name(format!("{}-{index}", self.thread_name));
            if let Some(s) = self.stack_size {
                b = b.stack_size(s);
            }
            // On error, dropping `rt` stops the workers started so far.
            let t = b.spawn(move || {
                if let Some(core) = pin {
                    pin_to_core(core);
                }
                /// Counts the worker out when its thread ends, even by a
                /// panic (`Shared::worker_stopped`).
                struct Stopped(Arc<Shared>);
                impl Drop for Stopped {
                    fn drop(&mut self) {
                        self.0.worker_stopped();
                    }
                }
                let _stopped = Stopped(shared.clone());
                let ctx = WorkerCtx::new(shared, index, local);
                ctx.enter(|| ctx.run(|| false));
                // Leave `next` and `hot` in the stealable queues, where
                // shutdown finds them (a task not yet registered may be
                // there).
                drop(ctx.into_local());
            })?;
            rt.threads.push(t);
        }
        Ok(rt)
    }
}

impl Builder {
    /// Whether rescue is on: always, but under loom where a model may turn
    /// it on (`rescue`).
    #[inline]
    fn rescue_on(&self) -> bool {
        #[cfg(loom)]
        return self.rescue;
        #[cfg(not(loom))]
        true
    }
}

#[cfg(all(target_os = "linux", not(loom)))]
fn pin_to_core(core: usize) {
    // SAFETY: `cpu_set_t` is plain data; zeroed is the empty set, CPU_SET
    // writes within it for `core < CPU_SETSIZE`, and sched_setaffinity only
    // reads it. A failure (e.g. the core is not in our cgroup) is ignored:
    // pinning is an optimisation.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if core < libc::CPU_SETSIZE as usize {
            libc::CPU_SET(core, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
}

/// No pinning elsewhere, nor under loom (its threads are coroutines on
/// the model's own thread).
#[cfg(any(not(target_os = "linux"), loom))]
fn pin_to_core(_core: usize) {}
