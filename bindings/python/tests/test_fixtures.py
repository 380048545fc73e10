"""The real session logs of ../shared/fixtures/sessions (skipped with a notice when absent)."""

from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

import sessiondex
from conftest import SHARED_FIXTURES

pytestmark = pytest.mark.skipif(
    not SHARED_FIXTURES.is_dir(), reason=f"{SHARED_FIXTURES} is absent: real fixtures not run"
)


@pytest.fixture(scope="module")
def fixture_memory(tmp_path_factory: pytest.TempPathFactory) -> sessiondex.Memory:
    m = sessiondex.Memory(SHARED_FIXTURES, index_dir=tmp_path_factory.mktemp("fx") / "i", hot_sessions=10_000)
    m.sync()
    return m


def test_walk_everything(fixture_memory: sessiondex.Memory) -> None:
    pytest.importorskip("pandas")
    records = list(fixture_memory.walk())
    df = fixture_memory.walk().to_pandas()
    assert len(df) == len(records) > 0
    report = fixture_memory.sync()
    walked = {r.file for r in records}
    assert len(walked) == report.coverage.indexed_sessions
    assert df.groupby("session_id").size().sum() == len(records)
    # A session's walk equals the walk of everything restricted to it.
    one = records[0].file
    assert [r.to_dict() for r in fixture_memory.walk(one)] == [r.to_dict() for r in records if r.file == one]


def test_failed_calls_page_exactly(fixture_memory: sessiondex.Memory) -> None:
    want: Set[Tuple[str, int]] = set()
    by_file: Dict[str, List[sessiondex.Record]] = defaultdict(list)
    for r in fixture_memory.walk():
        by_file[r.file].append(r)  # type: ignore[index]
    for f, records in by_file.items():
        # A result defers to a call with its call id and its outcome (docs/query.md).
        calls = {(r.call_id, r.outcome) for r in records if r.type == "tool_call" and r.call_id}
        for r in records:
            paired_result = r.type != "tool_call" and (r.call_id, r.outcome) in calls
            if r.outcome == "failed" and not paired_result:
                want.add((f, r.index))
    page = fixture_memory.recall(outcome="failed", scope="global", page_size=7)
    assert page.total == len(want)
    got = []
    while True:
        for h in page.hits:
            assert h.outcome == "failed"
            got.append((h.file, h.index))
        if page.next is None:
            break
        nxt = fixture_memory.call(page.next)
        assert isinstance(nxt, sessiondex.RecallPage)
        page = nxt
    assert len(set(got)) == len(got)
    assert set(got) == want


def test_every_session_expands_and_traces(fixture_memory: sessiondex.Memory) -> None:
    sessions = fixture_memory.sessions()
    assert sessions.total == len(sessions) > 0
    for s in sessions:
        t = fixture_memory.trace(s.file)
        assert t.session.file == s.file
        if s.entry_count:
            x = fixture_memory.expand(s.file, indices=[s.entry_count - 1])
            assert x.entries[0].index == s.entry_count - 1
            with pytest.raises(sessiondex.IndexOutOfBoundsError):
                fixture_memory.expand(s.file, indices=[s.entry_count])


def test_hits_follow(fixture_memory: sessiondex.Memory) -> None:
    page = fixture_memory.recall("error", scope="global", page_size=20)
    assert page.hits
    for h in page.hits:
        x = fixture_memory.call(h.follow)
        if h.kind == "entry":
            assert isinstance(x, sessiondex.ExpandResult)
            assert x.entries[0].index == h.index


def test_pathological_regex_refused(fixture_memory: sessiondex.Memory) -> None:
    with pytest.raises(sessiondex.RegexTooLargeError):
        fixture_memory.recall("(a|b)*a(a|b){20}", mode="regex", scope="global")


def test_cold_follow(tmp_path: Path) -> None:
    m = sessiondex.Memory(SHARED_FIXTURES, index_dir=tmp_path / "cold", hot_sessions=0)
    page = m.recall("error", scope="global", page_size=5)
    assert page.hits and all(h.kind == "session" for h in page.hits)
    followed = m.call(page.hits[0].follow)
    assert isinstance(followed, sessiondex.RecallPage)
    assert all(h.kind == "entry" for h in followed.hits)
