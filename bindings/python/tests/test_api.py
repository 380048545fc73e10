"""Every method of the API over the example corpus and the query corpus."""

import io
import json
import os
import pickle
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

import sessiondex
from sessiondex import _sessiondex


def test_config_keys_are_keywords_and_round_trip(tmp_path: Path) -> None:
    defaults = sessiondex.default_config()
    native = _sessiondex.default_config()
    assert len(defaults) == len(native) == 14
    assert defaults["redact_secrets"] is True
    # Every key of the Rust Config is a keyword argument of Memory.
    m = sessiondex.Memory([], index_dir=tmp_path, **{k: v for k, v in defaults.items()})
    assert m.config == defaults
    m = sessiondex.Memory([], index_dir=tmp_path, hot_sessions=3, index_thinking=True)
    assert m.config["hot_sessions"] == 3
    assert m.config["index_thinking"] is True
    assert m.config["max_sessions"] == defaults["max_sessions"]
    with pytest.raises(TypeError):
        sessiondex.Memory([], index_dir=tmp_path, hot_sesions=3)  # type: ignore[call-arg]


def test_sources_take_str_and_pathlike(examples: Path, tmp_path: Path) -> None:
    one = sessiondex.Memory(str(examples), index_dir=str(tmp_path / "a"))
    many = sessiondex.Memory([examples, str(examples / "pi")], index_dir=tmp_path / "b")
    assert one.sources == [str(examples)]
    assert many.sources == [str(examples), str(examples / "pi")]
    assert one.index_dir == str(tmp_path / "a")
    assert repr(one) == f"Memory(sources=[{str(examples)!r}], index_dir={str(tmp_path / 'a')!r})"
    assert one.to_dict()["config"] == one.config
    # Defaults come from the environment.
    assert isinstance(sessiondex.default_sources(), list)
    assert sessiondex.default_index_dir().endswith("sessiondex")


def test_relative_sources_are_absolute(
    examples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Taken from the current directory with . and .. resolved: the same files from another
    # directory are the same sessions of the same index, and hits name them absolute.
    first = sessiondex.Memory(examples, index_dir=tmp_path / "i")
    assert first.sync().indexed == 4
    monkeypatch.chdir(tmp_path)
    rel = sessiondex.Memory("examples/./pi/..", index_dir="i")
    assert rel.sources == [str(examples)]
    assert rel.index_dir == str(tmp_path / "i")
    report = rel.sync()
    assert (report.indexed, report.reused, report.removed) == (0, 4, 0)
    hits = rel.recall("timeout", scope="global")
    assert hits.total == 2
    assert all(h.file.startswith(str(examples) + os.sep) for h in hits)


def test_default_memory_uses_standard_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / ".pi/agent/sessions").mkdir(parents=True)
    m = sessiondex.Memory()
    assert m.sources == [str(tmp_path / ".pi/agent/sessions")]
    assert m.index_dir == str(tmp_path / "cache" / "sessiondex")
    # A relative XDG_CACHE_HOME is ignored (the XDG rule).
    monkeypatch.setenv("XDG_CACHE_HOME", "cache")
    expected = "Library/Caches/sessiondex" if sys.platform == "darwin" else ".cache/sessiondex"
    assert sessiondex.default_index_dir() == str(tmp_path / expected)
    assert m.sync().coverage.eligible_sessions == 0


def test_sync_report_and_progress(memory: sessiondex.Memory) -> None:
    calls = []
    report = memory.sync(progress=lambda done, total: calls.append((done, total)))
    assert isinstance(report, sessiondex.SyncReport)
    assert report.indexed == 4 and report.failed == 0
    assert report.coverage.complete
    assert report.coverage.eligible_sessions == report.coverage.indexed_sessions == 4
    assert calls[-1] == (4, 4)
    assert all(t == 4 for _, t in calls)
    again = memory.sync()
    assert again.indexed == 0 and again.reused == 4
    d = report.to_dict()
    assert d["bytes_read"] == report.bytes_read > 0
    assert d["coverage"]["reasons"] == []
    assert "SyncReport(indexed=4" in repr(report)
    assert memory.sync(branches="all").coverage.complete


def test_sync_progress_true_uses_tqdm(memory: sessiondex.Memory, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    memory.sync(progress=True)
    assert "sessiondex sync" in capsys.readouterr().err


def test_sync_progress_true_without_tqdm(
    memory: sessiondex.Memory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    memory.sync(progress=True)
    assert "sessiondex sync: 4/4 sessions" in capsys.readouterr().err


def test_sync_progress_errors_are_raised(memory: sessiondex.Memory) -> None:
    def boom(done: int, total: int) -> None:
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        memory.sync(progress=boom)
    with pytest.raises(TypeError):
        memory.sync(progress=3)  # type: ignore[arg-type]
    # The sync itself went through.
    assert memory.sync().reused == 4


def test_recall_page_hits_and_follow(memory: sessiondex.Memory) -> None:
    page = memory.recall("error", scope="global", page_size=1)
    assert isinstance(page, sessiondex.RecallPage)
    assert page.total == 2 and len(page.hits) == 1 and len(page) == 1
    hit = page.hits[0]
    assert page[0] == hit and list(page) == [hit]
    assert hit.kind == "entry"
    for attr in ("session_id", "file", "entry_id", "index", "role", "timestamp", "score", "snippet", "follow"):
        assert getattr(hit, attr) is not None, attr
    assert isinstance(hit.snippet, sessiondex.Snippet)
    assert hit.snippet.highlights and all(isinstance(h, tuple) for h in hit.snippet.highlights)
    assert str(hit.snippet) == hit.snippet.text
    assert hit.follow.ref == "expand" and isinstance(hit.follow.args, dict)
    assert page.coverage.complete and page.coverage.reasons == []
    # Hit repr is one short line.
    assert repr(hit).startswith("Hit(entry ") and "\n" not in repr(hit) or "\\n" in repr(hit)
    assert len(repr(hit)) < 200
    assert "total=2" in repr(page)
    # follow, unchanged or as its dict form, or through JSON.
    x = memory.call(hit.follow)
    assert isinstance(x, sessiondex.ExpandResult)
    assert x.entries[0].index == hit.index and x.entries[0].entry_id == hit.entry_id
    assert memory.call(hit.follow.to_dict()) == x
    assert memory.call(json.loads(json.dumps(hit.follow.to_dict()))) == x
    # next pages to the end.
    assert page.next is not None and page.next.ref == "recall"
    second = memory.call(page.next)
    assert isinstance(second, sessiondex.RecallPage)
    assert second.total == 2 and second.next is None
    assert second.hits[0].file != hit.file or second.hits[0].index != hit.index
    d = page.to_dict()
    assert d["hits"][0]["session_id"] == hit.session_id
    assert d["hits"][0]["follow"] == hit.follow.to_dict()
    assert d["next"] == page.next.to_dict()
    json.dumps(d)


def test_recall_keywords(memory: sessiondex.Memory, examples: Path) -> None:
    failed = memory.recall(outcome="failed", scope="global", page_size=100)
    assert failed.total > 0
    assert all(h.outcome == "failed" for h in failed.hits)
    tools = {h.tool for h in failed.hits}
    one = next(iter(t for t in tools if t))
    assert all(h.tool == one for h in memory.recall(tool=one, scope="global", page_size=100).hits)
    assert memory.recall("error", scope="global", role="tool").total == 2
    assert memory.recall("error", scope="global", role="user").total == 0
    assert memory.recall("migration table", mode="phrase", scope="global").total >= 0
    assert memory.recall("no such table", mode="phrase", scope="global").total == 1
    assert memory.recall("erro", mode="fuzzy", scope="global").total >= 2
    assert memory.recall(r"TS\d+", mode="regex", scope="global").total == 1
    assert memory.recall("error table", match="all", scope="global").total == 1
    # since/until take datetimes (naive means UTC), dates and strings.
    everything = memory.recall(scope="global", page_size=100).total
    assert everything > 0
    assert memory.recall(scope="global", since=datetime(2030, 1, 1)).total == 0
    assert memory.recall(scope="global", until=date(2000, 1, 1)).total == 0
    assert memory.recall(scope="global", since="2000-01-01", until="2100-01-01", page_size=100).total == everything
    aware = datetime(2000, 1, 1, tzinfo=timezone(timedelta(hours=5)))
    assert memory.recall(scope="global", since=aware, page_size=100).total == everything
    # ref, provider, action: exact typed filters.
    call = next(r for r in memory.walk() if r.ref is not None and r.provider is not None)
    for kw in ("ref", "provider", "action"):
        hits = memory.recall(scope="global", page_size=100, **{kw: getattr(call, kw)}).hits
        assert hits and all(h.tool is not None for h in hits), kw
    # scope session:<path> with entry_range; cwd for project scope.
    f = str(next(examples.rglob("*.jsonl")))
    p = memory.recall(scope=f"session:{f}", entry_range=(0, 1), page_size=100)
    assert p.total == 2 and {h.index for h in p.hits} == {0, 1}
    cwd = memory.sessions()[0].cwd
    assert memory.recall(cwd=cwd, page_size=100).total > 0
    assert memory.recall(cwd=Path("/nowhere/at/all")).total == 0
    assert memory.recall(scope="global", branches="all").total > 0


def test_expand_selectors(corpus_memory: sessiondex.Memory, corpus: Path) -> None:
    sa = corpus / "alpha" / "sa.jsonl"
    x = corpus_memory.expand("sa", indices=[0, 3])
    assert [e.entry_id for e in x] == ["u1", "t1"]
    assert x.session.session_id == "sa" and x.session.file == str(sa)
    assert x.session.entries == len(list(corpus_memory.walk("sa")))
    assert x.entries[0].text_range.complete
    assert corpus_memory.expand(sa, indices=3)[0].entry_id == "t1"
    assert [e.entry_id for e in corpus_memory.expand(sa, entry_ids=["a2", "u2"])] == ["a2", "u2"]
    assert [e.entry_id for e in corpus_memory.expand("sa", addresses="a1/0")] == ["a1/0"]
    assert [e.entry_id for e in corpus_memory.expand("sa", range=(1, 3))] == ["a1", "a1/0", "t1"]
    ctx = corpus_memory.expand("sa", entry_ids="t1", before=1, after=2)
    assert [e.entry_id for e in ctx] == ["a1/0", "t1", "a2", "a2/0"]
    assert [e.entry_id for e in corpus_memory.expand("sc", entry_ids="x1", branches="all")] == ["x1"]
    # maxChars chunks, continued through next to the whole text.
    whole = corpus_memory.expand("sa", range=(0, 7))
    part = corpus_memory.expand("sa", range=(0, 7), max_chars=7)
    texts: list = []
    while True:
        for e in part.entries:
            if texts and texts[-1][0] == e.index and e.text_range.start > 0:
                texts[-1][1] += e.text
            else:
                texts.append([e.index, e.text])
        if part.next is None:
            break
        nxt = corpus_memory.call(part.next)
        assert isinstance(nxt, sessiondex.ExpandResult)
        part = nxt
    assert texts == [[e.index, e.text] for e in whole.entries]
    # Integrity bindings pin a read.
    same = corpus_memory.expand(
        "sa", indices=[0], source_hash=x.session.source_hash, lineage_fingerprint=x.session.lineage_fingerprint
    )
    assert same.entries[0].entry_id == "u1"
    d = x.to_dict()
    assert d["entries"][0]["text_range"]["complete"] is True
    assert d["entries"][0]["class_"] == x.entries[0].class_
    assert "ExpandResult('sa.jsonl', entries=2" in repr(x)


def test_walk_one_session_and_all(corpus_memory: sessiondex.Memory, corpus: Path) -> None:
    records = list(corpus_memory.walk("sa"))
    assert [r.index for r in records] == list(range(len(records)))
    assert all(isinstance(r, sessiondex.Record) for r in records)
    assert {r.session_id for r in records} == {"sa"}
    assert records[0].type == "message" and records[0].role == "user"
    calls = [r for r in records if r.operation_address]
    assert calls and calls[0].ref is not None and calls[0].type == "tool_call"
    assert repr(records[0]).startswith("Record(#0 message role=user")
    assert records[0].to_dict()["entry_id"] == "u1"
    w = corpus_memory.walk("sa", range=(1, 2))
    assert [r.index for r in w] == [1, 2]
    assert w.session is not None and w.session.session_id == "sa"
    assert w.coverage is not None and w.coverage.complete
    assert "Walk(at SessionRef('sa'" in repr(w)
    assert repr(corpus_memory.walk("sa")) == "Walk(not started)"
    all_active = list(corpus_memory.walk(branches="active"))
    all_branches = list(corpus_memory.walk(branches="all"))
    assert len(all_branches) > len(all_active)
    assert {r.session_id for r in all_active} >= {"sa", "sb", "sc"}
    w = corpus_memory.walk()
    rest = w.to_dict()
    assert len(rest["records"]) == len(all_active)
    # notes.jsonl is no session: skipped and kept, as `sessiondex walk` reports it.
    assert [s["code"] for s in rest["skipped"]] == ["unknown_format"]
    assert rest["skipped"][0]["file"].endswith("notes.jsonl")
    with pytest.raises(sessiondex.InvalidRequestError):
        corpus_memory.walk(range=(0, 1))


def test_sessions_filters_and_list(
    corpus_memory: sessiondex.Memory, corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ss = corpus_memory.sessions()
    assert isinstance(ss, sessiondex.SessionList) and isinstance(ss, list)
    assert ss.total == len(ss) == 5
    assert all(isinstance(s, sessiondex.Session) for s in ss)
    last = [s.last_ts for s in ss]
    assert last == sorted(last, reverse=True)
    assert ss.coverage.indexed_sessions >= 5
    assert [s.session_id for s in corpus_memory.sessions(id="sa")] == ["sa"]
    assert {s.session_id for s in corpus_memory.sessions(cwd="/work/alpha")} == {"sa", "sb"}
    # A relative cwd, or one with `..`, is the directory it names from the process's.
    assert {s.session_id for s in corpus_memory.sessions(cwd="/work/beta/../alpha/")} == {"sa", "sb"}
    monkeypatch.chdir("/")
    assert {s.session_id for s in corpus_memory.sessions(cwd="work/alpha")} == {"sa", "sb"}
    assert len(corpus_memory.sessions(limit=2)) == 2
    assert corpus_memory.sessions(limit=2).total == 5
    assert len(corpus_memory.sessions(availability="available")) == 5
    assert len(corpus_memory.sessions(created_since=datetime(2100, 1, 1))) == 0
    assert len(corpus_memory.sessions(created_until=date(2100, 1, 1))) == 5
    assert corpus_memory.sessions(parent="nobody") == []
    assert len(corpus_memory.sessions(branches="all")) == 5
    d = ss.to_dict()
    assert d["total"] == 5 and d["sessions"][0]["session_id"] == ss[0].session_id
    assert repr(ss).startswith("SessionList(total=5, [Session(")
    with pytest.raises(sessiondex.InvalidTimeError):
        corpus_memory.sessions(created_since="yesterday")
    with pytest.raises(sessiondex.InvalidRequestError):
        corpus_memory.sessions(availability="sometimes")


def test_trace(tmp_path: Path) -> None:
    from conftest import REPO, copy_corpus

    src = copy_corpus(REPO / "testdata" / "sessions", tmp_path / "s")
    m = sessiondex.Memory(src, index_dir=tmp_path / "i")
    sessions = m.sessions()
    # Every file of testdata/sessions, the planted-secrets one included.
    assert sorted(Path(s.file).name for s in sessions) == [
        "cycle-claude.jsonl",
        "damaged-pi.jsonl",
        "missing-parent-claude.jsonl",
        "secrets-pi.jsonl",
    ]
    for s in sessions:
        t = m.trace(s.file)
        assert isinstance(t, sessiondex.Trace)
        assert t.session.file == s.file
        assert t.to_dict()["session"]["session_id"] == s.session_id
        assert repr(t).startswith("Trace(")
    missing = next(s for s in sessions if "missing-parent" in s.file)
    t = m.trace(Path(missing.file))
    assert t.unresolved_parent is None or isinstance(t.unresolved_parent, sessiondex.SessionLink)


def test_tokenize() -> None:
    assert sessiondex.tokenize("Hello World") == ["hello", "world"]


def test_errors_pickle_and_to_dict(memory: sessiondex.Memory) -> None:
    with pytest.raises(sessiondex.InvalidTimeError) as info:
        memory.recall(since="yesterday")
    e = info.value
    assert e.code == "invalid_time" and e.details["field"] == "since"
    assert str(e).startswith("invalid_time: ")
    assert e.to_dict()["code"] == "invalid_time"
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is type(e) and back.details == e.details and str(back) == str(e)
    assert type(e).__module__ == "sessiondex"
    assert isinstance(e, ValueError)


def test_to_dict_everywhere_is_json(memory: sessiondex.Memory) -> None:
    page = memory.recall("error", scope="global")
    objs = [
        memory.sync(),
        page,
        page.hits[0],
        page.hits[0].snippet,
        page.coverage,
        page.hits[0].follow,
        memory.call(page.hits[0].follow),
        memory.sessions(),
        memory.sessions()[0],
        memory.trace(memory.sessions()[0].session_id),
        memory.walk(),
        memory,
    ]
    for o in objs:
        json.dumps(o.to_dict())
        r = repr(o)
        assert len(r) < 600 and "\n" not in r, r
    buf = io.StringIO()
    print(objs[1], file=buf)
