//! Channel errors. Every error of a send carries the value back.

use std::fmt;

/// A send failed because every receiver is gone; the value is returned.
///
/// ```
/// use fibra::SendError;
///
/// let (tx, rx) = fibra::channel();
/// drop(rx);
/// assert_eq!(tx.send_blocking("x"), Err(SendError("x")));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// let (tx, rx) = fibra::channel();
    /// drop(rx);
    /// assert_eq!(tx.send_blocking(7).unwrap_err().into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a channel whose receivers are all gone")
    }
}

impl<T> std::error::Error for SendError<T> {}

/// Why [`Sender::try_send`](crate::Sender::try_send) did not send; the value
/// is returned either way.
///
/// ```
/// use fibra::TrySendError;
///
/// let (tx, _rx) = fibra::bounded(0);
/// assert_eq!(tx.try_send(1), Err(TrySendError::Full(1)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrySendError<T> {
    /// Nobody could take the value now: the buffer is full, or (rendezvous)
    /// no receiver is waiting.
    Full(T),
    /// Every receiver is gone.
    Disconnected(T),
}

impl<T> TrySendError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// let (tx, _rx) = fibra::channel();
    /// assert_eq!(tx.try_send("x").unwrap_err().into_inner(), "x");
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Disconnected(v) => v,
        }
    }

    /// Whether the send failed because nobody could take the value now.
    ///
    /// ```
    /// let (tx, _rx) = fibra::channel();
    /// assert!(tx.try_send(1).unwrap_err().is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// Whether the send failed because every receiver is gone.
    ///
    /// ```
    /// let (tx, rx) = fibra::channel();
    /// drop(rx);
    /// assert!(tx.try_send(1).unwrap_err().is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, TrySendError::Disconnected(_))
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("no receiver could take the value now"),
            TrySendError::Disconnected(_) => {
                f.write_str("sending on a channel whose receivers are all gone")
            }
        }
    }
}

impl<T> std::error::Error for TrySendError<T> {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> Self {
        TrySendError::Disconnected(e.0)
    }
}

/// A receive failed because every sender is gone and the channel is empty.
///
/// ```
/// let (tx, rx) = fibra::channel::<u8>();
/// drop(tx);
/// assert_eq!(rx.recv_blocking(), Err(fibra::RecvError));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on an empty channel whose senders are all gone")
    }
}

impl std::error::Error for RecvError {}

/// Why [`Receiver::try_recv`](crate::Receiver::try_recv) returned nothing.
///
/// ```
/// use fibra::TryRecvError;
///
/// let (tx, rx) = fibra::channel::<u8>();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing to receive now.
    Empty,
    /// Every sender is gone and the channel is empty.
    Disconnected,
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("nothing to receive now"),
            TryRecvError::Disconnected => {
                f.write_str("receiving on an empty channel whose senders are all gone")
            }
        }
    }
}

impl std::error::Error for TryRecvError {}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        TryRecvError::Disconnected
    }
}

/// Why [`Sender::send_timeout`](crate::Sender::send_timeout) did not send;
/// the value is returned either way.
///
/// ```
/// use fibra::SendTimeoutError;
/// use std::time::Duration;
///
/// let (tx, rx) = fibra::bounded::<u8>(1);
/// tx.try_send(1).unwrap(); // full now
/// let err = tx.send_timeout_blocking(2, Duration::from_millis(1)).unwrap_err();
/// assert!(matches!(err, SendTimeoutError::Timeout(2)));
/// drop(rx);
/// let err = tx.send_timeout_blocking(3, Duration::from_millis(1)).unwrap_err();
/// assert!(matches!(err, SendTimeoutError::Disconnected(3)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SendTimeoutError<T> {
    /// No receiver took the value (or no room opened) in time.
    Timeout(T),
    /// Every receiver is gone.
    Disconnected(T),
}

impl<T> SendTimeoutError<T> {
    /// The value that was not sent.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (tx, _rx) = fibra::channel::<&str>();
    /// let err = tx.send_timeout_blocking("late", Duration::from_millis(1)).unwrap_err();
    /// assert_eq!(err.into_inner(), "late");
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v) | SendTimeoutError::Disconnected(v) => v,
        }
    }

    /// Whether the time ran out.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let (tx, _rx) = fibra::channel::<u8>();
    /// assert!(tx.send_timeout_blocking(1, Duration::ZERO).unwrap_err().is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendTimeoutError::Timeout(_))
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("Timeout(..)"),
            SendTimeoutError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("no receiver took the value in time"),
            SendTimeoutError::Disconnected(_) => {
                f.write_str("sending on a channel whose receivers are all gone")
            }
        }
    }
}

impl<T> std::error::Error for SendTimeoutError<T> {}

/// Why a receive with a time limit returned nothing:
/// [`Receiver::recv_timeout`](crate::Receiver::recv_timeout) and
/// [`Mailbox::recv_timeout`](crate::Mailbox::recv_timeout).
///
/// ```
/// use fibra::RecvTimeoutError;
/// use std::time::Duration;
///
/// let (tx, rx) = fibra::channel::<u8>();
/// let t = Duration::from_millis(1);
/// assert_eq!(rx.recv_timeout_blocking(t), Err(RecvTimeoutError::Timeout));
/// drop(tx);
/// assert_eq!(rx.recv_timeout_blocking(t), Err(RecvTimeoutError::Disconnected));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvTimeoutError {
    /// Nothing arrived in time.
    Timeout,
    /// Nothing is left to receive and nothing can come any more (every
    /// sender, or every address of a mailbox, is gone).
    Disconnected,
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out waiting for a value"),
            RecvTimeoutError::Disconnected => {
                f.write_str("nothing left to receive and every sender is gone")
            }
        }
    }
}

impl std::error::Error for RecvTimeoutError {}

impl From<RecvError> for RecvTimeoutError {
    fn from(_: RecvError) -> Self {
        RecvTimeoutError::Disconnected
    }
}
