"""The shared data-driven query cases of testdata/queries/*.toml, as the Rust suite runs them
(crates/sessiondex/tests/query.rs), through the Python API.

A request whose fields all have a keyword goes through ``recall``/``expand`` with keywords (so
the keyword mapping is tested too); any other (``offset``, ``textOffset``, unknown fields, wrong
types) goes through ``call`` unchanged.
"""

import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import sessiondex
from conftest import QUERIES, copy_corpus

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASE_FILES = sorted(QUERIES.glob("*.toml"))

RECALL_KW = {
    "query": "query",
    "queryMode": "mode",
    "queryMatch": "match",
    "scope": "scope",
    "cwd": "cwd",
    "branches": "branches",
    "role": "role",
    "tool": "tool",
    "ref": "ref",
    "provider": "provider",
    "action": "action",
    "outcome": "outcome",
    "since": "since",
    "until": "until",
    "entryRange": "entry_range",
    "pageSize": "page_size",
    "in": "in_",
}
EXPAND_KW = {
    "session": "session",
    "indices": "indices",
    "entryIds": "entry_ids",
    "addresses": "addresses",
    "operationAddresses": "addresses",
    "range": "range",
    "before": "before",
    "after": "after",
    "maxChars": "max_chars",
    "branches": "branches",
    "sourceHash": "source_hash",
    "lineageFingerprint": "lineage_fingerprint",
}
LIST_FIELDS = {"indices", "entryIds", "addresses", "operationAddresses", "range", "entryRange", "in"}
SESSIONS_KW = {
    "id": "id",
    "cwd": "cwd",
    "createdSince": "created_since",
    "createdUntil": "created_until",
    "parent": "parent",
    "availability": "availability",
    "limit": "limit",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _base(f: str) -> str:
    return os.path.basename(f)


def _cases() -> List[Any]:
    out = []
    for f in CASE_FILES:
        data = tomllib.loads(f.read_text(encoding="utf-8"))
        for i, case in enumerate(data["case"]):
            out.append(pytest.param(f.name, i, id=f"{f.stem}: {case['name']}"))
    return out


class Ctx:
    def __init__(self, memory: sessiondex.Memory, data: Dict[str, Any], corpus: Path) -> None:
        self.memory = memory
        self.data = data
        self.dir = corpus
        self.cwd: Optional[str] = data.get("cwd")


_CTX: Dict[str, Ctx] = {}


@pytest.fixture
def ctx(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("SESSIONDEX_SESSION", raising=False)

    def get(name: str) -> Ctx:
        if name not in _CTX:
            data = tomllib.loads((QUERIES / name).read_text(encoding="utf-8"))
            assert "session" not in data, "a current-session context is not supported here"
            tmp = tmp_path_factory.mktemp(Path(name).stem)
            corpus = copy_corpus(QUERIES / data["corpus"], tmp / "corpus")
            config = {_snake(k): v for k, v in data.get("config", {}).items()}
            memory = sessiondex.Memory(corpus, index_dir=tmp / "index", **config)
            _CTX[name] = Ctx(memory, data, corpus)
        return _CTX[name]

    return get


def _with_cwd(c: Ctx, req: Dict[str, Any]) -> Dict[str, Any]:
    if c.cwd is not None and "cwd" not in req:
        return {**req, "cwd": c.cwd}
    return req


def _keywords(req: Dict[str, Any], mapping: Dict[str, str]) -> Optional[Dict[str, Any]]:
    if not isinstance(req, dict) or any(k not in mapping for k in req):
        return None
    if any(k in LIST_FIELDS and not isinstance(v, list) for k, v in req.items()):
        return None
    if any(v is None for v in req.values()):
        return None
    return {mapping[k]: (tuple(v) if k in ("range", "entryRange") else v) for k, v in req.items()}


def run(c: Ctx, op: str, req: Dict[str, Any]) -> Any:
    if op == "recall":
        req = _with_cwd(c, req)
        kw = _keywords(req, RECALL_KW)
        if kw is not None:
            return c.memory.recall(**kw)
        return c.memory.call({"ref": "recall", "args": req})
    if op == "expand":
        kw = _keywords(req, EXPAND_KW)
        if kw is not None and "session" in kw:
            return c.memory.expand(**kw)
        return c.memory.call({"ref": "expand", "args": req})
    if op == "call":
        return c.memory.call(req)
    raise AssertionError(f"unknown op {op}")


def hit_names(p: sessiondex.RecallPage) -> List[str]:
    return [f"{_base(h.file)}#{h.index}" if h.kind == "entry" else _base(h.file) for h in p.hits]


def names(r: Any) -> List[str]:
    if isinstance(r, sessiondex.RecallPage):
        return hit_names(r)
    return [e.entry_id for e in r.entries]


def test_case_files_exist() -> None:
    assert CASE_FILES, "testdata/queries/*.toml"


@pytest.mark.parametrize(("file", "index"), _cases())
def test_query_case(ctx: Any, file: str, index: int) -> None:
    c: Ctx = ctx(file)
    case = c.data["case"][index]
    name = case["name"]
    text = case["request"].replace("{dir}", str(c.dir))
    import json

    req = json.loads(text)
    op = case.get("op", "recall")
    if op in ("sessions", "trace"):
        if op == "sessions":
            kw = _keywords(req, SESSIONS_KW)
            assert kw is not None, name
            got = [_base(s.file) for s in c.memory.sessions(**kw)]
        else:
            t = c.memory.trace(req["session"])
            got = [f"session {_base(t.session.file)}"]
            got += [f"ancestor {_base(a.session.file)}" for a in t.ancestors]
            got += [f"root {_base(t.root.file)}"] if t.root is not None else []
            got += [f"unresolved {t.unresolved_parent.target}"] if t.unresolved_parent is not None else []
            got += [f"descendant {_base(d.session.file)}" for d in t.descendants]
        assert got == case.get("hits"), name
        return
    if "error" in case:
        with pytest.raises(sessiondex.SessionDexError) as info:
            run(c, op, req)
        assert info.value.code == case["error"], f"{name}: {info.value}"
        assert type(info.value) is sessiondex._errors.ERRORS[case["error"]]
        if case["error"] == "ambiguous_session":
            assert len(info.value.details["candidates"]) == 2, name
        return
    result = run(c, op, req)
    if "hits" in case:
        assert names(result) == case["hits"], name
    if "hits_unordered" in case:
        assert sorted(names(result)) == sorted(case["hits_unordered"]), name
    if isinstance(result, sessiondex.RecallPage) and "total" in case:
        assert result.total == case["total"], name
    if "complete" in case:
        assert result.coverage.complete == case["complete"], f"{name}: {result.coverage!r}"
    if "reasons" in case:
        assert result.coverage.reasons == case["reasons"], name
    if "matched_in" in case:
        assert [h.matched_in for h in result.hits] == case["matched_in"], name
    if "kinds" in case:
        assert [h.kind for h in result.hits] == case["kinds"], name
    if "paginate" in case:
        page = result
        seen = hit_names(page)
        guard = 0
        while page.next is not None:
            guard += 1
            assert guard < 1000, f"{name}: endless pages"
            page = c.memory.call(page.next)
            assert page.hits, f"{name}: empty page with a next"
            seen += hit_names(page)
        assert len(set(seen)) == len(seen), f"{name}: duplicates in {seen}"
        assert seen == case["paginate"], name
    if "follow_first" in case:
        followed = c.memory.call(result.hits[0].follow)
        assert names(followed) == case["follow_first"], name
    if "append_then_follow" in case:
        path = c.dir / case["append_then_follow"]
        with open(path, "a", encoding="utf-8") as f:
            f.write(
                '{"type":"message","id":"late","parentId":null,"timestamp":"2026-02-01T00:00:00.000Z",'
                '"message":{"role":"user","content":"appended"}}\n'
            )
        with pytest.raises(sessiondex.StalePointerError):
            c.memory.call(result.hits[0].follow)
        scope = req.get("scope") or ""
        if result.next is not None and scope.startswith("session"):
            with pytest.raises(sessiondex.StalePointerError):
                c.memory.call(result.next)
    if case.get("whole_text"):
        x = result
        texts: List[Tuple[int, str]] = []
        while True:
            for e in x.entries:
                if texts and texts[-1][0] == e.index and e.text_range.start > 0:
                    assert len(texts[-1][1]) == e.text_range.start, name
                    texts[-1] = (e.index, texts[-1][1] + e.text)
                else:
                    texts.append((e.index, e.text))
            if x.next is None:
                break
            x = c.memory.call(x.next)
        full = c.memory.call({"ref": "expand", "args": {k: v for k, v in req.items() if k != "maxChars"}})
        assert texts == [(e.index, e.text) for e in full.entries], name
