//! Writes the valid index files the fuzz targets mutate as seeds:
//! `<corpus>/hot_open/*.hot`, `<corpus>/cold_open/*.cold`, `<corpus>/catalog_open/*.catalog`.
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --example seed_index -- fuzz/corpus`

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let corpus = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "corpus".into()));
    let s = sessiondex_fuzz::samples();
    for (target, files) in [
        ("hot_open", &s.hot),
        ("cold_open", &s.cold),
        ("catalog_open", &s.catalog),
    ] {
        let dir = corpus.join(target);
        std::fs::create_dir_all(&dir)?;
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes.as_slice())?;
        }
        println!("{}: {} files", dir.display(), files.len());
    }
    Ok(())
}
