//! The run's reference donation (module docs) must keep every count
//! exact: a task's memory (which holds the runtime's `Shared`) is freed
//! once all its references are gone, and never before (the latter is
//! what the AddressSanitizer run of the whole suite checks).

use crate::Runtime;
use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

/// Runs `f` on both flavours and checks that, once the runtime and
/// everything `f` returns are dropped, nothing holds the runtime's
/// shared state: no task reference leaked.
fn no_reference_leaks(f: impl Fn(&Runtime) -> Vec<Waker>) {
    for rt in [
        Runtime::builder().current_thread().build().unwrap(),
        Runtime::builder().workers(2).build().unwrap(),
    ] {
        let shared = Arc::downgrade(&rt.shared);
        let stashed = f(&rt);
        drop(rt);
        drop(stashed);
        assert!(
            shared.upgrade().is_none(),
            "a task reference leaked (the runtime's shared state is still alive)"
        );
    }
}

/// Waits `n` times on a rendezvous channel, each wait cloning the
/// waker into a record: from the second run on, every run donates.
#[test]
fn donated_references_of_waiting_tasks_are_all_returned() {
    no_reference_leaks(|rt| {
        let (tx, rx) = crate::channel::<u32>();
        let sum = rt.block_on(async move {
            let rx_task = crate::spawn(async move {
                let mut sum = 0;
                while let Ok(v) = rx.recv().await {
                    sum += v;
                }
                sum
            });
            for i in 0..1000 {
                tx.send(i).await.unwrap();
            }
            drop(tx);
            rx_task.await.unwrap()
        });
        assert_eq!(sum, 999 * 1000 / 2);
        Vec::new()
    });
}

/// Runs that could donate but clone no waker (a task woken again and
/// again through one clone kept elsewhere) keep their reference.
#[test]
fn runs_that_clone_no_waker_keep_their_reference() {
    no_reference_leaks(|rt| {
        let polls = rt.block_on(async {
            let kept: Arc<Mutex<Option<Waker>>> = Arc::default();
            let waker_slot = kept.clone();
            let target = crate::spawn(async move {
                let mut polls = 0;
                poll_fn(|cx| {
                    polls += 1;
                    if polls == 1 {
                        *waker_slot.lock().unwrap() = Some(cx.waker().clone());
                    }
                    if polls == 100 {
                        return Poll::Ready(polls);
                    }
                    Poll::Pending
                })
                .await
            });
            let waker = loop {
                if let Some(w) = kept.lock().unwrap().take() {
                    break w;
                }
                crate::yield_now().await;
            };
            while !target.is_finished() {
                waker.wake_by_ref();
                crate::yield_now().await;
            }
            target.await.unwrap()
        });
        assert_eq!(polls, 100);
        Vec::new()
    });
}

/// A poll that clones its waker and wakes it (by value) before
/// returning `Pending`: the donated clone is consumed during the run,
/// which must then queue the task with a reference of its own.
#[test]
fn a_task_woken_by_its_donated_clone_during_the_poll_is_requeued() {
    no_reference_leaks(|rt| {
        let polls = rt.block_on(async {
            crate::spawn(async {
                let mut polls = 0;
                poll_fn(|cx| {
                    polls += 1;
                    if polls == 50 {
                        return Poll::Ready(polls);
                    }
                    // The clone is the point: it takes the donation.
                    #[allow(clippy::waker_clone_wake)]
                    cx.waker().clone().wake();
                    Poll::Pending
                })
                .await
            })
            .await
            .unwrap()
        });
        assert_eq!(polls, 50);
        Vec::new()
    });
}

/// A poll that keeps a clone of its waker and then finishes (or
/// panics): the run takes a reference back to complete, and the clone
/// still holds its own (dropped after the runtime here).
#[test]
fn a_task_that_finishes_after_a_donation_keeps_counts_exact() {
    no_reference_leaks(|rt| {
        let stash = Arc::new(Mutex::new(Vec::new()));
        for panics in [false, true] {
            let stash = stash.clone();
            let out = rt.block_on(async move {
                crate::spawn(async move {
                    // Wait once so the task registers; from then on
                    // its runs donate.
                    crate::yield_now().await;
                    let (tx, rx) = crate::channel::<()>();
                    let waiter = crate::spawn(async move { rx.recv().await });
                    crate::yield_now().await;
                    poll_fn(|cx| {
                        stash.lock().unwrap().push(cx.waker().clone());
                        Poll::Ready(())
                    })
                    .await;
                    tx.send(()).await.unwrap();
                    waiter.await.unwrap().unwrap();
                    assert!(!panics, "a panic after a donation");
                })
                .await
            });
            assert_eq!(out.is_err(), panics);
        }
        std::mem::take(&mut *stash.lock().unwrap())
    });
}

/// A parasite's body of kind `K` (one of the consts below): one layout,
/// a type (and so a task vtable) per kind.
struct Job<const K: u8> {
    i: u64,
    /// What a `WAITS` job waits for.
    wait: Option<std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>>>,
    /// Where a `CLONES` job keeps a clone of its waker.
    stash: Option<Arc<Mutex<Vec<Waker>>>>,
    /// Counts a `WAITS` job's polls.
    polls: Option<Arc<std::sync::atomic::AtomicUsize>>,
}

/// Finishes in its first poll.
const INLINE: u8 = 0;
/// Wakes itself during its first poll, then finishes in it.
const WAKES: u8 = 1;
/// Waits for its `wait`.
const WAITS: u8 = 2;
/// Keeps a clone of its waker, then finishes in its first poll.
const CLONES: u8 = 3;

impl<const K: u8> Job<K> {
    fn new(i: u64) -> Self {
        Self {
            i,
            wait: None,
            stash: None,
            polls: None,
        }
    }
}

impl<const K: u8> std::future::Future for Job<K> {
    type Output = u64;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<u64> {
        let i = self.i;
        match K {
            INLINE => Poll::Ready(i + 1),
            WAKES => {
                cx.waker().wake_by_ref();
                Poll::Ready(2 * i + 1)
            }
            WAITS => {
                let polls = self.polls.as_ref().unwrap();
                polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                self.wait.as_mut().unwrap().as_mut().poll(cx).map(|v| v + i)
            }
            _ => {
                let waker = cx.waker().clone();
                self.stash.as_ref().unwrap().lock().unwrap().push(waker);
                Poll::Ready(i)
            }
        }
    }
}

/// The size class of a task of `F` (`task_alloc.rs`).
fn task_class<F>() -> Option<usize>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    crate::rt::task_alloc::class_of(std::alloc::Layout::new::<super::Task<F>>())
}

/// A parasite that finishes inline leaves its block aside for this
/// worker's next one of its size class, which writes only the header's
/// state and vtable (`Task::spawn_eager`): parasites of four types of one
/// class, in turn, finishing inline, waking themselves during the inline
/// poll, waiting (and so running later through their own vtable,
/// registered, counted, on the runtime they were spawned on, polled once
/// more when their wait ends: no wake of the block's last parasite
/// lingers), or keeping a waker clone, each give their own output and
/// keep every count exact.
#[test]
fn parasites_in_a_block_kept_aside_are_whole() {
    let class = task_class::<Job<INLINE>>();
    assert!(class.is_some());
    assert_eq!(task_class::<Job<WAKES>>(), class);
    assert_eq!(task_class::<Job<WAITS>>(), class);
    assert_eq!(task_class::<Job<CLONES>>(), class);
    let n = 200u64;
    no_reference_leaks(|rt| {
        let stash = Arc::new(Mutex::new(Vec::new()));
        let kept = stash.clone();
        let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = polls.clone();
        let sum = rt.block_on(async move {
            let mut handles = Vec::new();
            let mut senders = Vec::new();
            for i in 0..n {
                handles.push(crate::spawn_eager(Job::<INLINE>::new(i)));
                handles.push(crate::spawn_eager(Job::<WAKES>::new(i)));
                let (tx, rx) = crate::channel::<u64>();
                senders.push(tx);
                let mut waits = Job::<WAITS>::new(i);
                waits.wait = Some(Box::pin(async move { rx.recv().await.unwrap() }));
                waits.polls = Some(counted.clone());
                handles.push(crate::spawn_eager(waits));
                let mut clones = Job::<CLONES>::new(i);
                clones.stash = Some(kept.clone());
                handles.push(crate::spawn_eager(clones));
            }
            for (i, tx) in (0..).zip(&senders) {
                tx.send(i).await.unwrap();
            }
            let mut sum = 0;
            for h in handles {
                sum += h.await.unwrap();
            }
            sum
        });
        // Per i: (i + 1) + (2i + 1) + (i + i) + i.
        assert_eq!(sum, 6 * (n * (n - 1) / 2) + 2 * n);
        assert_eq!(
            polls.load(std::sync::atomic::Ordering::Relaxed),
            2 * n as usize
        );
        std::mem::take(&mut *stash.lock().unwrap())
    });
}
