//! The one error type of this crate.

use std::fmt;

/// What went wrong with an index file or the cache store.
///
/// Every kind maps to a stable snake_case [`ErrorKind::code`]. A file that fails with a code of
/// `index_corrupt` or `index_version_mismatch` is treated as absent and rebuilt from source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file is shorter than its header says, or too short to hold a header and footer.
    Truncated,
    /// The file does not start with the magic bytes of the expected file kind.
    BadMagic,
    /// The endianness mark or another fixed header field has an unexpected value.
    BadHeader,
    /// The checksum in the footer does not match the bytes.
    ChecksumMismatch,
    /// The checksum matched but the payload does not validate (rkyv, FST, column lengths,
    /// offsets, UTF-8).
    Corrupt,
    /// The file was written by another format version.
    VersionMismatch {
        /// The version this build reads.
        expected: u32,
        /// The version in the file.
        found: u32,
    },
    /// Same version, but the schema fingerprint differs (another build's layout).
    SchemaMismatch,
    /// The bytes do not start at an address aligned to [`crate::format::ALIGN`]; copy them with
    /// [`crate::format::aligned`].
    Unaligned,
    /// A value does not fit the format (more than `u32::MAX` entries or bytes in a column).
    TooLarge,
    /// An I/O error in the cache store.
    Io,
    /// Another process holds the index lock.
    Locked,
}

impl ErrorKind {
    /// The stable snake_case code.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Truncated
            | ErrorKind::BadMagic
            | ErrorKind::BadHeader
            | ErrorKind::ChecksumMismatch
            | ErrorKind::Corrupt => "index_corrupt",
            ErrorKind::VersionMismatch { .. } | ErrorKind::SchemaMismatch => {
                "index_version_mismatch"
            }
            ErrorKind::Unaligned => "index_unaligned",
            ErrorKind::TooLarge => "index_too_large",
            ErrorKind::Io => "index_io",
            ErrorKind::Locked => "index_locked",
        }
    }
}

/// An index format or cache store error: a kind, a message and the file path when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    path: Option<String>,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            path: None,
            message: message.into(),
        }
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Corrupt, message)
    }

    #[cfg(feature = "fs")]
    pub(crate) fn io(path: &std::path::Path, err: &std::io::Error) -> Self {
        Error::new(ErrorKind::Io, err.to_string()).with_path(path.to_string_lossy())
    }

    /// The same error naming the file it is about.
    #[must_use]
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// The kind of error.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The stable code of the kind.
    #[must_use]
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// The path of the file, when known.
    #[must_use]
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The human-readable message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// True when the file should be treated as absent and rebuilt from its source
    /// (`index_corrupt`, `index_version_mismatch`).
    #[must_use]
    pub fn is_rebuildable(&self) -> bool {
        matches!(self.code(), "index_corrupt" | "index_version_mismatch")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.code())?;
        if let Some(p) = &self.path {
            write!(f, "{p}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<fst::Error> for Error {
    fn from(e: fst::Error) -> Self {
        Error::corrupt(format!("fst: {e}"))
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
