//! `OnceCell`: a cell written once, by an async initializer that runs at
//! most once at a time; waiting for the value is an op.
//!
//! Built from two resources of this layer, with no protocol of its own: the
//! value is an [`IVar`] (written once, read lock-free, waited for with its
//! op), and initializers take turns through a [`Mutex`]. A caller that
//! finds the cell empty waits for whichever comes first, its turn to
//! initialize or the value (a choice of the two ops), so a caller never
//! waits for a turn it no longer needs.

use super::ivar::{GetRefOp, IVar};
use super::mutex::{Mutex, MutexGuard};
use crate::op::{Op, choose};
use std::fmt;
use std::future::Future;

/// A cell that is written once (tokio's `OnceCell`): by
/// [`set`](OnceCell::set), or by the first
/// [`get_or_init`](OnceCell::get_or_init) whose initializer finishes.
/// Initializers run one at a time: while one runs, other callers wait for
/// its value (or for their turn, if it is cancelled or fails). Waiting for
/// a value that someone else sets is an op ([`get_op`](OnceCell::get_op)),
/// so it composes with timeouts and every other op in a choice.
///
/// # Examples
///
/// ```
/// use fibra::OnceCell;
///
/// fibra::run(async {
///     let config = OnceCell::new();
///     let a = config.get_or_init(|| async { "loaded".to_string() }).await;
///     // Already set: the second initializer does not run.
///     let b = config.get_or_init(|| async { unreachable!() }).await;
///     assert_eq!((a.as_str(), b.as_str()), ("loaded", "loaded"));
/// });
/// ```
pub struct OnceCell<T> {
    value: IVar<T>,
    /// Held by the initializer running now.
    init: Mutex<()>,
}

/// What a caller that found the cell empty got first.
enum Turn<'a, T> {
    Init(MutexGuard<'a, ()>),
    Ready(&'a T),
}

impl<T> OnceCell<T> {
    /// An empty cell.
    ///
    /// ```
    /// let cell = fibra::OnceCell::<u8>::new();
    /// assert!(cell.get().is_none());
    /// ```
    pub fn new() -> Self {
        Self {
            value: IVar::new(),
            init: Mutex::new(()),
        }
    }

    /// The value, if the cell is set.
    ///
    /// ```
    /// let cell = fibra::OnceCell::new();
    /// cell.set(4).unwrap();
    /// assert_eq!(cell.get(), Some(&4));
    /// ```
    pub fn get(&self) -> Option<&T> {
        self.value.get_ref()
    }

    /// Whether the cell is set.
    ///
    /// ```
    /// let cell = fibra::OnceCell::new();
    /// assert!(!cell.initialized());
    /// cell.set(()).unwrap();
    /// assert!(cell.initialized());
    /// ```
    pub fn initialized(&self) -> bool {
        self.value.is_full()
    }

    /// Sets the value, waking everyone waiting for it. A cell is written
    /// once: if it is set already, the value comes back in `Err`. If an
    /// initializer is running, `set` wins; that initializer's value is
    /// dropped when it finishes, and its caller gets this one.
    ///
    /// ```
    /// let cell = fibra::OnceCell::new();
    /// assert_eq!(cell.set(1), Ok(()));
    /// assert_eq!(cell.set(2), Err(2));
    /// ```
    pub fn set(&self, value: T) -> Result<(), T> {
        self.value.put(value)
    }

    /// The op of waiting for the value, set by someone else (`set` or an
    /// initializer): commits once the cell is set, yielding `&T`. It runs
    /// no initializer.
    ///
    /// ```
    /// use fibra::{Op, OnceCell, choose, time::after};
    /// use std::time::Duration;
    ///
    /// let cell = OnceCell::new();
    /// let got = choose((
    ///     cell.get_op().wrap(|v: &u32| Some(*v)),
    ///     after(Duration::from_millis(10)).wrap(|()| None),
    /// ))
    /// .perform();
    /// assert_eq!(got, None);
    /// cell.set(9).unwrap();
    /// assert_eq!(*cell.get_op().perform(), 9);
    /// ```
    pub fn get_op(&self) -> GetRefOp<'_, T> {
        self.value.get_ref_op()
    }

    /// Waits until the cell is set (by someone else) and returns the value.
    ///
    /// ```
    /// # fibra::run(async {
    /// let cell = std::sync::Arc::new(fibra::OnceCell::new());
    /// let setter = fibra::spawn({
    ///     let cell = cell.clone();
    ///     async move { cell.set("v").unwrap() }
    /// });
    /// assert_eq!(*cell.wait().await, "v");
    /// setter.await.unwrap();
    /// # });
    /// ```
    pub async fn wait(&self) -> &T {
        self.get_op().await
    }

    /// Waits until the cell is set, parking the OS thread.
    ///
    /// # Panics
    ///
    /// On a fibra worker thread (use `.await` there).
    ///
    /// ```
    /// let cell = fibra::OnceCell::new();
    /// cell.set(1).unwrap();
    /// assert_eq!(*cell.wait_blocking(), 1);
    /// ```
    pub fn wait_blocking(&self) -> &T {
        self.get_op().perform()
    }

    /// The value, initializing the cell with `init` if it is empty.
    /// Initializers run one at a time: a caller that finds another running
    /// waits for its value; if that one is cancelled (its future dropped),
    /// the next caller in line runs its own.
    ///
    /// ```
    /// # fibra::run(async {
    /// let cell = fibra::OnceCell::new();
    /// assert_eq!(*cell.get_or_init(|| async { 1 }).await, 1);
    /// assert_eq!(*cell.get_or_init(|| async { 2 }).await, 1);
    /// # });
    /// ```
    pub async fn get_or_init<F, Fut>(&self, init: F) -> &T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        match self
            .get_or_try_init(|| async { Ok::<T, std::convert::Infallible>(init().await) })
            .await
        {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }

    /// The value, initializing the cell with `init` if it is empty; an
    /// error from `init` leaves the cell empty (the next caller in line
    /// runs its own initializer) and is returned.
    ///
    /// ```
    /// # fibra::run(async {
    /// let cell = fibra::OnceCell::new();
    /// let failed = cell.get_or_try_init(|| async { Err::<u8, _>("no") }).await;
    /// assert_eq!(failed, Err("no"));
    /// assert_eq!(cell.get_or_try_init(|| async { Ok::<_, ()>(5) }).await, Ok(&5));
    /// # });
    /// ```
    pub async fn get_or_try_init<E, F, Fut>(&self, init: F) -> Result<&T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if let Some(v) = self.get() {
            return Ok(v);
        }
        let turn = choose((
            self.init.lock_op().wrap(Turn::Init),
            self.value.get_ref_op().wrap(Turn::Ready),
        ))
        .await;
        let _turn = match turn {
            Turn::Ready(v) => return Ok(v),
            Turn::Init(guard) => guard,
        };
        // The initializer before us may have finished just before we got
        // our turn.
        if let Some(v) = self.get() {
            return Ok(v);
        }
        let value = init().await?;
        // `Err`: a `set` won meanwhile; ours is dropped.
        let _ = self.value.put(value);
        Ok(self.get().expect("the cell was just set"))
    }

    /// The value, consuming the cell.
    ///
    /// ```
    /// let cell = fibra::OnceCell::new();
    /// cell.set(2).unwrap();
    /// assert_eq!(cell.into_inner(), Some(2));
    /// ```
    pub fn into_inner(self) -> Option<T> {
        self.value.into_inner()
    }

    /// Takes the value out, leaving the cell empty.
    ///
    /// ```
    /// let mut cell = fibra::OnceCell::new();
    /// cell.set(2).unwrap();
    /// assert_eq!(cell.take(), Some(2));
    /// assert!(cell.get().is_none());
    /// ```
    pub fn take(&mut self) -> Option<T> {
        std::mem::take(self).into_inner()
    }
}

impl<T> Default for OnceCell<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> From<T> for OnceCell<T> {
    /// A cell set to `value`.
    fn from(value: T) -> Self {
        let cell = Self::new();
        if cell.set(value).is_err() {
            unreachable!("a new cell is empty");
        }
        cell
    }
}

impl<T: fmt::Debug> fmt::Debug for OnceCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.get() {
            Some(v) => f.debug_tuple("OnceCell").field(v).finish(),
            None => f.write_str("OnceCell(<empty>)"),
        }
    }
}
