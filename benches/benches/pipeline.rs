//! Indexing pipeline: tokenize, parse (per format), hot shard and cold digest build, hot shard
//! open (warm: bytes in memory, checksum and validation included).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sessiondex::source::{read_bytes, Branches, ReadOptions};
use sessiondex_core::{cold, hot, tokenize, Policy};

fn benches(c: &mut Criterion) {
    let (_tmp, dir) = common::corpus();
    let files = common::largest_per_format(&dir);
    let policy = Policy::default();

    let mut g = c.benchmark_group("parse");
    for (name, path) in &files {
        let bytes = std::fs::read(path).unwrap();
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), &bytes, |b, bytes| {
            b.iter(|| read_bytes("bench.jsonl", bytes, &ReadOptions::default()).unwrap());
        });
    }
    g.finish();

    let mut g = c.benchmark_group("tokenize");
    for (name, path) in &files {
        let bytes = std::fs::read(path).unwrap();
        let s = read_bytes("bench.jsonl", &bytes, &ReadOptions::default()).unwrap();
        let text: String = s
            .records
            .iter()
            .filter_map(|r| policy.text(r))
            .collect::<Vec<_>>()
            .join("\n");
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), &text, |b, text| {
            b.iter(|| {
                let mut n = 0usize;
                sessiondex_core::for_each_token(text, |t| n += t.len());
                n
            });
        });
    }
    g.bench_function("mixed_line", |b| {
        let line = "Fix src/foo.ts: TypeError 日本語のテキスト café ＴＯＤＯ 🚀 retry_timeout=30";
        b.iter(|| tokenize(line));
    });
    g.finish();

    let mut g = c.benchmark_group("shard");
    for (name, path) in &files {
        let bytes = std::fs::read(path).unwrap();
        let s = read_bytes("bench.jsonl", &bytes, &ReadOptions::default()).unwrap();
        let sel = s.select(Branches::Active);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(BenchmarkId::new("build_hot", name), &sel, |b, sel| {
            b.iter(|| hot::build(&s.meta, sel, &policy).unwrap());
        });
        g.bench_with_input(BenchmarkId::new("build_cold", name), &sel, |b, sel| {
            b.iter(|| cold::build(&s.meta, sel, &policy).unwrap());
        });
        let shard = hot::build(&s.meta, &sel, &policy).unwrap();
        g.throughput(Throughput::Bytes(shard.len() as u64));
        g.bench_with_input(BenchmarkId::new("open_hot", name), &shard, |b, shard| {
            b.iter(|| hot::HotShard::open(&shard[..]).unwrap().entry_count());
        });
    }
    g.finish();
}

criterion_group!(pipeline, benches);
criterion_main!(pipeline);
