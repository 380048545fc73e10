//! `wasm-bindgen-test` unit tests of the `SessionIndex` API, run under node by `make test-wasm`:
//!
//! ```sh
//! CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
//!     cargo test -p sessiondex-wasm --target wasm32-unknown-unknown
//! ```
//!
//! They call the exported methods from the Rust side with JS values made as JS would make them
//! (`JSON.parse` of a request), and read results back through `JSON.stringify`, so they see the
//! objects JS sees. The files are the bundled examples (`examples/sessions`); the expected hits
//! are the CLI's answers for the same files and requests (`sessiondex recall --scope global`).
//! Compiled for wasm32 only: on the host this file is empty.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use js_sys::{Reflect, JSON};
use serde_json::{json, Value};
use sessiondex_wasm::SessionIndex;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

const PI: &[u8] = include_bytes!(
    "../../../examples/sessions/pi/--home-dev-webapp--/2026-11-02T09-14-03-120Z_019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f.jsonl"
);
const CODEX: &[u8] = include_bytes!(
    "../../../examples/sessions/codex/2026/11/04/rollout-2026-11-04T08-30-00-019a5e2b-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl"
);
const CLAUDE: &[u8] = include_bytes!(
    "../../../examples/sessions/claude-code/-home-dev-webapp/3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d.jsonl"
);
const OMP: &[u8] = include_bytes!(
    "../../../examples/sessions/omp/--home-dev-webapp--/2026-11-05T16-20-00-000Z_019a6f3c-2d4e-7f50-9b1c-3d4e5f6a7b8c.jsonl"
);

/// (name, bytes, format, entryCount), oldest session first.
const FILES: [(&str, &[u8], &str, u64); 4] = [
    ("pi.jsonl", PI, "pi", 10),
    ("claude.jsonl", CLAUDE, "claude_code", 11),
    ("codex.jsonl", CODEX, "codex", 12),
    ("omp.jsonl", OMP, "omp", 5),
];

/// A JS value as JS would write it (a plain object from `JSON.parse`).
fn js(v: &Value) -> JsValue {
    JSON::parse(&v.to_string()).unwrap()
}

/// A result as JS sees it, through `JSON.stringify`.
fn val(v: &JsValue) -> Value {
    let s: String = JSON::stringify(v).unwrap().into();
    serde_json::from_str(&s).unwrap()
}

fn index_with(config: &Value) -> SessionIndex {
    let mut index = SessionIndex::new(js(config)).unwrap();
    for (name, bytes, _, _) in FILES {
        index.add_file(name, bytes).unwrap();
    }
    index
}

fn loaded() -> SessionIndex {
    index_with(&Value::Null)
}

/// The `code` of a thrown error, after checking that it is a JS `Error` named `SessionIndexError`.
fn code<T: std::fmt::Debug>(r: Result<T, js_sys::Error>) -> String {
    let e = r.expect_err("an error");
    let v: &JsValue = e.as_ref();
    assert!(v.is_instance_of::<js_sys::Error>());
    assert_eq!(String::from(e.name()), "SessionIndexError");
    Reflect::get(v, &"code".into())
        .unwrap()
        .as_string()
        .unwrap()
}

fn recall(index: &mut SessionIndex, request: Value) -> Value {
    val(&index.recall(js(&request)).unwrap())
}

fn entry_ids(page: &Value) -> Vec<&str> {
    page["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["entryId"].as_str().unwrap())
        .collect()
}

fn is_plain_object(v: &JsValue) -> bool {
    let proto = js_sys::Object::get_prototype_of(v);
    let object_proto = js_sys::Object::get_prototype_of(&js_sys::Object::new());
    js_sys::Object::is(&proto, &object_proto)
}

#[wasm_bindgen_test]
fn add_file_detects_each_format_and_returns_its_sessions_row() {
    let mut index = SessionIndex::new(JsValue::UNDEFINED).unwrap();
    for (name, bytes, format, entries) in FILES {
        let row = index.add_file(name, bytes).unwrap();
        assert!(is_plain_object(&row));
        let row = val(&row);
        assert_eq!(row["file"], name);
        assert_eq!(row["format"], format);
        assert_eq!(row["entryCount"], entries);
        assert_eq!(row["tier"], "hot");
        assert_eq!(row["availability"], "available");
    }
    let all = val(&index.sessions(JsValue::UNDEFINED).unwrap());
    assert_eq!(all["total"], 4);
    assert_eq!(all["coverage"]["complete"], true);
    // Newest first.
    let files: Vec<&str> = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        ["omp.jsonl", "codex.jsonl", "claude.jsonl", "pi.jsonl"]
    );
}

#[wasm_bindgen_test]
fn errors_are_js_errors_with_stable_codes() {
    let mut index = loaded();
    assert_eq!(
        code(index.add_file("notes.txt", b"hello\n")),
        "unknown_format"
    );
    assert_eq!(
        code(SessionIndex::new(js(&json!({ "hotSession": 3 })))),
        "invalid_config"
    );
    let bad = [
        json!({ "query": "x", "pageSize": 0 }),
        json!({ "query": 5 }),
        json!({ "query": "x", "bogus": true }),
    ];
    // A request that is not an object is refused, not read as "no filters".
    assert_eq!(
        code(index.recall(JsValue::from_str("x"))),
        "invalid_request"
    );
    for request in bad {
        assert_eq!(
            code(index.recall(js(&request))),
            "invalid_request",
            "{request}"
        );
    }
    assert_eq!(
        code(index.recall(js(&json!({ "query": "(", "queryMode": "regex" })))),
        "invalid_regex"
    );
    assert_eq!(
        code(index.call(js(&json!({ "ref": "nope", "args": {} })))),
        "invalid_call"
    );
    assert_eq!(
        code(index.expand(js(&json!({ "session": "missing.jsonl", "indices": [0] })))),
        "session_not_found"
    );
    assert_eq!(
        code(index.sessions(js(&json!({ "bogus": 1 })))),
        "invalid_request"
    );
    // A file that was rejected is not held.
    assert_eq!(
        val(&index.sessions(JsValue::UNDEFINED).unwrap())["total"],
        4
    );
}

#[wasm_bindgen_test]
fn recall_answers_the_clis_hits_in_global_scope() {
    let mut index = loaded();
    let page = index
        .recall(js(&json!({ "query": "schema_version" })))
        .unwrap();
    assert!(is_plain_object(&page));
    let page = val(&page);
    assert_eq!(page["total"], 3);
    assert_eq!(entry_ids(&page), ["l10", "l8/0", "l7"]);
    let hits = page["hits"].as_array().unwrap();
    let indices: Vec<u64> = hits.iter().map(|h| h["index"].as_u64().unwrap()).collect();
    assert_eq!(indices, [11, 9, 7]);
    for h in hits {
        assert_eq!(h["kind"], "entry");
        assert_eq!(h["file"], "codex.jsonl");
        assert_eq!(h["sessionId"], "019a5e2b-1c3d-7e4f-8a9b-0c1d2e3f4a5b");
        assert_eq!(h["follow"]["ref"], "expand");
        assert_eq!(h["follow"]["args"]["session"], "codex.jsonl");
        assert_eq!(h["follow"]["args"]["indices"], json!([h["index"]]));
    }
    assert_eq!(hits[1]["tool"], "apply_patch");
    assert_eq!(hits[1]["outcome"], "succeeded");
    assert_eq!(hits[2]["role"], "tool");
    assert_eq!(page["next"], Value::Null);
    let cov = &page["coverage"];
    assert_eq!(cov["complete"], true);
    assert_eq!(cov["indexedSessions"], 4);
    assert_eq!(cov["eligibleSessions"], 4);
    assert_eq!(cov["reasons"], json!([]));

    // Filters.
    let tool = recall(
        &mut index,
        json!({ "query": "schema_version", "role": "tool" }),
    );
    assert_eq!(entry_ids(&tool), ["l7"]);
    assert_eq!(tool["total"], 1);
    let all = recall(
        &mut index,
        json!({ "query": "schema_version table missing", "queryMatch": "all" }),
    );
    assert_eq!(entry_ids(&all), ["l10"]);
    let any = recall(
        &mut index,
        json!({ "query": "schema_version table missing" }),
    );
    assert_eq!(entry_ids(&any), ["l10", "l8/0", "l7"]);

    // The failed run is on an abandoned branch of the pi session: only `branches: "all"` sees it.
    let active = recall(&mut index, json!({ "query": "ETIMEDOUT" }));
    assert_eq!(active["total"], 0);
    assert_eq!(active["hits"], json!([]));
    let every = recall(
        &mut index,
        json!({ "query": "ETIMEDOUT", "branches": "all" }),
    );
    assert_eq!(entry_ids(&every), ["t1000002"]);
    assert_eq!(every["hits"][0]["outcome"], "failed");
    assert_eq!(every["hits"][0]["follow"]["args"]["branches"], "all");
}

#[wasm_bindgen_test]
fn next_continues_the_page_exactly() {
    let mut index = loaded();
    let whole = recall(&mut index, json!({ "query": "checkout" }));
    assert_eq!(whole["total"], 5);
    assert_eq!(
        entry_ids(&whole),
        [
            "a1000001",
            "e1f2a3b4",
            "u1000001",
            "a1000001/0",
            "e1f2a3b5/0"
        ]
    );
    let first = recall(&mut index, json!({ "query": "checkout", "pageSize": 2 }));
    assert_eq!(first["total"], 5);
    assert_eq!(
        first["hits"].as_array().unwrap()[..],
        whole["hits"].as_array().unwrap()[..2]
    );
    assert_eq!(first["next"]["ref"], "recall");
    assert_eq!(first["next"]["args"]["offset"], 2);
    assert_eq!(first["next"]["args"]["scope"], "global");
    let second = val(&index.call(js(&first["next"])).unwrap());
    assert_eq!(
        second["hits"].as_array().unwrap()[..],
        whole["hits"].as_array().unwrap()[2..4]
    );
    let third = val(&index.call(js(&second["next"])).unwrap());
    assert_eq!(
        third["hits"].as_array().unwrap()[..],
        whole["hits"].as_array().unwrap()[4..]
    );
    assert_eq!(third["next"], Value::Null);
}

#[wasm_bindgen_test]
fn follow_and_expand_reread_the_bytes_and_a_replaced_file_is_stale() {
    let mut index = loaded();
    let page = recall(&mut index, json!({ "query": "schema_version" }));
    let hit = &page["hits"][0];
    let x = val(&index.call(js(&hit["follow"])).unwrap());
    assert_eq!(x["session"]["file"], "codex.jsonl");
    assert_eq!(x["session"]["entries"], 12);
    assert_eq!(
        x["session"]["sourceHash"],
        hit["follow"]["args"]["sourceHash"]
    );
    let entries = x["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["index"], 11);
    assert_eq!(entries[0]["entryId"], "l10");
    assert_eq!(
        entries[0]["text"],
        "On an empty database the schema_version table does not exist yet. The script now \
         creates it first and treats a missing row as version 0."
    );
    assert_eq!(entries[0]["textRange"]["complete"], true);
    assert_eq!(x["coverage"]["complete"], true);

    let around = val(&index
        .expand(js(
            &json!({ "session": "codex.jsonl", "indices": [7], "before": 1, "after": 2 }),
        ))
        .unwrap());
    let got: Vec<&str> = around["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["entryId"].as_str().unwrap())
        .collect();
    assert_eq!(got, ["l6", "l7", "l8", "l8/0"]);
    let by_id = val(&index
        .expand(js(&json!({ "session": "codex.jsonl", "entryIds": ["l7"] })))
        .unwrap());
    assert_eq!(by_id["entries"][0]["index"], 7);
    assert_eq!(
        code(index.expand(js(&json!({ "session": "codex.jsonl", "indices": [99] })))),
        "index_out_of_bounds"
    );

    // New bytes under the same name: the old follow call no longer points at them.
    let mut grown = CODEX.to_vec();
    grown.push(b'\n');
    index.add_file("codex.jsonl", &grown).unwrap();
    let e = index.call(js(&hit["follow"])).expect_err("stale");
    let v: &JsValue = e.as_ref();
    assert_eq!(
        Reflect::get(v, &"code".into())
            .unwrap()
            .as_string()
            .unwrap(),
        "stale_pointer"
    );
    assert!(Reflect::get(v, &"details".into()).unwrap().is_object());
    // A fresh recall over the new bytes gives a follow call that works.
    let again = recall(&mut index, json!({ "query": "schema_version" }));
    assert_eq!(entry_ids(&again), ["l10", "l8/0", "l7"]);
    assert!(index.call(js(&again["hits"][0]["follow"])).is_ok());
}

#[wasm_bindgen_test]
fn cold_sessions_answer_with_session_hits_whose_follow_hydrates() {
    let mut index = index_with(&json!({ "hotSessions": 1 }));
    let rows = val(&index.sessions(JsValue::UNDEFINED).unwrap());
    let tiers: Vec<(&str, &str)> = rows["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["file"].as_str().unwrap(), r["tier"].as_str().unwrap()))
        .collect();
    assert_eq!(
        tiers,
        [
            ("omp.jsonl", "hot"),
            ("codex.jsonl", "cold"),
            ("claude.jsonl", "cold"),
            ("pi.jsonl", "cold")
        ]
    );
    let page = recall(&mut index, json!({ "query": "schema_version" }));
    let hits = page["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["kind"], "session");
    assert_eq!(hits[0]["file"], "codex.jsonl");
    assert_eq!(hits[0]["follow"]["ref"], "recall");
    let inner = val(&index.call(js(&hits[0]["follow"])).unwrap());
    assert_eq!(entry_ids(&inner), ["l10", "l8/0", "l7"]);
}

#[wasm_bindgen_test]
fn walk_is_an_iterable_with_session_and_coverage() {
    let mut index = loaded();
    let it = index.walk(JsValue::from_str("codex.jsonl")).unwrap();
    let session = val(&Reflect::get(&it, &"session".into()).unwrap());
    assert_eq!(session["file"], "codex.jsonl");
    assert_eq!(session["entries"], 12);
    let coverage = val(&Reflect::get(&it, &"coverage".into()).unwrap());
    assert_eq!(coverage["complete"], true);
    // `for (const r of it)`: Symbol.iterator, then next() until done.
    let records: Vec<Value> = js_sys::try_iter(&it)
        .unwrap()
        .expect("iterable")
        .map(|r| val(&r.unwrap()))
        .collect();
    let indices: Vec<u64> = records
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(indices, (0..12).collect::<Vec<u64>>());
    assert_eq!(records[7]["entryId"], "l7");
    assert_eq!(
        records[1]["text"],
        "Why does the migration script fail on an empty database?"
    );
    // Exhausted: {value: undefined, done: true}.
    let next: js_sys::Function = Reflect::get(&it, &"next".into()).unwrap().unchecked_into();
    let end = next.call0(&it).unwrap();
    assert_eq!(Reflect::get(&end, &"done".into()).unwrap(), JsValue::TRUE);
    assert!(Reflect::get(&end, &"value".into()).unwrap().is_undefined());

    let ranged = index
        .walk(js(&json!({ "session": "pi.jsonl", "range": [1, 2] })))
        .unwrap();
    let ids: Vec<Value> = js_sys::try_iter(&ranged)
        .unwrap()
        .unwrap()
        .map(|r| val(&r.unwrap())["entryId"].clone())
        .collect();
    assert_eq!(ids, [json!("u1000001"), json!("a1000001")]);
    // The abandoned branch of pi only with branches "all".
    let all = index
        .walk(js(&json!({ "session": "pi.jsonl", "branches": "all" })))
        .unwrap();
    let all_ids: Vec<Value> = js_sys::try_iter(&all)
        .unwrap()
        .unwrap()
        .map(|r| val(&r.unwrap())["entryId"].clone())
        .collect();
    assert!(all_ids.contains(&json!("t1000002")));
    assert_eq!(
        code(index.walk(js(&json!({ "session": "pi.jsonl", "range": [0, 9999] })))),
        "index_out_of_bounds"
    );
    assert_eq!(
        code(index.walk(JsValue::from_str("nothing"))),
        "session_not_found"
    );
}

#[wasm_bindgen_test]
fn sessions_filter_and_remove_file_forgets() {
    let mut index = loaded();
    let one = val(&index.sessions(js(&json!({ "limit": 1 }))).unwrap());
    assert_eq!(one["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(one["sessions"][0]["file"], "omp.jsonl");
    let by_id = val(&index.sessions(js(&json!({ "id": "codex.jsonl" }))).unwrap());
    assert_eq!(by_id["total"], 1);
    assert_eq!(
        by_id["sessions"][0]["sessionId"],
        "019a5e2b-1c3d-7e4f-8a9b-0c1d2e3f4a5b"
    );
    assert!(index.remove_file("codex.jsonl"));
    assert!(!index.remove_file("codex.jsonl"));
    assert_eq!(
        val(&index.sessions(JsValue::UNDEFINED).unwrap())["total"],
        3
    );
    let page = recall(&mut index, json!({ "query": "schema_version" }));
    assert_eq!(page["total"], 0);
    assert_eq!(page["coverage"]["indexedSessions"], 3);
    assert_eq!(
        code(index.walk(JsValue::from_str("codex.jsonl"))),
        "session_not_found"
    );
}

#[wasm_bindgen_test]
fn export_and_load_round_trip_equal_answers() {
    let config = json!({ "hotSessions": 2 });
    let mut index = index_with(&config);
    let requests = [
        json!({ "query": "schema_version" }),
        json!({ "query": "checkout", "pageSize": 2 }),
        json!({ "query": "ETIMEDOUT", "branches": "all" }),
    ];
    let before: Vec<Value> = requests
        .iter()
        .map(|r| recall(&mut index, r.clone()))
        .collect();
    let bytes = index.export_index().unwrap();
    assert_eq!(&bytes[..4], b"SDXB");

    // From an address that is not 16-aligned: the loader copies into aligned memory.
    let mut buffer = vec![0u8; bytes.len() + 2];
    let skip = if buffer.as_ptr() as usize % 16 == 15 {
        2
    } else {
        1
    };
    buffer[skip..skip + bytes.len()].copy_from_slice(&bytes);
    let unaligned = &buffer[skip..skip + bytes.len()];
    assert_ne!(unaligned.as_ptr() as usize % 16, 0);
    let mut again = SessionIndex::load(unaligned, js(&config)).unwrap();
    let after: Vec<Value> = requests
        .iter()
        .map(|r| recall(&mut again, r.clone()))
        .collect();
    assert_eq!(after, before);
    assert_eq!(
        val(&again.sessions(JsValue::UNDEFINED).unwrap()),
        val(&index.sessions(JsValue::UNDEFINED).unwrap())
    );
    // Follow calls of the exporter's hits work in the loaded index.
    let x = val(&again.call(js(&before[0]["hits"][0]["follow"])).unwrap());
    assert_eq!(x["entries"][0]["entryId"], "l10");

    let mut damaged = bytes.clone();
    damaged[100] ^= 1;
    assert_eq!(
        code(SessionIndex::load(&damaged, JsValue::UNDEFINED)),
        "index_corrupt"
    );
    assert_eq!(
        code(SessionIndex::load(b"SDXB", JsValue::UNDEFINED)),
        "index_corrupt"
    );
}

/// The browser build leaves out the rarer Unicode property tables of the regex engine
/// (docs/wasm.md): general categories work, a script class is refused with `invalid_regex`.
#[wasm_bindgen_test]
fn regex_unicode_scripts_are_refused_and_categories_kept() {
    let mut index = loaded();
    assert_eq!(
        code(index.recall(js(
            &json!({ "query": r"\p{Greek}+", "queryMode": "regex", "scope": "global" })
        ))),
        "invalid_regex"
    );
    let page = recall(
        &mut index,
        json!({ "query": r"schema_\p{L}+", "queryMode": "regex", "scope": "global" }),
    );
    assert!(page["total"].as_u64().unwrap_or(0) > 0, "{page}");
}

/// testdata/sessions/secrets-pi.jsonl: made-up credentials of every redacted kind.
const SECRETS: &[u8] = include_bytes!("../../../testdata/sessions/secrets-pi.jsonl");
/// One of them, a GitHub token in entries `e0` (the title), `u2`, `a2`, `a2/0`, `r2`.
const TOKEN: &str = "ghp_SyNtHeTiC0123456789abcdefABCDEFghijKL";

fn secrets_index(config: &Value) -> SessionIndex {
    let mut index = SessionIndex::new(js(config)).unwrap();
    index.add_file("secrets.jsonl", SECRETS).unwrap();
    index
}

/// The `text` of every record a walk selector yields.
fn walk_texts(index: &mut SessionIndex, selector: &Value) -> Vec<String> {
    js_sys::try_iter(&index.walk(js(selector)).unwrap())
        .unwrap()
        .unwrap()
        .map(|r| val(&r.unwrap())["text"].as_str().unwrap().to_owned())
        .collect()
}

#[wasm_bindgen_test]
fn secrets_are_redacted_unless_reveal_or_redact_secrets_false() {
    let mut index = secrets_index(&Value::Null);
    for mode in ["literal", "phrase", "fuzzy"] {
        let page = recall(&mut index, json!({ "query": TOKEN, "queryMode": mode }));
        assert_eq!(page["total"], 0, "{mode}");
    }
    let page = recall(
        &mut index,
        json!({ "query": "SyNtHeTiC0123456789", "queryMode": "regex" }),
    );
    assert_eq!(page["total"], 0);

    let want = "please configure the service, the github_token credential is {} thanks";
    let u2 = |index: &mut SessionIndex, reveal: Option<bool>| -> Value {
        let mut req = json!({ "session": "secrets.jsonl", "entryIds": ["u2"] });
        if let Some(r) = reveal {
            req["reveal"] = json!(r);
        }
        val(&index.expand(js(&req)).unwrap())["entries"][0]["text"].clone()
    };
    assert_eq!(
        u2(&mut index, None),
        want.replace("{}", "[redacted:github_token]")
    );
    assert_eq!(
        u2(&mut index, Some(false)),
        want.replace("{}", "[redacted:github_token]")
    );
    assert_eq!(u2(&mut index, Some(true)), want.replace("{}", TOKEN));

    let hidden = walk_texts(&mut index, &json!("secrets.jsonl"));
    let shown = walk_texts(
        &mut index,
        &json!({ "session": "secrets.jsonl", "reveal": true }),
    );
    assert_eq!(hidden.len(), shown.len());
    assert!(!hidden.iter().any(|t| t.contains("SyNtHeTiC")));
    assert_eq!(hidden.iter().filter(|t| t.contains(TOKEN)).count(), 0);
    assert_eq!(shown.iter().filter(|t| t.contains(TOKEN)).count(), 5);

    // Policy off: recall finds the token where it is, and snippets show it.
    let mut open = secrets_index(&json!({ "redactSecrets": false }));
    let page = recall(&mut open, json!({ "query": TOKEN }));
    let mut ids = entry_ids(&page);
    ids.sort_unstable();
    assert_eq!(ids, ["a2", "a2/0", "e0", "r2", "u2"]);
    for h in page["hits"].as_array().unwrap() {
        let text = h["snippet"]["text"].as_str().unwrap();
        assert!(text.contains(TOKEN), "{text}");
    }
    assert_eq!(u2(&mut open, None), want.replace("{}", TOKEN));
    assert_eq!(
        code(SessionIndex::new(js(&json!({ "redactSecrets": "no" })))),
        "invalid_config"
    );
}

/// A pi session whose tool output is 20,000 bytes of filler, then `tail`: past the
/// `maxEntryChars` cut (2,000 by default).
fn long_session(tail: &str) -> Vec<u8> {
    let output = format!(
        "{}the answer is {tail} here.",
        "lorem ipsum dolor sit amet ".repeat(20_000 / 27)
    );
    let lines = [
        json!({"type": "session", "version": 3, "id": "big",
               "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}),
        json!({"type": "message", "id": "u1", "parentId": null,
               "timestamp": "2026-01-01T00:00:01.000Z",
               "message": {"role": "user", "content": "run the build"}}),
        json!({"type": "message", "id": "t1", "parentId": "u1",
               "timestamp": "2026-01-01T00:00:02.000Z",
               "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                           "isError": false, "content": [{"type": "text", "text": output}]}}),
    ];
    lines
        .iter()
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes()
}

#[wasm_bindgen_test]
fn a_snippet_past_the_cut_is_redacted_as_the_index_is() {
    let bytes = long_session(&format!("zebracorn7 with token {TOKEN}"));
    for (redact, shown) in [(true, "[redacted:github_token]"), (false, TOKEN)] {
        let mut index = SessionIndex::new(js(&json!({ "redactSecrets": redact }))).unwrap();
        index.add_file("big.jsonl", &bytes).unwrap();
        let page = recall(&mut index, json!({ "query": "zebracorn7" }));
        assert_eq!(entry_ids(&page), ["t1"]);
        let hit = &page["hits"][0];
        assert_eq!(hit.get("snippetUnavailable"), None, "{hit}");
        let text = hit["snippet"]["text"].as_str().unwrap();
        assert!(
            text.contains(&format!("zebracorn7 with token {shown} here.")),
            "{text}"
        );
        assert_eq!(text.contains("SyNtHeTiC"), !redact, "{text}");
    }
}
