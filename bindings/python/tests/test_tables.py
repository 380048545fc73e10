"""Walk.to_pandas / to_arrow and SessionList.to_pandas; the ImportError naming the extra."""

import sys
from pathlib import Path

import pytest

import sessiondex


def test_walk_to_pandas_row_count_equals_record_count(memory: sessiondex.Memory) -> None:
    pytest.importorskip("pandas")
    n = sum(1 for _ in memory.walk())
    df = memory.walk().to_pandas()
    assert len(df) == n > 0
    assert list(df.columns) == [a for a, _, _ in sessiondex.Record._fields]
    assert str(df["timestamp"].dtype).startswith("datetime64")
    assert df["index"].dtype.kind == "i"
    # One session, all branches.
    one = memory.sessions()[0]
    assert len(memory.walk(one.file, branches="all").to_pandas()) == sum(
        1 for _ in memory.walk(one.file, branches="all")
    )
    # After a partial iteration, to_pandas takes the rest.
    w = memory.walk()
    next(w)
    next(w)
    assert len(w.to_pandas()) == n - 2
    assert len(w.to_pandas()) == 0


def test_group_failures_by_tool(memory: sessiondex.Memory) -> None:
    pytest.importorskip("pandas")
    df = memory.walk().to_pandas()
    failed = df[df["outcome"] == "failed"]
    calls = failed[failed["type"] == "tool_call"]
    by_tool = calls.groupby("tool").size()
    assert by_tool.sum() == len(calls) > 0
    # recall finds each failure once (a result paired with its call defers to the call).
    page = memory.recall(outcome="failed", scope="global", page_size=100)
    hits = page.to_pandas()
    assert len(hits) == len(page.hits) == page.total > 0
    assert set(hits["outcome"]) == {"failed"}
    rows = set(zip(failed["file"], failed["index"]))
    assert set(zip(hits["file"], hits["index"])) <= rows
    assert set(zip(calls["file"], calls["index"])) <= set(zip(hits["file"], hits["index"]))


def test_walk_to_arrow(memory: sessiondex.Memory) -> None:
    pa = pytest.importorskip("pyarrow")
    n = sum(1 for _ in memory.walk())
    t = memory.walk().to_arrow()
    assert isinstance(t, pa.Table)
    assert t.num_rows == n
    assert t.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert t.schema.field("files_touched").type == pa.list_(pa.string())
    empty = memory.walk()
    list(empty)
    assert empty.to_arrow().num_rows == 0


def test_sessions_to_pandas(memory: sessiondex.Memory) -> None:
    pytest.importorskip("pandas")
    ss = memory.sessions()
    df = ss.to_pandas()
    assert len(df) == len(ss) == 4
    assert list(df["session_id"]) == [s.session_id for s in ss]
    assert str(df["last_ts"].dtype).startswith("datetime64")


def test_missing_extras_name_the_extra(memory: sessiondex.Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"sessiondex\[pandas\]"):
        memory.walk().to_pandas()
    with pytest.raises(ImportError, match=r"sessiondex\[pandas\]"):
        memory.sessions().to_pandas()
    with pytest.raises(ImportError, match=r"sessiondex\[pandas\]"):
        memory.recall("error", scope="global").to_pandas()
    with pytest.raises(ImportError, match=r"sessiondex\[arrow\]"):
        memory.walk().to_arrow()
