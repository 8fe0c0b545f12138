//! Why an operation failed, giving back the value where one was sent.

use std::error::Error;
use std::fmt;

/// `send` on a closed channel; holds the value that was not sent.
#[derive(PartialEq, Eq, Clone, Copy)]
pub struct SendError<T>(pub T);

/// `recv` on a channel that is closed and drained.
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub struct RecvError;

/// Why `nbsend` did not send; holds the value.
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum TrySendError<T> {
    /// No buffer space and no waiting receiver.
    Full(T),
    /// The channel is closed.
    Closed(T),
}

/// Why `nbrecv` received nothing.
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum TryRecvError {
    /// Nothing buffered and no waiting sender.
    Empty,
    /// The channel is closed and drained.
    Closed,
}

/// Why a timed send did not send; holds the value.
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum SendTimeoutError<T> {
    /// The deadline passed first.
    Timeout(T),
    /// The channel is closed.
    Closed(T),
}

/// Why a timed receive received nothing.
#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub enum RecvTimeoutError {
    /// The deadline passed first.
    Timeout,
    /// The channel is closed and drained.
    Closed,
}

impl<T> SendError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        self.0
    }

    /// Whether the channel was closed: always, the only reason a blocking send fails.
    pub fn is_closed(&self) -> bool {
        true
    }

    /// [`is_closed`](Self::is_closed), under crossbeam's and flume's name.
    pub fn is_disconnected(&self) -> bool {
        true
    }
}

impl RecvError {
    /// Whether the channel was closed (and drained): always, the only reason a blocking
    /// receive fails.
    pub fn is_closed(&self) -> bool {
        true
    }

    /// [`is_closed`](Self::is_closed), under crossbeam's and flume's name.
    pub fn is_disconnected(&self) -> bool {
        true
    }
}

impl TryRecvError {
    /// Whether nothing could be received without waiting, the channel being open.
    ///
    /// ```
    /// use chan::TryRecvError;
    /// assert!(TryRecvError::Empty.is_empty() && !TryRecvError::Empty.is_closed());
    /// assert!(TryRecvError::Closed.is_closed() && TryRecvError::Closed.is_disconnected());
    /// ```
    pub fn is_empty(&self) -> bool {
        matches!(self, TryRecvError::Empty)
    }

    /// Whether the channel was closed and drained.
    pub fn is_closed(&self) -> bool {
        matches!(self, TryRecvError::Closed)
    }

    /// [`is_closed`](Self::is_closed), under crossbeam's and flume's name.
    pub fn is_disconnected(&self) -> bool {
        self.is_closed()
    }
}

impl RecvTimeoutError {
    /// Whether the deadline passed first.
    ///
    /// ```
    /// use chan::RecvTimeoutError;
    /// assert!(RecvTimeoutError::Timeout.is_timeout());
    /// assert!(RecvTimeoutError::Closed.is_closed() && RecvTimeoutError::Closed.is_disconnected());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, RecvTimeoutError::Timeout)
    }

    /// Whether the channel was closed and drained.
    pub fn is_closed(&self) -> bool {
        matches!(self, RecvTimeoutError::Closed)
    }

    /// [`is_closed`](Self::is_closed), under crossbeam's and flume's name.
    pub fn is_disconnected(&self) -> bool {
        self.is_closed()
    }
}

impl<T> TrySendError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Closed(v) => v,
        }
    }

    /// Whether the channel was full.
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// Whether the channel was closed.
    pub fn is_closed(&self) -> bool {
        matches!(self, TrySendError::Closed(_))
    }

    /// [`is_closed`](Self::is_closed), under crossbeam's and flume's name.
    pub fn is_disconnected(&self) -> bool {
        self.is_closed()
    }
}

impl<T> SendTimeoutError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v) | SendTimeoutError::Closed(v) => v,
        }
    }

    /// Whether the deadline passed.
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendTimeoutError::Timeout(_))
    }

    /// Whether the channel was closed.
    pub fn is_closed(&self) -> bool {
        matches!(self, SendTimeoutError::Closed(_))
    }

    /// [`is_closed`](Self::is_closed), under crossbeam's and flume's name.
    pub fn is_disconnected(&self) -> bool {
        self.is_closed()
    }
}

// Debug without requiring `T: Debug`, as std and crossbeam do: the value is elided.
impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError { .. }")
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrySendError::Full(_) => "Full(..)",
            TrySendError::Closed(_) => "Closed(..)",
        })
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendTimeoutError::Timeout(_) => "Timeout(..)",
            SendTimeoutError::Closed(_) => "Closed(..)",
        })
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel")
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on a closed and empty channel")
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrySendError::Full(_) => "sending on a full channel",
            TrySendError::Closed(_) => "sending on a closed channel",
        })
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryRecvError::Empty => "receiving on an empty channel",
            TryRecvError::Closed => "receiving on a closed and empty channel",
        })
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendTimeoutError::Timeout(_) => "timed out sending on a channel",
            SendTimeoutError::Closed(_) => "sending on a closed channel",
        })
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecvTimeoutError::Timeout => "timed out receiving on a channel",
            RecvTimeoutError::Closed => "receiving on a closed and empty channel",
        })
    }
}

impl<T> Error for SendError<T> {}
impl Error for RecvError {}
impl<T> Error for TrySendError<T> {}
impl Error for TryRecvError {}
impl<T> Error for SendTimeoutError<T> {}
impl Error for RecvTimeoutError {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> Self {
        TrySendError::Closed(e.0)
    }
}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        TryRecvError::Closed
    }
}
