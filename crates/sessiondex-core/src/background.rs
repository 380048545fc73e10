//! Work a caller starts on a thread of its own while it goes on, such as a recall index's
//! lookup table built beside the calls that will use it: such a thread should not take a
//! core from the calls it serves.
//!
//! One of the crate's `unsafe` sites, with mapping files in `mmap`, `syncfs` in `store`, the
//! prefetch hint in `terms` and the allocator in `alloc`.

/// Marks the calling thread as background work: on Linux, the `SCHED_IDLE` policy, so a thread
/// sharing its core runs first and it runs when the core has nothing else to do. Elsewhere,
/// or when the policy is refused, it does nothing (the thread then runs as any other).
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `sched_setscheduler` reads the `sched_param` it is given, which lives for
        // the call, and touches no other memory of ours. Pid 0 is the calling thread.
        #[allow(unsafe_code)]
        let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// The policy is the calling thread's alone: the thread that asked runs as idle work, and
    /// the thread that started it keeps its own.
    #[test]
    fn only_the_calling_thread_becomes_background_work() {
        #[allow(unsafe_code)]
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let before = policy();
        let inside = std::thread::spawn(move || {
            super::lower_this_thread();
            policy()
        })
        .join()
        .unwrap();
        assert_eq!(inside, libc::SCHED_IDLE);
        assert_eq!(policy(), before);
        assert_ne!(before, libc::SCHED_IDLE);
    }
}
