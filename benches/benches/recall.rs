//! Recall per query class over an index where every session is hot, and expand around a hit.
//! One iteration runs every query of the class once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use sessiondex::query::expand;
use sessiondex::query::index::Index;
use sessiondex::query::{engine, QueryContext};
use sessiondex::source::Branches;
use sessiondex::{engine_options, Config, ExpandRequest};
use sessiondex_bench::queries::{QueryFile, CLASSES};
use sessiondex_bench::systems::sessiondex::Sessiondex;
use sessiondex_bench::systems::System;

fn benches(c: &mut Criterion) {
    let (tmp, dir) = common::corpus();
    let work = tmp.path().join("index");
    let mut sdx = Sessiondex::new(true);
    sdx.build(&dir, &work).unwrap();
    let queries = QueryFile::load(&dir.join("queries.json")).unwrap();
    let index = Index::open(&work, Branches::Active).unwrap();
    let opts = engine_options(&Config::default());
    let ctx = QueryContext::default();

    let mut g = c.benchmark_group("recall");
    let mut anchor = None;
    for class in CLASSES {
        let reqs: Vec<_> = queries.classes[class]
            .iter()
            .map(Sessiondex::request)
            .collect();
        for r in &reqs {
            let page = engine::recall(&index, &opts, &ctx, r).unwrap();
            if anchor.is_none() {
                anchor = page
                    .hits
                    .first()
                    .and_then(|h| Some((h.file.clone(), h.entry_id.clone()?)));
            }
        }
        g.bench_function(class, |b| {
            b.iter(|| {
                reqs.iter()
                    .map(|r| engine::recall(&index, &opts, &ctx, r).unwrap().total)
                    .sum::<u64>()
            });
        });
    }
    g.finish();

    if let Some((file, id)) = anchor {
        let req = ExpandRequest::from_json(&json!({
            "session": file, "entryIds": [id], "before": 3, "after": 3
        }))
        .unwrap();
        c.bench_function("expand", |b| {
            b.iter(|| expand::expand(&index, &opts, &req).unwrap().entries.len());
        });
    }
}

criterion_group!(recall, benches);
criterion_main!(recall);
