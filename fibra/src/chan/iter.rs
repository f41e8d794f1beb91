//! Blocking iterators over a [`Receiver`], for OS threads (crossbeam's
//! `iter`, `try_iter` and `into_iter`).

use super::Receiver;
use std::fmt;

impl<T> Receiver<T> {
    /// An iterator that waits for each value, parking the OS thread, and
    /// ends once every sender is gone and the channel is empty.
    ///
    /// # Panics
    ///
    /// Its `next` panics on a fibra runtime worker thread (it blocks); in
    /// async code use the `Stream` impl or [`recv`](Self::recv).
    ///
    /// ```
    /// let (tx, rx) = fibra::unbounded();
    /// std::thread::spawn(move || {
    ///     for i in 1..=3 {
    ///         tx.send_blocking(i).unwrap();
    ///     }
    /// });
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2, 3]);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the values available now, without waiting.
    ///
    /// ```
    /// let (tx, rx) = fibra::unbounded();
    /// tx.try_send(1).unwrap();
    /// tx.try_send(2).unwrap();
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
    /// assert_eq!(rx.try_iter().next(), None); // tx is alive, but nothing now
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }
}

/// A blocking iterator over a [`Receiver`]'s values: made by
/// [`Receiver::iter`] (or `for v in &rx`).
///
/// ```
/// let (tx, rx) = fibra::bounded(2);
/// tx.try_send('a').unwrap();
/// drop(tx);
/// let mut it: fibra::chan::Iter<'_, char> = rx.iter();
/// assert_eq!(it.next(), Some('a'));
/// assert_eq!(it.next(), None);
/// ```
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv_blocking().ok()
    }
}

impl<T> fmt::Debug for Iter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").finish_non_exhaustive()
    }
}

/// An iterator over the values a [`Receiver`] has now: made by
/// [`Receiver::try_iter`].
///
/// ```
/// let (_tx, rx) = fibra::bounded::<u8>(2);
/// let mut it: fibra::chan::TryIter<'_, u8> = rx.try_iter();
/// assert_eq!(it.next(), None);
/// ```
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

impl<T> fmt::Debug for TryIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TryIter").finish_non_exhaustive()
    }
}

/// A blocking iterator that owns its [`Receiver`]: made by
/// `rx.into_iter()` (or `for v in rx`).
///
/// ```
/// let (tx, rx) = fibra::unbounded();
/// tx.try_send(1).unwrap();
/// drop(tx);
/// let it: fibra::chan::IntoIter<i32> = rx.into_iter();
/// assert_eq!(it.collect::<Vec<_>>(), [1]);
/// ```
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv_blocking().ok()
    }
}

impl<T> fmt::Debug for IntoIter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter").finish_non_exhaustive()
    }
}

/// `for v in &rx`: see [`Receiver::iter`].
///
/// ```
/// let (tx, rx) = fibra::unbounded();
/// tx.try_send(1).unwrap();
/// drop(tx);
/// for v in &rx {
///     assert_eq!(v, 1);
/// }
/// ```
impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

/// `for v in rx`: see [`Receiver::iter`].
///
/// ```
/// let (tx, rx) = fibra::unbounded();
/// tx.try_send(1).unwrap();
/// drop(tx);
/// let all: Vec<i32> = rx.into_iter().collect();
/// assert_eq!(all, [1]);
/// ```
impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}
