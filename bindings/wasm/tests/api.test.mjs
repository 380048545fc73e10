// Node tests of the built package (bindings/wasm/demo/pkg, made by `make wasm`): every method of
// SessionIndex, its errors and codes, the walk iterator, export/load. They run the same .wasm and
// JS glue the page loads (the `web` target, instantiated with initSync).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..", "..");
const pkg = join(here, "..", "demo", "pkg");
const { initSync, SessionIndex } = await import(join(pkg, "sessiondex.js"));
initSync({ module: readFileSync(join(pkg, "sessiondex_bg.wasm")) });

function firstJsonl(dir) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      const f = firstJsonl(p);
      if (f) return f;
    } else if (name.endsWith(".jsonl")) return p;
  }
  return null;
}

const examples = join(root, "examples", "sessions");
const FILES = {
  "pi.jsonl": readFileSync(firstJsonl(join(examples, "pi"))),
  "codex.jsonl": readFileSync(firstJsonl(join(examples, "codex"))),
  "claude.jsonl": readFileSync(firstJsonl(join(examples, "claude-code"))),
};

function loaded(config) {
  const index = new SessionIndex(config);
  for (const [name, bytes] of Object.entries(FILES)) index.addFile(name, new Uint8Array(bytes));
  return index;
}

function throwsCode(fn, code) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Error, "an Error");
    assert.equal(e.code, code, e.message);
    return true;
  });
}

const plain = (v) => Object.getPrototypeOf(v) === Object.prototype;

test("addFile detects the format and returns the session row", () => {
  const index = new SessionIndex();
  const row = index.addFile("codex.jsonl", FILES["codex.jsonl"]);
  assert.ok(plain(row));
  assert.equal(row.file, "codex.jsonl");
  assert.equal(row.format, "codex");
  assert.equal(row.tier, "hot");
  assert.equal(row.availability, "available");
  assert.equal(index.addFile("pi.jsonl", FILES["pi.jsonl"]).format, "pi");
  assert.equal(index.addFile("claude.jsonl", FILES["claude.jsonl"]).format, "claude_code");
  assert.equal(index.sessions().total, 3);
});

test("unreadable input and bad config are errors with codes", () => {
  const index = new SessionIndex();
  throwsCode(() => index.addFile("notes.txt", new TextEncoder().encode("hello\n")), "unknown_format");
  assert.equal(index.sessions().total, 0);
  throwsCode(() => new SessionIndex({ hotSession: 3 }), "invalid_config");
  throwsCode(() => index.recall({ query: "x", pageSize: 0 }), "invalid_request");
  throwsCode(() => index.recall({ query: "(", queryMode: "regex" }), "invalid_regex");
  throwsCode(() => index.call({ ref: "nope", args: {} }), "invalid_call");
  throwsCode(() => index.expand({ session: "missing.jsonl", indices: [0] }), "session_not_found");
});

test("recall: plain objects shaped like the CLI's JSON, global scope by default", () => {
  const index = loaded();
  const page = index.recall({ query: "test error file" });
  assert.ok(plain(page) && plain(page.coverage) && Array.isArray(page.hits));
  assert.equal(page.coverage.complete, true);
  assert.equal(page.coverage.eligibleSessions, 3);
  assert.ok(page.total >= 3);
  const files = new Set(page.hits.map((h) => h.file));
  assert.deepEqual([...files].sort(), ["claude.jsonl", "codex.jsonl", "pi.jsonl"]);
  const h = page.hits[0];
  assert.equal(h.kind, "entry");
  assert.ok(plain(h.follow) && plain(h.follow.args));
  assert.equal(h.follow.ref, "expand");
  assert.equal(page.next, null);
  assert.equal(h.follow.args.scope, undefined);
  // pageSize 1: a next call that continues where the page stopped.
  const p1 = index.recall({ query: "test error file", pageSize: 1 });
  assert.equal(p1.hits.length, 1);
  const p2 = index.call(p1.next);
  assert.deepEqual(p2.hits[0], page.hits[1]);
});

test("expand and call(follow) re-read the bytes held; a replaced file makes old pointers stale", () => {
  const index = loaded();
  const hit = index.recall({ query: "checkout" }).hits[0];
  const x = index.call(hit.follow);
  assert.equal(x.session.file, hit.file);
  assert.equal(x.entries.length, 1);
  assert.equal(x.entries[0].index, hit.index);
  assert.ok(x.entries[0].text.includes(hit.snippet.text.replace(/ …$/, "")));
  const same = index.expand({ session: hit.file, indices: [hit.index], before: 1 });
  assert.equal(same.entries.length, 2);
  const grown = new Uint8Array([...FILES["pi.jsonl"], ...new TextEncoder().encode("\n")]);
  index.addFile("pi.jsonl", grown);
  throwsCode(() => index.call(hit.follow), "stale_pointer");
});

test("cold sessions (hotSessions) answer with session hits whose follow hydrates", () => {
  const index = loaded({ hotSessions: 1 });
  const rows = index.sessions().sessions;
  assert.equal(rows.filter((r) => r.tier === "cold").length, 2);
  const page = index.recall({ query: "error" });
  const s = page.hits.find((h) => h.kind === "session");
  assert.ok(s, JSON.stringify(page));
  assert.equal(s.follow.ref, "recall");
  const inner = index.call(s.follow);
  assert.ok(inner.hits.length > 0);
  assert.ok(inner.hits.every((h) => h.kind === "entry" && h.file === s.file));
});

test("walk is an iterator and an iterable with session and coverage", () => {
  const index = loaded();
  const it = index.walk("codex.jsonl");
  assert.equal(it.session.file, "codex.jsonl");
  assert.equal(it.coverage.complete, true);
  const first = it.next();
  assert.equal(first.done, false);
  assert.equal(first.value.index, 0);
  const rest = [...it];
  assert.equal(rest.length + 1, it.session.entries);
  assert.deepEqual(it.next(), { value: undefined, done: true });
  const ranged = [...index.walk({ session: "pi.jsonl", range: [1, 2] })];
  assert.deepEqual(ranged.map((r) => r.index), [1, 2]);
  throwsCode(() => index.walk({ session: "pi.jsonl", range: [0, 9999] }), "index_out_of_bounds");
  throwsCode(() => index.walk("nothing"), "session_not_found");
});

test("sessions filters; removeFile forgets", () => {
  const index = loaded();
  assert.equal(index.sessions({ limit: 1 }).sessions.length, 1);
  assert.equal(index.sessions({ id: "pi.jsonl" }).total, 1);
  throwsCode(() => index.sessions({ bogus: 1 }), "invalid_request");
  assert.equal(index.removeFile("pi.jsonl"), true);
  assert.equal(index.removeFile("pi.jsonl"), false);
  assert.equal(index.sessions().total, 2);
  assert.equal(index.recall({ query: "checkout" }).total, 0);
});

test("exportIndex / SessionIndex.load round trip; damage is index_corrupt", () => {
  const index = loaded({ hotSessions: 2 });
  const before = index.recall({ query: "test error file" });
  const bytes = index.exportIndex();
  assert.ok(bytes instanceof Uint8Array);
  assert.equal(new TextDecoder().decode(bytes.slice(0, 4)), "SDXB");
  // An unaligned copy, as JS buffers come: the loader copies into aligned memory.
  const shifted = new Uint8Array(bytes.length + 1).subarray(1);
  shifted.set(bytes);
  const again = SessionIndex.load(shifted, { hotSessions: 2 });
  assert.deepEqual(again.recall({ query: "test error file" }), before);
  assert.deepEqual(again.sessions(), index.sessions());
  const damaged = bytes.slice();
  damaged[100] ^= 1;
  throwsCode(() => SessionIndex.load(damaged), "index_corrupt");
});
