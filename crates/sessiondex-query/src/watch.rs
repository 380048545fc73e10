//! Whether any file of an index directory may have changed since a moment: an inotify watch on
//! the directory (Linux). An index kept across calls checks the files it keeps (one `fstat`
//! each) only in a call that follows such a change, instead of in every call.
//!
//! The kernel queues an event while the write, `utimes`, rename or delete that causes it is
//! still running, so a call that drains the queue when it starts has every change finished
//! before that. What inotify does not report is a write through another program's shared
//! memory map of a file; the `fstat` check sees one only once the kernel has updated the file's
//! times. Elsewhere than Linux, or when the watch cannot be set (the directory does not exist
//! yet, the per-user limit of watches is reached), there is none, and every kept file is
//! checked in every call.

/// The epoch of a call: kept files checked in the same epoch are trusted without a check.
pub type Epoch = u64;

#[cfg(target_os = "linux")]
mod linux {
    use std::mem::MaybeUninit;
    use std::path::Path;
    use std::sync::Mutex;

    use rustix::fd::OwnedFd;
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

    use super::Epoch;

    /// An inotify watch on one directory and the epoch it is at.
    #[derive(Debug)]
    pub struct Watch {
        fd: OwnedFd,
        /// The epoch, bumped by every drain that found an event; `None` once the watch is
        /// gone (the directory was deleted or unmounted, or the queue could not be read).
        epoch: Mutex<Option<Epoch>>,
    }

    impl Watch {
        /// A watch on `dir`, or `None` when one cannot be set.
        #[must_use]
        pub fn new(dir: &Path) -> Option<Watch> {
            let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
            let changes = WatchFlags::MODIFY
                | WatchFlags::ATTRIB
                | WatchFlags::CLOSE_WRITE
                | WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MOVED_FROM
                | WatchFlags::MOVED_TO
                | WatchFlags::DELETE_SELF
                | WatchFlags::MOVE_SELF;
            inotify::add_watch(&fd, dir, changes).ok()?;
            Some(Watch {
                fd,
                epoch: Mutex::new(Some(0)),
            })
        }

        /// Reads every event queued so far and answers the epoch after them: the one before
        /// when there was none, the next one when there was any (a queue overflow included).
        /// `None` once the watch no longer reports changes.
        pub fn epoch(&self) -> Option<Epoch> {
            let mut epoch = self
                .epoch
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = (*epoch)?;
            let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            let mut any = false;
            loop {
                match reader.next() {
                    Ok(ev) => {
                        any = true;
                        let gone = ReadFlags::IGNORED | ReadFlags::UNMOUNT;
                        if ev.events().intersects(gone) {
                            *epoch = None;
                            return None;
                        }
                    }
                    Err(rustix::io::Errno::WOULDBLOCK) => break,
                    Err(rustix::io::Errno::INTR) => {}
                    Err(_) => {
                        *epoch = None;
                        return None;
                    }
                }
            }
            let next = if any { now.checked_add(1) } else { Some(now) };
            *epoch = next;
            next
        }
    }
}

#[cfg(target_os = "linux")]
pub use linux::Watch;

/// No watch outside Linux: every epoch is unknown, so every kept file is checked.
#[cfg(not(target_os = "linux"))]
#[derive(Debug)]
pub struct Watch;

#[cfg(not(target_os = "linux"))]
impl Watch {
    /// Never a watch here.
    #[must_use]
    pub fn new(_dir: &std::path::Path) -> Option<Watch> {
        None
    }

    /// Never an epoch.
    pub fn epoch(&self) -> Option<Epoch> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn every_change_in_the_directory_moves_the_epoch() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("v9");
        assert!(Watch::new(&dir).is_none(), "no directory, no watch");
        fs::create_dir(&dir).unwrap();
        let file = dir.join("a.hot");
        fs::write(&file, b"sound").unwrap();
        let w = Watch::new(&dir).unwrap();
        assert_eq!(w.epoch(), Some(0));
        // Reading changes nothing.
        assert_eq!(fs::read(&file).unwrap(), b"sound");
        assert_eq!(w.epoch(), Some(0));
        // A write in place, same length.
        fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"Sound"))
            .unwrap();
        assert_eq!(w.epoch(), Some(1));
        assert_eq!(w.epoch(), Some(1));
        // Times put back (`utimes`), a rename over it, a new file, a delete.
        let f = fs::File::options().write(true).open(&file).unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
        drop(f);
        assert_eq!(w.epoch(), Some(2));
        fs::write(dir.join("b.tmp"), b"new").unwrap();
        assert_eq!(w.epoch(), Some(3));
        fs::rename(dir.join("b.tmp"), &file).unwrap();
        assert_eq!(w.epoch(), Some(4));
        fs::remove_file(&file).unwrap();
        assert_eq!(w.epoch(), Some(5));
        // Gone with its directory: no epoch from then on.
        fs::remove_dir(&dir).unwrap();
        assert_eq!(w.epoch(), None);
        fs::create_dir(&dir).unwrap();
        assert_eq!(w.epoch(), None);
    }
}
