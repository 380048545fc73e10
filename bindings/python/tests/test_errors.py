"""One exception class per stable error code, and each reachable code triggered for real."""

import inspect
import os
from pathlib import Path
from typing import Callable, Dict

import pytest

import sessiondex
from sessiondex import _errors, _sessiondex

SESSION_LINE = (
    '{"type":"message","id":"late","parentId":null,"timestamp":"2026-02-01T00:00:00.000Z",'
    '"message":{"role":"user","content":"appended"}}\n'
)


def test_one_subclass_per_code() -> None:
    codes = _sessiondex.error_codes()
    assert len(codes) == len(set(codes)) == 19
    assert sorted(_errors.ERRORS) == sorted(codes)
    for code, cls in _errors.ERRORS.items():
        assert issubclass(cls, sessiondex.SessionDexError)
        assert cls.code == code
        name = "".join(p.capitalize() for p in code.split("_")) + "Error"
        assert cls.__name__ == name
        assert getattr(sessiondex, name) is cls
        assert name in sessiondex.__all__
    # A code added after this package was built still raises the base class, with its code.
    e = _errors._from_native("some_new_code", "new", {"k": 1})
    assert type(e) is sessiondex.SessionDexError and e.code == "some_new_code"
    assert e.details == {"k": 1}


def _append(path: Path) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(SESSION_LINE)


def _corrupt_hot_shards(index: Path) -> None:
    shards = [p for p in index.rglob("*.hot")]
    assert shards
    for p in shards:
        b = bytearray(p.read_bytes())
        b[len(b) // 2] ^= 0xFF
        p.write_bytes(bytes(b))


def _stale(m: sessiondex.Memory, corpus: Path) -> None:
    page = m.recall("timeout", cwd="/work/alpha")
    hit = next(h for h in page.hits if h.file.endswith("sa.jsonl"))
    _append(corpus / "alpha" / "sa.jsonl")
    m.call(hit.follow)


def _regex_too_large(tmp: Path, corpus: Path) -> None:
    m = sessiondex.Memory(corpus, index_dir=tmp / "small", regex_max_automaton_bytes=4096)
    m.recall("(a|b)*a(a|b){20}", mode="regex", scope="global")


def _source_unreadable(tmp: Path, corpus: Path) -> None:
    m = sessiondex.Memory(corpus, index_dir=tmp / "unreadable")
    m.sync()
    if os.geteuid() != 0:
        bad = tmp / "locked.jsonl"
        bad.write_text("{}\n")
        bad.chmod(0)
        m.walk(bad)
    # Root reads any file; this one is a file whose read fails (EIO at offset 0).
    proc = Path("/proc/self/mem")
    if not proc.is_file():
        pytest.skip("no unreadable file to try as root")
    m.walk(proc)


def _index_corrupt(tmp: Path, corpus: Path) -> None:
    # A recall repairs damaged index files (it removes them, syncs and answers again), so the
    # code surfaces where no sync runs first: expanding a session by its path reads the
    # catalog as it is.
    m = sessiondex.Memory(corpus, index_dir=tmp / "corrupt", hot_sessions=10)
    m.sync()
    catalogs = list((tmp / "corrupt").rglob("catalog"))
    assert catalogs
    for p in catalogs:
        b = bytearray(p.read_bytes())
        b[len(b) // 2] ^= 0xFF
        p.write_bytes(bytes(b))
    m.expand(corpus / "alpha" / "sa.jsonl", indices=[0])


def test_a_recall_repairs_damaged_hot_shards(corpus: Path, tmp_path: Path) -> None:
    m = sessiondex.Memory(corpus, index_dir=tmp_path / "repair", hot_sessions=10)
    clean = m.recall("timeout", scope="global").to_dict()
    _corrupt_hot_shards(tmp_path / "repair")
    assert m.recall("timeout", scope="global").to_dict() == clean


def _index_unavailable(tmp: Path, corpus: Path) -> None:
    plain = tmp / "plain"
    plain.write_text("x")
    sessiondex.Memory(corpus, index_dir=plain)


TRIGGERS: Dict[str, Callable[[sessiondex.Memory, Path, Path], object]] = {
    "invalid_request": lambda m, c, t: m.recall(page_size=0),
    "invalid_query_mode": lambda m, c, t: m.recall("x", mode="semantic"),
    "invalid_scope": lambda m, c, t: m.recall("x", scope="everything"),
    "invalid_time": lambda m, c, t: m.recall(since="2025-02-01", until="2025-01-01"),
    "regex_pattern_too_long": lambda m, c, t: m.recall("a" * 2000, mode="regex", scope="global"),
    "regex_too_large": lambda m, c, t: _regex_too_large(t, c),
    "invalid_regex": lambda m, c, t: m.recall("(", mode="regex", scope="global"),
    "session_not_found": lambda m, c, t: m.expand("no-such-session", indices=[0]),
    "ambiguous_session": lambda m, c, t: m.expand("dup", indices=[0]),
    "stale_pointer": lambda m, c, t: _stale(m, c),
    "address_not_found": lambda m, c, t: m.expand("sa", entry_ids=["nope"]),
    "ambiguous_address": lambda m, c, t: m.expand(c / "gamma" / "dup-1.jsonl", entry_ids=["a1/0"]),
    "index_out_of_bounds": lambda m, c, t: m.expand("sa", indices=[999]),
    "index_corrupt": lambda m, c, t: _index_corrupt(t, c),
    "index_unavailable": lambda m, c, t: _index_unavailable(t, c),
    "source_unreadable": lambda m, c, t: _source_unreadable(t, c),
    "unknown_format": lambda m, c, t: m.expand(c / "gamma" / "notes.jsonl", indices=[0]),
    "invalid_config": lambda m, c, t: sessiondex.Memory(c, index_dir=t / "cfg", max_sessions=-1),
    "invalid_call": lambda m, c, t: m.call({"ref": "walk", "args": {}}),
}


def test_every_code_has_a_trigger() -> None:
    assert sorted(TRIGGERS) == sorted(_sessiondex.error_codes())


@pytest.mark.parametrize("code", sorted(TRIGGERS))
def test_error_raised_for_real(
    code: str, corpus_memory: sessiondex.Memory, corpus: Path, tmp_path: Path
) -> None:
    cls = _errors.ERRORS[code]
    with pytest.raises(cls) as info:
        TRIGGERS[code](corpus_memory, corpus, tmp_path)
    e = info.value
    assert e.code == code
    assert e.message
    assert isinstance(e, sessiondex.SessionDexError)
    if code == "ambiguous_session":
        assert len(e.details["candidates"]) == 2
    if code == "index_out_of_bounds":
        assert isinstance(e, IndexError) and e.details["index"] == 999


def test_stale_next_page(corpus_memory: sessiondex.Memory, corpus: Path) -> None:
    sa = corpus / "alpha" / "sa.jsonl"
    page = corpus_memory.recall(scope=f"session:{sa}", page_size=1)
    assert page.next is not None
    _append(sa)
    with pytest.raises(sessiondex.StalePointerError):
        corpus_memory.call(page.next)


def test_bad_calls(corpus_memory: sessiondex.Memory) -> None:
    for bad in (None, {}, {"ref": "recall"}, {"ref": "recall", "args": 1}, "text", 3):
        with pytest.raises(sessiondex.InvalidCallError):
            corpus_memory.call(bad)  # type: ignore[arg-type]
    with pytest.raises(sessiondex.InvalidRequestError):
        corpus_memory.call({"ref": "recall", "args": {"bogus": 1}})
    with pytest.raises(sessiondex.InvalidRequestError):
        corpus_memory.recall(branches="some")
    with pytest.raises(sessiondex.InvalidRequestError):
        corpus_memory.sync(branches="some")
    with pytest.raises(sessiondex.InvalidRequestError):
        corpus_memory.expand("sa")
    with pytest.raises(sessiondex.InvalidRequestError):
        corpus_memory.recall(outcome="exploded")
    with pytest.raises(sessiondex.InvalidConfigError):
        sessiondex.Memory([], max_sessions="many")  # type: ignore[arg-type]


def test_exception_classes_document_their_code() -> None:
    for cls in _errors.ERRORS.values():
        assert inspect.getdoc(cls)
