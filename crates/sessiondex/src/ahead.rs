//! Work run ahead of a loop on helper threads, taken back in the loop's order.
//!
//! A sync walks its candidates in order and decides for each whether it is rebuilt, and at
//! which tier; the rebuilds are most of a first sync and independent of each other. Before
//! the walk, the rebuilds it will most likely ask for are listed as jobs (position, tier);
//! helpers build them ahead, and the walk, when it reaches a rebuild, takes the helper's
//! result when the job matches what it decided, or builds it itself when there is no such
//! job or no helper has started it. While it waits for a helper, the walk builds a later job
//! itself. What the walk decides, and everything it writes, is the same with or without
//! helpers: a job only moves where a pure build runs.
//!
//! At most `limit` results are held (started or finished, not yet taken), and, unless it is
//! the only one, no job starts that would take the bytes held (each job's weight: its source
//! bytes) past `max_bytes`; results for positions the walk has passed are dropped. While the
//! walk builds a large session itself, helpers keep going on the next ones instead of
//! waiting after a few: with at most 4 results held, a build of 148 sessions of 8 KB to 8 MB
//! ran on 1.3-1.5 of two cores.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Jobs `(position, what, weight)` in ascending position, the build each runs, and what
/// helpers hold.
pub(crate) struct Ahead<T, R, F> {
    jobs: Vec<(usize, T, u64)>,
    build: F,
    limit: usize,
    max_bytes: u64,
    state: Mutex<State<R>>,
    changed: Condvar,
}

struct State<R> {
    /// The next job to start.
    next: usize,
    /// The walk's position: jobs before it are not wanted.
    pos: usize,
    /// Jobs started and not yet taken or dropped, and their weights.
    held: usize,
    held_bytes: u64,
    /// Finished jobs: job index -> result (`None`: the build panicked; the walk builds it).
    done: BTreeMap<usize, Option<R>>,
    stop: bool,
}

impl<T, R, F> Ahead<T, R, F>
where
    T: PartialEq + Sync,
    R: Send,
    F: Fn(usize, &T) -> R + Sync,
{
    /// `jobs` must be in ascending position, one per position.
    pub(crate) fn new(jobs: Vec<(usize, T, u64)>, limit: usize, max_bytes: u64, build: F) -> Self {
        debug_assert!(jobs.windows(2).all(|w| w[0].0 < w[1].0));
        Ahead {
            jobs,
            build,
            limit: limit.max(1),
            max_bytes,
            state: Mutex::new(State {
                next: 0,
                pos: 0,
                held: 0,
                held_bytes: 0,
                done: BTreeMap::new(),
                stop: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<R>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, st: MutexGuard<'a, State<R>>) -> MutexGuard<'a, State<R>> {
        self.changed
            .wait(st)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the next wanted job when fewer than `limit` are held.
    fn claim(&self, st: &mut State<R>) -> Option<usize> {
        while self.jobs.get(st.next).is_some_and(|j| j.0 < st.pos) {
            st.next += 1;
        }
        let weight = self.jobs.get(st.next)?.2;
        if st.held >= self.limit
            || (st.held > 0 && st.held_bytes.saturating_add(weight) > self.max_bytes)
        {
            return None;
        }
        st.next += 1;
        st.held += 1;
        st.held_bytes += weight;
        Some(st.next - 1)
    }

    /// Job `k` is no longer held (taken or dropped).
    fn release(&self, st: &mut State<R>, k: usize) {
        st.held -= 1;
        st.held_bytes -= self.jobs[k].2;
    }

    /// Runs job `k` (unlocked) and files its result.
    fn run(&self, k: usize) {
        let (at, what, _) = &self.jobs[k];
        let r = catch_unwind(AssertUnwindSafe(|| (self.build)(*at, what))).ok();
        let mut st = self.lock();
        if *at < st.pos || st.stop {
            self.release(&mut st, k);
            drop(st);
            drop(r);
        } else {
            st.done.insert(k, r);
            drop(st);
        }
        self.changed.notify_all();
    }

    /// A helper's loop: start jobs until there are none left or [`Ahead::stop`] is called.
    pub(crate) fn help(&self) {
        loop {
            let mut st = self.lock();
            let k = loop {
                if st.stop {
                    return;
                }
                if let Some(k) = self.claim(&mut st) {
                    break k;
                }
                // Nothing to start: done, or `limit` held until the walk takes some.
                if self.jobs.get(st.next).is_none() {
                    return;
                }
                st = self.wait(st);
            };
            drop(st);
            self.run(k);
        }
    }

    /// The walk is at `pos`: results for earlier positions are dropped.
    pub(crate) fn advance(&self, pos: usize) {
        let mut st = self.lock();
        st.pos = pos;
        let mut dropped = Vec::new();
        while let Some(entry) = st.done.first_entry() {
            let k = *entry.key();
            if self.jobs[k].0 >= pos {
                break;
            }
            dropped.push(entry.remove());
            self.release(&mut st, k);
        }
        drop(st);
        if !dropped.is_empty() {
            self.changed.notify_all();
        }
    }

    /// The result of the build at `at` as `what`, from a helper (waiting for it, and building
    /// later jobs meanwhile); `None` when no job is that, or none was started: the caller
    /// builds it. Call [`Ahead::advance`] with `at` first.
    pub(crate) fn take(&self, at: usize, what: &T) -> Option<R> {
        let k = self.jobs.binary_search_by_key(&at, |j| j.0).ok()?;
        if self.jobs[k].1 != *what {
            return None;
        }
        let mut st = self.lock();
        if k >= st.next {
            // Not started: the caller builds it, and no helper will.
            st.next = k + 1;
            return None;
        }
        loop {
            if let Some(r) = st.done.remove(&k) {
                self.release(&mut st, k);
                drop(st);
                self.changed.notify_all();
                return r;
            }
            if let Some(j) = self.claim(&mut st) {
                drop(st);
                self.run(j);
                st = self.lock();
            } else {
                st = self.wait(st);
            }
        }
    }

    /// Helpers stop after the job they are running; what is held is dropped with `self`.
    pub(crate) fn stop(&self) {
        self.lock().stop = true;
        self.changed.notify_all();
    }
}

/// Calls [`Ahead::stop`] when dropped, so that helpers stop on every way out of the walk.
pub(crate) struct StopOnDrop<'a, T, R, F>(pub(crate) &'a Ahead<T, R, F>)
where
    T: PartialEq + Sync,
    R: Send,
    F: Fn(usize, &T) -> R + Sync;

impl<T, R, F> Drop for StopOnDrop<'_, T, R, F>
where
    T: PartialEq + Sync,
    R: Send,
    F: Fn(usize, &T) -> R + Sync,
{
    fn drop(&mut self) {
        self.0.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Walks 0..n taking every position that has a job as `what`, with `helpers` threads;
    /// returns what the walk got and how many builds ran. Job `at` weighs `at % 7 + 1`.
    fn walk(
        jobs: Vec<(usize, u8)>,
        n: usize,
        want: impl Fn(usize) -> Option<u8>,
        helpers: usize,
        (limit, max_bytes): (usize, u64),
    ) -> (Vec<(usize, u8, usize)>, usize) {
        let built = AtomicUsize::new(0);
        let build = |at: usize, what: &u8| {
            built.fetch_add(1, Ordering::Relaxed);
            (at, *what, at * 10 + usize::from(*what))
        };
        let jobs = jobs
            .into_iter()
            .map(|(at, what)| (at, what, at as u64 % 7 + 1))
            .collect();
        let ahead = Ahead::new(jobs, limit, max_bytes, build);
        let mut got = Vec::new();
        std::thread::scope(|s| {
            for _ in 0..helpers {
                s.spawn(|| ahead.help());
            }
            let _stop = StopOnDrop(&ahead);
            for at in 0..n {
                ahead.advance(at);
                if let Some(what) = want(at) {
                    let r = ahead.take(at, &what).unwrap_or_else(|| build(at, &what));
                    got.push(r);
                }
            }
        });
        (got, built.load(Ordering::Relaxed))
    }

    #[test]
    fn every_result_comes_back_in_order() {
        for helpers in [0, 1, 3] {
            for limit in [(1, u64::MAX), (2, u64::MAX), (8, u64::MAX), (8, 3), (8, 12)] {
                let jobs: Vec<(usize, u8)> = (0..200).map(|i| (i * 2, (i % 3) as u8)).collect();
                let want = |at: usize| at.is_multiple_of(2).then_some(((at / 2) % 3) as u8);
                let (got, built) = walk(jobs, 400, want, helpers, limit);
                let expected: Vec<(usize, u8, usize)> = (0..200)
                    .map(|i| (i * 2, (i % 3) as u8, i * 20 + i % 3))
                    .collect();
                assert_eq!(got, expected, "helpers {helpers} limit {limit:?}");
                // Every job wanted as listed: each built exactly once.
                assert_eq!(built, 200, "helpers {helpers} limit {limit:?}");
            }
        }
    }

    #[test]
    fn a_job_listed_as_something_else_is_built_by_the_walk() {
        // Jobs at every position as 0; the walk wants 1 at odd positions and nothing at
        // positions divisible by 5.
        let jobs: Vec<(usize, u8)> = (0..100).map(|i| (i, 0)).collect();
        let want = |at: usize| match at {
            _ if at.is_multiple_of(5) => None,
            _ if at % 2 == 1 => Some(1),
            _ => Some(0),
        };
        for helpers in [0, 1, 2] {
            let (got, _) = walk(jobs.clone(), 100, want, helpers, (3, 10));
            let expected: Vec<(usize, u8, usize)> = (0..100)
                .filter_map(|at| want(at).map(|w| (at, w, at * 10 + usize::from(w))))
                .collect();
            assert_eq!(got, expected, "helpers {helpers}");
        }
    }

    /// Helpers start no job that would take the weight held past `max_bytes`, unless it is
    /// the only one held; a result taken lets them go on.
    #[test]
    fn held_weight_stays_within_max_bytes() {
        // Weights 10, 10, 10, 40, 10: at most 25 held.
        let jobs = vec![(0, 0u8, 10), (1, 0, 10), (2, 0, 10), (3, 0, 40), (4, 0, 10)];
        let ahead = Ahead::new(jobs, 100, 25, |at: usize, _: &u8| at);
        let settled = |held: usize, done: usize| {
            for _ in 0..2000 {
                let st = ahead.lock();
                if st.held == held && st.done.len() == done {
                    return;
                }
                drop(st);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            panic!("never {held} held and {done} done");
        };
        std::thread::scope(|s| {
            s.spawn(|| ahead.help());
            let _stop = StopOnDrop(&ahead);
            ahead.advance(0);
            settled(2, 2);
            // A third would be 30 > 25: the helper waits.
            std::thread::sleep(std::time::Duration::from_millis(30));
            let held = |st: MutexGuard<'_, State<usize>>| (st.held, st.held_bytes);
            assert_eq!(held(ahead.lock()), (2, 20));
            assert_eq!(ahead.take(0, &0), Some(0));
            assert_eq!(ahead.take(1, &0), Some(1));
            ahead.advance(2);
            // Job 2 (10), then job 3 (40) would make 50: held alone only once 2 is taken.
            settled(1, 1);
            assert_eq!(ahead.take(2, &0), Some(2));
            ahead.advance(3);
            settled(1, 1);
            assert_eq!(ahead.lock().held_bytes, 40);
            assert_eq!(ahead.take(3, &0), Some(3));
            ahead.advance(4);
            // Started by the helper by now, or left to the walk.
            assert!(matches!(ahead.take(4, &0), None | Some(4)));
        });
    }

    #[test]
    fn a_panicking_build_is_left_to_the_walk() {
        let ahead = Ahead::new(vec![(0, 0u8, 1), (1, 0, 1)], 2, 2, |at: usize, _: &u8| {
            assert!(at != 0, "build 0 fails");
            at
        });
        std::thread::scope(|s| {
            s.spawn(|| ahead.help());
            let _stop = StopOnDrop(&ahead);
            ahead.advance(0);
            // Either the helper ran it (and it panicked: None) or nobody started it (None).
            assert_eq!(ahead.take(0, &0), None);
            ahead.advance(1);
            // Built by the helper or by the walk while it waited, or not started.
            let r = ahead.take(1, &0);
            assert!(r.is_none() || r == Some(1));
        });
    }
}
