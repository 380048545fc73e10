//! Inputs the fuzz targets (`fuzz/fuzz_targets/`) found crashing, replayed: each opens to an
//! error or reads without panicking. Files are under `tests/data/fuzz/`, named after what broke;
//! index-file inputs are fuzz inputs, which the targets also try resealed (`format::reseal`).

use sessiondex_core::catalog::Catalog;
use sessiondex_core::cold::ColdDigest;
use sessiondex_core::format;
use sessiondex_core::hot::HotShard;

/// Every read a hot shard offers (what `hot_open` does).
fn read_hot(bytes: &[u8]) -> Result<(), sessiondex_core::Error> {
    let shard = HotShard::open(bytes)?;
    for e in shard.entries() {
        let _ = e.to_record();
    }
    shard.for_each_term(|_, _| {})?;
    for t in ["the", "fix", ""] {
        let _ = shard.postings(t).map(Iterator::count);
    }
    Ok(())
}

fn read_cold(bytes: &[u8]) -> Result<(), sessiondex_core::Error> {
    let d = ColdDigest::open(bytes)?;
    let _ = (d.vocabulary_len(), d.vocabulary_total());
    let fields = d.fields()?;
    let mut keys = fields.cursor();
    let mut ord = 0;
    while keys.next_term()?.is_some() {
        let _ = d.field_postings_at(ord);
        ord += 1;
    }
    let _ = d.field_postings(sessiondex_core::cold::Field::Tool, "bash");
    Ok(())
}

fn read_catalog(bytes: &[u8]) -> Result<(), sessiondex_core::Error> {
    use fst::Streamer;
    let c = Catalog::open(bytes)?;
    for i in 0..c.len() {
        let _ = c.session(i);
        let _ = c.hot_totals(i);
    }
    let _ = c.sessions_with_id_key("a1/0");
    let _ = c.sessions_with_id_key(&sessiondex_core::catalog::field_key("outcome", "failed"));
    let terms = c.terms()?;
    let mut s = terms.stream();
    while let Some((_, ord)) = s.next() {
        let _ = c.sessions_at(ord);
    }
    Ok(())
}

/// The input as given and resealed through every reader. The resealed copy also carries this
/// build's format version (the inputs were found under version 1), so it reaches the payload.
fn replay(input: &[u8]) -> Vec<Option<String>> {
    let mut codes = Vec::new();
    let mut current = input.to_vec();
    if let Some(v) = current.get_mut(4..8) {
        v.copy_from_slice(&format::FORMAT_VERSION.to_le_bytes());
    }
    for bytes in [format::copy_aligned(input), format::reseal(&current)] {
        for r in [read_hot(&bytes), read_cold(&bytes), read_catalog(&bytes)] {
            codes.push(r.err().map(|e| e.code().to_owned()));
        }
    }
    codes
}

#[test]
fn hot_shard_with_a_damaged_term_fst() {
    // hot_open: a shard whose term FST was edited and the envelope resealed; the FST header
    // still parsed, and fst's node decoder overflowed while streaming the terms. The FST's own
    // CRC-32C is now checked on open. The input has format 1's hot layout, which a later
    // schema refuses before the payload (so it is refused either way, and never panics); the
    // same damage is made below to a shard of this build.
    let input = include_bytes!("../data/fuzz/hot-fst-node-overflow.bin");
    let codes = replay(input);
    let resealed_hot = &codes[3];
    assert!(resealed_hot.is_some());
}

#[test]
fn hot_shard_of_this_build_with_any_term_fst_byte_changed() {
    // Every byte of a built shard's term FST changed in turn, the envelope resealed: each
    // copy is refused as `index_corrupt` (the FST's CRC-32C), and none panics.
    let (kind, file) = super::sample_files().swap_remove(0);
    assert_eq!(kind, format::FileKind::Hot);
    let shard = HotShard::open(&file[..]).unwrap();
    let fst = shard.terms().unwrap();
    let fst_bytes = fst.as_fst().as_bytes();
    let at = fst_bytes.as_ptr() as usize - file.as_ptr() as usize;
    let len = fst_bytes.len();
    assert!(len > 24);
    for k in 0..len {
        let mut damaged = file.to_vec();
        damaged[at + k] ^= 0x5a;
        let resealed = format::reseal(&damaged);
        let code = read_hot(&resealed).err().map(|e| e.code().to_owned());
        assert_eq!(
            code.as_deref(),
            Some("index_corrupt"),
            "FST byte {k} of {len}"
        );
    }
}
