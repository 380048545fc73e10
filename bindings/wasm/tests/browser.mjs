// The demo page in real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core):
// serve bindings/wasm/demo on 127.0.0.1, load three session files of different formats through
// the file picker, search, assert the rendered hits, click one, assert the expanded text, save a
// screenshot under target/. Then the acceptance check: the page's results equal the CLI's JSON
// (target/debug/sessiondex, built by `make test-wasm`) for the same files and request.
//
// The files are staged under target/wasm-test/<set>/ as pi.jsonl, codex.jsonl, claude.jsonl and
// the CLI runs in that directory with `--source pi.jsonl ...`. The CLI names each file by its
// absolute path and the page by the name it was dropped with, so the staging directory's prefix
// is taken off the CLI's JSON text (`<dir>/pi.jsonl` becomes `pi.jsonl`); nothing else is
// ignored in the comparison.
import { spawn, execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..", "..");
const demo = join(root, "bindings", "wasm", "demo");
const cli = join(root, "target", "debug", "sessiondex");
const out = join(root, "target", "wasm-test");

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

// name -> source file, one per format.
const sets = {
  examples: {
    "pi.jsonl": firstJsonl(join(root, "examples/sessions/pi")),
    "codex.jsonl": firstJsonl(join(root, "examples/sessions/codex")),
    "claude.jsonl": firstJsonl(join(root, "examples/sessions/claude-code")),
  },
};
const shared = join(root, "..", "shared", "fixtures", "sessions");
if (existsSync(shared)) {
  sets.shared = {
    "pi.jsonl": join(shared, "pi/agent-sessions/small.jsonl"),
    "codex.jsonl": join(shared, "codex/agent-sessions/small.jsonl"),
    "claude.jsonl": join(shared, "claude-code/agent-sessions/small.jsonl"),
  };
  if (!Object.values(sets.shared).every(existsSync)) delete sets.shared;
} else {
  console.log("browser: ../shared/fixtures not present; the shared-fixture set is skipped");
}

// The request the page sends for a query typed in #query with the default controls.
const requestFor = (query) => ({ scope: "global", queryMode: "literal", queryMatch: "any", query });

function cliJson(dir, args) {
  const idx = join(dir, ".index");
  const text = execFileSync(
    cli,
    [...args, "--source", "pi.jsonl", "--source", "codex.jsonl", "--source", "claude.jsonl", "--index-dir", idx, "--json"],
    { cwd: dir, encoding: "utf8" },
  );
  const prefix = JSON.stringify(`${dir}/`).slice(1, -1);
  assert.ok(text.includes(prefix), `the CLI names files under ${dir}`);
  return JSON.parse(text.replaceAll(prefix, ""));
}

function serve() {
  return new Promise((res, rej) => {
    const p = spawn("python3", ["-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", demo], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let buf = "";
    const onData = (d) => {
      buf += d;
      const m = buf.match(/port (\d+)/);
      if (m) res({ proc: p, url: `http://127.0.0.1:${m[1]}/` });
    };
    p.stdout.on("data", onData);
    p.stderr.on("data", onData);
    p.on("exit", (c) => rej(new Error(`http.server exited (${c}): ${buf}`)));
  });
}

const t0 = Date.now();
const server = await serve();
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
  ],
});
let failed = false;
try {
  for (const [set, files] of Object.entries(sets)) {
    const dir = join(out, set);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const [name, src] of Object.entries(files)) copyFileSync(src, join(dir, name));

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const outside = [];
    page.on("request", (r) => { if (!r.url().startsWith(server.url)) outside.push(r.url()); });
    page.on("pageerror", (e) => { console.error(`page error: ${e.message}`); failed = true; });
    await page.goto(server.url);
    await page.waitForSelector("body[data-ready=true]");
    await page.setInputFiles("#files", Object.keys(files).map((n) => join(dir, n)));
    await page.waitForFunction(() => /^3 session\(s\)/.test(document.getElementById("status").textContent));

    // The query: examples use words planted in all three files; the shared set a common word.
    const query = set === "examples" ? "test error file" : "the";
    await page.fill("#query", query);
    await page.press("#query", "Enter");
    await page.waitForSelector("#results .hit");
    const hits = await page.$$eval("#results .hit", (els) => els.map((e) => ({
      session: e.querySelector(".session").textContent,
      file: e.querySelector(".file").textContent,
      who: e.querySelector(".who").textContent,
      time: e.querySelector("time").textContent,
      snippet: e.querySelector(".snippet").textContent,
      marks: [...e.querySelectorAll("mark")].map((m) => m.textContent.toLowerCase()),
    })));
    const pageResult = await page.evaluate(() => window.sessiondex.lastPage);
    assert.equal(hits.length, pageResult.hits.length, "one .hit per hit");
    assert.ok(hits.length > 0, `${set}: hits for "${query}"`);
    for (const [i, h] of hits.entries()) {
      const r = pageResult.hits[i];
      assert.equal(h.session, r.sessionId);
      assert.equal(h.file, r.file);
      if (r.kind === "entry") {
        assert.ok(h.marks.length > 0, `${set}: hit ${i} highlights a match`);
        assert.ok(h.time.length > 0 || !r.timestamp);
      }
    }
    if (set === "examples") {
      assert.deepEqual([...new Set(hits.map((h) => h.file))].sort(), ["claude.jsonl", "codex.jsonl", "pi.jsonl"]);
    }

    // Acceptance: the page's page equals the CLI's JSON for the same files and request.
    const cliPage = cliJson(dir, ["recall", query, "--scope", "global", "--mode", "literal", "--match", "any"]);
    assert.deepEqual(pageResult, cliPage, `${set}: page results equal \`sessiondex recall --json\``);

    // Click a hit: its follow call runs and the detail pane shows the expanded records.
    const k = pageResult.hits.findIndex((h) => h.kind === "entry");
    await page.click(`#results .hit >> nth=${k}`);
    await page.waitForSelector("#detail .record pre");
    const detailText = await page.$eval("#detail .record pre", (e) => e.textContent);
    const detail = await page.evaluate(() => window.sessiondex.lastDetail);
    const cliDetail = cliJson(dir, ["call", JSON.stringify(pageResult.hits[k].follow)]);
    assert.deepEqual(detail, cliDetail, `${set}: the expansion equals \`sessiondex call --json\``);
    assert.equal(detailText, cliDetail.entries[0].text);
    const snip = pageResult.hits[k].snippet.text;
    assert.ok(detailText.includes(snip), `${set}: the expanded text contains the snippet`);

    // A filter: the role control narrows the same way the CLI's --role does.
    await page.fill("#role", "assistant");
    await page.press("#query", "Enter");
    await page.waitForFunction(() => window.sessiondex.lastPage?.hits.every((h) => h.role === "assistant"));
    const filtered = await page.evaluate(() => window.sessiondex.lastPage);
    assert.deepEqual(filtered, cliJson(dir, ["recall", query, "--scope", "global", "--mode", "literal", "--match", "any", "--role", "assistant"]));
    await page.fill("#role", "");
    await page.press("#query", "Enter");
    await page.click(`#results .hit >> nth=${k}`);
    await page.waitForSelector("#detail .record pre");

    mkdirSync(join(root, "target"), { recursive: true });
    const shot = join(root, "target", `wasm-demo-${set}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    assert.deepEqual(outside, [], "nothing fetched from outside the page's origin");
    console.log(`browser: ${set}: ${hits.length} hits rendered, equal to the CLI; detail expanded; screenshot ${shot}`);
    await page.close();
  }
} catch (e) {
  failed = true;
  console.error(e);
} finally {
  await browser.close();
  server.proc.kill();
}
console.log(`browser: ${failed ? "FAILED" : "ok"} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
process.exit(failed ? 1 : 0);
