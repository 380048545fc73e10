//! The readers' hash maps and sets. Their keys are ids and call ids of one file, hashed
//! several times per record, so natively they use FxHash: about 4% fewer instructions for a
//! whole read than std's SipHash. The browser build keeps std's hasher, whose code it already
//! holds (its size is capped).

#[cfg(not(target_arch = "wasm32"))]
type Hasher = rustc_hash::FxBuildHasher;
#[cfg(target_arch = "wasm32")]
type Hasher = std::hash::RandomState;

/// A hash map with the readers' hasher.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, Hasher>;
/// A hash set with the readers' hasher.
pub(crate) type HashSet<T> = std::collections::HashSet<T, Hasher>;
