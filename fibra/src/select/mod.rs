//! Synchronous multiplexing: [`select!`](crate::select!) and
//! [`select_biased!`](crate::select_biased!) (with `else` and `if` guards),
//! their blocking forms for OS threads, AND/OR waiting ([`WaitUntil`]) and
//! [`choose_all`].
//!
//! The macros are sugar over [`choose`](crate::choose) /
//! [`choose_biased`](crate::choose_biased): every clause is an op, so any op
//! works in them — channel and mailbox ops, timeouts, joins, semaphore and
//! ivar ops — and the whole op protocol applies: one clause commits, the
//! others are withdrawn, nothing is lost, and no clause's lock is held while
//! another is tried (Go's `select` locks every channel at once).
//!
//! For a clause set whose size is known only at run time, choose over a
//! `Vec` of ops (or of [`BoxOp`](crate::BoxOp)s for mixed types): see
//! [`choose`](crate::choose).

mod choose_all;
mod clause;
mod clause_cell;
mod pred;
mod wait_until;
mod when;

#[cfg(all(test, loom))]
mod loom_models;

pub use choose_all::{ChooseAll, choose_all};
#[doc(hidden)]
pub use clause::{ClauseOp, IrrefutablePattern, clause_op, refutable_pattern};
pub use wait_until::{Clause, Pred, WaitUntil};
pub use when::{When, when};
#[doc(hidden)]
pub type NoneTag = Option<()>;

/// Waits for the first of several ops to commit and runs that clause's body
/// (a fair choice: when several are ready, one is picked at random).
///
/// ```text
/// select! {
///     pattern = op => body,
///     pattern = op, if condition => body,   // clause enabled only if condition
///     ...
///     else => body,                         // optional: runs if nothing is ready now
/// }
/// ```
///
/// Each `op` is an expression yielding an op (`rx.recv_op()`,
/// `tx.send_op(v)`, `fibra::time::after(d)`, `handle.join_op()`,
/// `sem.acquire_op()`, …); its result is bound to `pattern`, which must be
/// irrefutable (match inside the body instead). A clause whose `if`
/// condition is false is not built at all. With `else`, the statement never
/// waits: if no clause can commit now, the `else` body runs. Without `else`,
/// at least one clause must be enabled (the statement panics otherwise:
/// it would wait forever). At most 12 clauses; for more, or a number known
/// only at run time, use [`choose`](crate::choose) over a `Vec`.
///
/// A future of another library (a tokio timer, a socket read) becomes a
/// clause through [`from_future`](crate::op::from_future), or
/// [`FutureCell`](crate::op::FutureCell) to keep it, and its output, from
/// one `select!` to the next.
///
/// A send clause made with [`send_op_from`](crate::Sender::send_op_from)
/// borrows its value from a slot the caller owns: if another clause wins
/// (or `else` runs), the value is back in the slot when the body runs.
/// (A [`send_op`](crate::Sender::send_op) owns its value, which is dropped
/// with the losing op.)
///
/// `select!` must be used inside async code (it `.await`s); on an OS thread
/// use [`select_blocking!`](crate::select_blocking!). Bodies run in the
/// enclosing function: `break`, `continue`, `return` and `?` work as usual.
///
/// # Examples
///
/// ```
/// use fibra::{bounded, select, time::after};
/// use std::time::Duration;
///
/// # fibra::run(async {
/// let (tx, rx) = bounded::<u32>(1);
/// let (_quit_tx, quit) = bounded::<()>(1);
/// tx.send(7).await.unwrap();
/// let mut got = Vec::new();
/// loop {
///     select! {
///         v = rx.recv_op() => got.push(v.unwrap()),
///         _ = quit.recv_op() => break,
///         () = after(Duration::from_millis(5)) => break,
///     }
/// }
/// assert_eq!(got, [7]);
/// # });
/// ```
///
/// Guards and `else`:
///
/// ```
/// use fibra::{bounded, select};
///
/// # fibra::run(async {
/// let (tx, rx) = bounded::<u32>(4);
/// let mut queue = vec![1, 2];
/// let sent = select! {
///     r = tx.send_op(queue[0]), if !queue.is_empty() => {
///         r.unwrap();
///         queue.remove(0);
///         true
///     }
///     else => false,
/// };
/// assert!(sent);
/// assert_eq!(rx.try_recv(), Ok(1));
/// # });
/// ```
///
/// Clauses take ops, not futures; this does not compile:
///
/// ```compile_fail,E0277
/// # async fn f(rx: fibra::Receiver<u8>) {
/// fibra::select! {
///     v = rx.recv() => {}   // `recv()` is an async fn: use `recv_op()`
/// }
/// # }
/// ```
///
/// nor `sleep(d)` (a future: its op is `after(d)`), nor another library's
/// future (wrap it in [`from_future`](crate::op::from_future)); the error
/// points at the clause and says so:
///
/// ```compile_fail,E0277
/// # async fn f(rx: fibra::Receiver<u8>) {
/// fibra::select! {
///     v = rx.recv_op() => {}
///     () = fibra::time::sleep(std::time::Duration::from_secs(1)) => {}
/// }
/// # }
/// ```
///
/// Patterns must be irrefutable: once a clause's op commits, its result is
/// taken (a message received, a permit acquired), and a pattern that
/// refused it would discard it (tokio's `select!` disables such a branch
/// and loses the value). Bind the whole result and match in the body.
/// `Ok(..)`, `Err(..)`, `Some(..)`, `None` and literals are reported with
/// that advice; other refutable patterns get the compiler's E0005.
///
/// ```compile_fail,E0277
/// # async fn f(rx: fibra::Receiver<u8>) {
/// fibra::select! {
///     Ok(v) = rx.recv_op() => {}   // write `r = rx.recv_op() => match r { .. }`
/// }
/// # }
/// ```
///
/// ```compile_fail,E0005
/// # enum Msg { A(u8), B }
/// # async fn f(rx: fibra::Receiver<Msg>) {
/// fibra::select! {
///     Ok(Msg::A(v)) | Err(_) = rx.recv_op() => {}
/// }
/// # }
/// ```
///
/// A `select!` needs a clause, and `else` comes last:
///
/// ```compile_fail
/// # async fn f() {
/// fibra::select! {}
/// # }
/// ```
///
/// ```compile_fail
/// # async fn f(rx: fibra::Receiver<u8>) {
/// fibra::select! {
///     else => {},
///     v = rx.recv_op() => {},
/// }
/// # }
/// ```
#[macro_export]
macro_rules! select {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(@start choose await; $($tokens)*)
    };
}

/// Like [`select!`](crate::select!), but the first ready clause in written
/// order wins (priority; Cforall's and Kotlin's `select`): use it to put a
/// control channel first.
///
/// ```
/// use fibra::{bounded, select_biased};
///
/// # fibra::run(async {
/// let (ctl_tx, ctl) = bounded::<&str>(1);
/// let (data_tx, data) = bounded::<u32>(1);
/// ctl_tx.send("stop").await.unwrap();
/// data_tx.send(1).await.unwrap();
/// let first = select_biased! {
///     c = ctl.recv_op() => c.unwrap().to_string(),
///     d = data.recv_op() => d.unwrap().to_string(),
/// };
/// assert_eq!(first, "stop"); // both ready: the first clause wins
/// # });
/// ```
#[macro_export]
macro_rules! select_biased {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(@start choose_biased await; $($tokens)*)
    };
}

/// [`select!`](crate::select!) for OS threads: parks the thread instead of
/// awaiting. Without `else` it panics on a fibra worker thread (use
/// `select!` there); with `else` it never waits, so it works anywhere.
///
/// ```
/// use fibra::{bounded, select_blocking, time::after};
/// use std::time::Duration;
///
/// let (tx, rx) = bounded::<u32>(1);
/// std::thread::spawn(move || tx.send_blocking(3).unwrap());
/// let got = select_blocking! {
///     v = rx.recv_op() => v.ok(),
///     () = after(Duration::from_secs(10)) => None,
/// };
/// assert_eq!(got, Some(3));
/// ```
#[macro_export]
macro_rules! select_blocking {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(@start choose perform; $($tokens)*)
    };
}

/// [`select_biased!`](crate::select_biased!) for OS threads: parks the
/// thread instead of awaiting.
///
/// ```
/// use fibra::{always, select_biased_blocking};
///
/// let got = select_biased_blocking! {
///     a = always(1) => a,
///     b = always(2) => b,
/// };
/// assert_eq!(got, 1);
/// ```
#[macro_export]
macro_rules! select_biased_blocking {
    ($($tokens:tt)*) => {
        $crate::__select_parse!(@start choose_biased perform; $($tokens)*)
    };
}

/// The clause parser behind the `select` macros (a token muncher): turns
/// each clause into `[pattern] [op] [condition] [body]` and hands the list
/// to `__select_expand!`. Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_parse {
    (@start $how:ident $mode:ident; ) => {
        ::core::compile_error!("select! needs at least one clause: `pattern = op => body`")
    };
    (@start $how:ident $mode:ident; else => $($rest:tt)*) => {
        ::core::compile_error!("select! needs at least one clause before `else`")
    };
    (@start $how:ident $mode:ident; $($tokens:tt)*) => {
        $crate::__select_parse!(@clauses $how $mode []; $($tokens)*)
    };

    // Each clause first meets the refutable-pattern checks (`@clauses`),
    // then is parsed (`@clause`), which comes back to `@clauses` for the
    // next one.

    // Patterns that are refutable whatever the op: `Ok(..)`, `Err(..)`,
    // `Some(..)`, `None`, literals. Reported at the pattern, with why and
    // what to write instead (others get the compiler's own E0005).
    (@clauses $how:ident $mode:ident [$($c:tt)*]; $tag:ident $args:tt = $($rest:tt)*) => {
        $crate::__select_parse!(@refutable $tag $tag, [$how $mode [$($c)*]] $tag $args = $($rest)*)
    };
    (@clauses $how:ident $mode:ident [$($c:tt)*]; $tag:ident = $($rest:tt)*) => {
        $crate::__select_parse!(@refutable $tag $tag, [$how $mode [$($c)*]] $tag = $($rest)*)
    };
    (@clauses $how:ident $mode:ident [$($c:tt)*]; $lit:literal = $($rest:tt)*) => {{
        $crate::select::refutable_pattern($lit);
        ::core::unreachable!()
    }};
    (@refutable Ok $t:expr, [$($state:tt)*] $($rest:tt)*) => {{
        $crate::select::refutable_pattern($t);
        ::core::unreachable!()
    }};
    (@refutable Err $t:expr, [$($state:tt)*] $($rest:tt)*) => {{
        $crate::select::refutable_pattern($t);
        ::core::unreachable!()
    }};
    (@refutable Some $t:expr, [$($state:tt)*] $($rest:tt)*) => {{
        $crate::select::refutable_pattern($t);
        ::core::unreachable!()
    }};
    (@refutable None $t:expr, [$($state:tt)*] $($rest:tt)*) => {{
        $crate::select::refutable_pattern::<$crate::select::NoneTag>($t);
        ::core::unreachable!()
    }};
    (@refutable $other:ident $t:ident, [$how:ident $mode:ident [$($c:tt)*]] $($rest:tt)*) => {
        $crate::__select_parse!(@clause $how $mode [$($c)*]; $($rest)*)
    };
    (@clauses $how:ident $mode:ident [$($c:tt)*]; $($rest:tt)*) => {
        $crate::__select_parse!(@clause $how $mode [$($c)*]; $($rest)*)
    };

    // `else`, last.
    (@clause $how:ident $mode:ident [$($c:tt)*]; else => $body:block $(,)?) => {
        $crate::__select_expand!($how $mode [$($c)*] [$body])
    };
    (@clause $how:ident $mode:ident [$($c:tt)*]; else => $body:expr $(,)?) => {
        $crate::__select_expand!($how $mode [$($c)*] [$body])
    };
    (@clause $how:ident $mode:ident [$($c:tt)*]; else => $($rest:tt)*) => {
        ::core::compile_error!("`else` must be the last clause of select!")
    };

    // A clause with a guard, block body (a comma after it is optional).
    (@clause $how:ident $mode:ident [$($c:tt)*];
        $p:pat = $op:expr, if $cond:expr => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!(@clauses $how $mode [$($c)* [[$p] [$op] [$cond] [$body]]]; $($rest)*)
    };
    (@clause $how:ident $mode:ident [$($c:tt)*];
        $p:pat = $op:expr, if $cond:expr => $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@clauses $how $mode [$($c)* [[$p] [$op] [$cond] [$body]]]; $($rest)*)
    };
    // A clause without a guard, block body.
    (@clause $how:ident $mode:ident [$($c:tt)*];
        $p:pat = $op:expr => $body:block, $($rest:tt)*) => {
        $crate::__select_parse!(@clauses $how $mode [$($c)* [[$p] [$op] [true] [$body]]]; $($rest)*)
    };
    (@clause $how:ident $mode:ident [$($c:tt)*];
        $p:pat = $op:expr => $body:block $($rest:tt)*) => {
        $crate::__select_parse!(@clauses $how $mode [$($c)* [[$p] [$op] [true] [$body]]]; $($rest)*)
    };
    // Expression bodies: followed by a comma, or last.
    (@clause $how:ident $mode:ident [$($c:tt)*];
        $p:pat = $op:expr, if $cond:expr => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!(@clauses $how $mode [$($c)* [[$p] [$op] [$cond] [$body]]]; $($rest)*)
    };
    (@clause $how:ident $mode:ident [$($c:tt)*];
        $p:pat = $op:expr, if $cond:expr => $body:expr) => {
        $crate::__select_parse!(@clauses $how $mode [$($c)* [[$p] [$op] [$cond] [$body]]];)
    };
    (@clause $how:ident $mode:ident [$($c:tt)*];
        $p:pat = $op:expr => $body:expr, $($rest:tt)*) => {
        $crate::__select_parse!(@clauses $how $mode [$($c)* [[$p] [$op] [true] [$body]]]; $($rest)*)
    };
    (@clause $how:ident $mode:ident [$($c:tt)*];
        $p:pat = $op:expr => $body:expr) => {
        $crate::__select_parse!(@clauses $how $mode [$($c)* [[$p] [$op] [true] [$body]]];)
    };

    // All clauses read, no `else`.
    (@clause $how:ident $mode:ident [$($c:tt)*]; ) => {
        $crate::__select_expand!($how $mode [$($c)*] [])
    };
    (@clause $how:ident $mode:ident [$($c:tt)*]; $($rest:tt)*) => {
        ::core::compile_error!(
            "select! clauses are `pattern = op => body`, optionally `pattern = op, if condition => body`, and a last `else => body`"
        )
    };
}

/// Expands parsed clauses. Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_expand {
    ($how:ident $mode:ident [$([[$p:pat] [$op:expr] [$cond:expr] [$body:expr]])*] [$($else:expr)?]) => {
        $crate::__select_number!(
            $how $mode [$($else)?]
            [_0 _1 _2 _3 _4 _5 _6 _7 _8 _9 _10 _11]
            []
            $([[$p] [$op] [$cond] [$body]])*
        )
    };
}

/// Gives each clause a variant name. Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_number {
    ($how:ident $mode:ident [$($else:expr)?] [$($free:ident)*] [$($done:tt)*]) => {
        $crate::__select_emit!($how $mode [$($else)?] $($done)*)
    };
    ($how:ident $mode:ident [$($else:expr)?] [$name:ident $($free:ident)*] [$($done:tt)*]
        [[$p:pat] [$op:expr] [$cond:expr] [$body:expr]] $($rest:tt)*) => {
        $crate::__select_number!(
            $how $mode [$($else)?] [$($free)*]
            [$($done)* [$name [$p] [$op] [$cond] [$body]]]
            $($rest)*
        )
    };
    ($how:ident $mode:ident [$($else:expr)?] [] [$($done:tt)*] $($rest:tt)+) => {
        ::core::compile_error!(
            "select! takes at most 12 clauses; for more, choose over a `Vec` of ops (`fibra::choose`)"
        )
    };
}

/// Emits the choice and the dispatch on its result. Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_emit {
    ($how:ident $mode:ident [$($else:expr)?] $([$name:ident [$p:pat] [$op:expr] [$cond:expr] [$body:expr]])*) => {{
        #[allow(non_camel_case_types, dead_code)]
        enum __SelectOut<$($name),*> { $($name($name)),* }
        // Each condition once, in order, before any op is built.
        $( let $name: bool = $cond; )*
        let __any_enabled = false $(|| $name)*;
        let __choice = $crate::$how((
            $(
                $crate::Op::wrap(
                    $crate::select::When::new(if $name { ::core::option::Option::Some($crate::select::clause_op($op)) } else { ::core::option::Option::None }),
                    __SelectOut::$name,
                ),
            )*
        ));
        $crate::__select_run!($mode __choice __any_enabled [$($else)?] $([$name [$p] [$body]])*)
    }};
}

/// Performs the choice (await / perform / try for `else`) and dispatches.
/// Not public API.
#[doc(hidden)]
#[macro_export]
macro_rules! __select_run {
    ($mode:ident $choice:ident $any:ident [$else:expr] $([$name:ident [$p:pat] [$body:expr]])*) => {{
        let _ = $any;
        // The choice is dropped before `else` runs: a losing
        // `send_op_from` puts its value back in the caller's slot, which
        // the `else` body may then use.
        match $crate::Op::try_perform($choice).map_err(::core::mem::drop) {
            ::core::result::Result::Ok(__out) => match __out {
                $(__SelectOut::$name(__v) => { let $p = __v; $body })*
            },
            ::core::result::Result::Err(()) => $else,
        }
    }};
    (await $choice:ident $any:ident [] $([$name:ident [$p:pat] [$body:expr]])*) => {{
        if !$any {
            ::core::panic!("select!: every clause is disabled by its `if` condition and there is no `else`");
        }
        match $choice.await {
            $(__SelectOut::$name(__v) => { let $p = __v; $body })*
        }
    }};
    (perform $choice:ident $any:ident [] $([$name:ident [$p:pat] [$body:expr]])*) => {{
        if !$any {
            ::core::panic!("select!: every clause is disabled by its `if` condition and there is no `else`");
        }
        match $crate::Op::perform($choice) {
            $(__SelectOut::$name(__v) => { let $p = __v; $body })*
        }
    }};
}
