// The demo page: files in, an in-memory index, recall, and the records behind a hit.
// Everything runs in this page; `pkg/` is the package `make wasm` builds.
import init, { SessionIndex } from "./pkg/sessiondex.js";

const $ = (id) => document.getElementById(id);
const state = { index: null, lastPage: null, lastDetail: null, errors: [] };
// For tests and the console: the index and the last results, exactly as the package returned them.
window.sessiondex = state;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// Snippet highlights are UTF-8 byte ranges into the snippet text.
function highlighted(snippet) {
  const frag = document.createDocumentFragment();
  const bytes = new TextEncoder().encode(snippet.text);
  const dec = new TextDecoder();
  let at = 0;
  for (const [a, b] of snippet.highlights) {
    if (a > at) frag.append(dec.decode(bytes.slice(at, a)));
    frag.append(el("mark", {}, dec.decode(bytes.slice(a, b))));
    at = b;
  }
  if (at < bytes.length) frag.append(dec.decode(bytes.slice(at)));
  if (snippet.truncated) frag.append(" …");
  return frag;
}

function time(ts) {
  return ts ? ts.replace("T", " ").replace(/\.\d+Z$/, "Z") : "";
}

// Coverage in words, only when the answer is not authoritative.
function coverageWords(c) {
  if (!c || c.complete) return "";
  const parts = [];
  if (c.indexedSessions < c.eligibleSessions)
    parts.push(`${c.eligibleSessions - c.indexedSessions} of ${c.eligibleSessions} sessions are not indexed`);
  if (c.incompleteSessions) parts.push(`${c.incompleteSessions} session(s) could only be read in part`);
  if (c.staleSessions) parts.push(`${c.staleSessions} session(s) changed since they were indexed`);
  const reasons = c.reasons.length ? ` (${c.reasons.map((r) => r.replaceAll("_", " ")).join(", ")})` : "";
  return `Incomplete: ${parts.join("; ") || "some matches may be missing"}${reasons}. An empty answer is not proof of absence.`;
}

function showError(where, e) {
  where.replaceChildren(el("p", { class: "error" }, `${e.code ? e.code + ": " : ""}${e.message}`));
}

function refreshLoaded() {
  const list = $("loaded");
  list.replaceChildren();
  const page = state.index.sessions();
  for (const s of page.sessions) {
    list.append(el("li", {}, `${s.file} — ${s.format ?? "?"}, ${s.entryCount} entries${s.complete ? "" : " (read in part)"}`));
  }
  for (const { name, error } of state.errors) {
    list.append(el("li", { class: "err" }, `${name}: ${error.code}: ${error.message}`));
  }
  $("status").textContent = `${page.total} session(s) indexed in this page.`;
}

async function addFiles(files) {
  for (const { name, file } of files) {
    try {
      const bytes = new Uint8Array(await file.arrayBuffer());
      state.index.addFile(name, bytes);
    } catch (e) {
      state.errors.push({ name, error: e });
    }
  }
  refreshLoaded();
  if ($("query").value.trim()) search();
}

// Folders (where the browser gives entries): every file below, named by its relative path.
async function filesOfEntry(entry, out) {
  if (entry.isFile) {
    const file = await new Promise((res, rej) => entry.file(res, rej));
    out.push({ name: entry.fullPath.replace(/^\//, ""), file });
  } else if (entry.isDirectory) {
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
      if (!batch.length) break;
      for (const e of batch) await filesOfEntry(e, out);
    }
  }
}

function request() {
  const r = { scope: "global", queryMode: $("mode").value, queryMatch: $("match").value };
  const q = $("query").value.trim();
  if (q) r.query = q;
  for (const k of ["role", "tool", "outcome", "since", "until"]) {
    const v = $(k).value.trim();
    if (v) r[k] = v;
  }
  return r;
}

function renderHits(list, page, onPick) {
  list.replaceChildren();
  if (!page.hits.length) list.append(el("li", { class: "empty" }, "No matches."));
  for (const h of page.hits) {
    const who = [h.role, h.tool].filter(Boolean).join(" · ") || (h.kind === "session" ? "session candidate" : "");
    const meta = el("div", { class: "meta" },
      el("span", { class: "session", title: h.file }, h.sessionId),
      el("span", { class: "file" }, h.file),
      el("span", { class: "who" }, who),
      el("time", {}, time(h.timestamp)));
    if (h.outcome && h.outcome !== "succeeded") meta.append(el("span", { class: "failed" }, h.outcome));
    const body = h.snippet
      ? el("div", { class: "snippet" }, highlighted(h.snippet))
      : el("div", { class: "snippet" }, `matched: ${(h.matchedTerms || []).join(", ")} — click to search inside this session`);
    const li = el("li", { class: "hit", tabindex: "0", "data-kind": h.kind }, meta, body);
    li.addEventListener("click", () => onPick(h, li));
    li.addEventListener("keydown", (ev) => { if (ev.key === "Enter") onPick(h, li); });
    list.append(li);
  }
}

function renderExpansion(x) {
  const d = $("detail");
  d.replaceChildren(el("h2", {}, x.session.sessionId),
    el("p", { class: "meta" }, `${x.session.file} · ${x.session.format ?? ""} · ${x.session.entries} entries`));
  for (const r of x.entries) {
    const who = [r.role, r.tool].filter(Boolean).join(" · ");
    d.append(el("div", { class: "record" },
      el("div", { class: "meta" }, `#${r.index} ${r.type}${who ? " · " + who : ""} · ${time(r.timestamp)}${r.outcome ? " · " + r.outcome : ""}`),
      el("pre", {}, r.text),
      r.textRange.complete ? "" : el("p", { class: "hint" }, `characters ${r.textRange.start}–${r.textRange.end} of ${r.textRange.total}`)));
  }
  const words = coverageWords(x.coverage);
  if (words) d.append(el("p", { class: "hint" }, words));
}

function pick(hit, li) {
  document.querySelectorAll(".hit.selected").forEach((e) => e.classList.remove("selected"));
  li.classList.add("selected");
  try {
    const out = state.index.call(hit.follow);
    state.lastDetail = out;
    if (out.hits) {
      // A session hit: the follow call hydrated that session and searched it exactly.
      const d = $("detail");
      const inner = el("ol", { class: "inner" });
      d.replaceChildren(el("h2", {}, hit.sessionId), el("p", { class: "meta" }, `${out.total} match(es) inside ${hit.file}`), inner);
      renderHits(inner, out, pick);
    } else {
      renderExpansion(out);
    }
  } catch (e) {
    showError($("detail"), e);
  }
}

function search() {
  if (!state.index) return;
  try {
    const page = state.index.recall(request());
    state.lastPage = page;
    renderHits($("results"), page, pick);
    $("coverage").textContent = coverageWords(page.coverage) || `${page.total} match(es).`;
  } catch (e) {
    state.lastPage = null;
    showError($("results"), e);
    $("coverage").textContent = "";
  }
}

async function main() {
  await init();
  state.index = new SessionIndex();
  $("files").addEventListener("change", (ev) =>
    addFiles([...ev.target.files].map((file) => ({ name: file.webkitRelativePath || file.name, file }))));
  const drop = $("drop");
  drop.addEventListener("dragover", (ev) => { ev.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", async (ev) => {
    ev.preventDefault();
    drop.classList.remove("over");
    const out = [];
    const items = [...(ev.dataTransfer.items || [])];
    const entries = items.map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null));
    if (entries.some(Boolean)) {
      for (const e of entries) if (e) await filesOfEntry(e, out);
    } else {
      for (const file of ev.dataTransfer.files) out.push({ name: file.name, file });
    }
    await addFiles(out);
  });
  $("search").addEventListener("submit", (ev) => { ev.preventDefault(); search(); });
  for (const id of ["mode", "match", "outcome"]) $(id).addEventListener("change", search);
  document.body.dataset.ready = "true";
}

main().catch((e) => { $("status").textContent = `Could not start: ${e.message}`; });
