"""Field groups (``in``) and identifier queries through the Python API: ``in_=`` and the
``"in"`` key (``in`` is a Python keyword), ``matched_in`` on hits, unknown groups."""

from pathlib import Path

import pytest

import sessiondex
from conftest import QUERIES, copy_corpus


@pytest.fixture
def ids(tmp_path: Path) -> sessiondex.Memory:
    corpus = copy_corpus(QUERIES / "identifiers", tmp_path / "ids")
    return sessiondex.Memory(corpus, index_dir=tmp_path / "index", hot_sessions=10, index_thinking=True)


def _names(page: sessiondex.RecallPage) -> list:
    return [f"{Path(h.file).name}#{h.index}" for h in page.hits]


def test_in_keyword(ids: sessiondex.Memory) -> None:
    page = ids.recall("kestrel", scope="global", in_=["tool_output"])
    assert _names(page) == ["tools.jsonl#3"]
    assert [h.matched_in for h in page.hits] == [["tool_output"]]
    assert page.hits[0].to_dict()["matched_in"] == ["tool_output"]


def test_in_one_name(ids: sessiondex.Memory) -> None:
    page = ids.recall("kestrel", scope="global", in_="thinking")
    assert _names(page) == ["tools.jsonl#1"]
    assert page.hits[0].matched_in == ["thinking"]


def test_in_as_a_key(ids: sessiondex.Memory) -> None:
    page = ids.recall("kestrel", scope="global", **{"in": ["tool_input"]})
    assert _names(page) == ["tools.jsonl#2"]
    assert page.hits[0].matched_in == ["tool_input"]


def test_in_through_a_call(ids: sessiondex.Memory) -> None:
    page = ids.call({"ref": "recall", "args": {"query": "kestrel config", "scope": "global", "in": ["tool_input", "tool_output"], "pageSize": 1}})
    assert _names(page) == ["tools.jsonl#2"]
    assert page.next is not None and page.next.args["in"] == ["tool_input", "tool_output"]
    assert _names(ids.call(page.next)) == ["tools.jsonl#3"]


def test_unknown_group_and_both_spellings(ids: sessiondex.Memory) -> None:
    with pytest.raises(sessiondex.SessionDexError) as info:
        ids.recall("kestrel", scope="global", in_=["prose"])
    assert info.value.code == "invalid_request"
    with pytest.raises(TypeError):
        ids.recall("kestrel", in_=["text"], **{"in": ["text"]})
    with pytest.raises(TypeError):
        ids.recall("kestrel", bogus=1)


def test_identifiers(ids: sessiondex.Memory) -> None:
    page = ids.recall("ZETA-999", scope="global")
    assert _names(page)[0] == "old.jsonl#0"
    page = ids.recall("0f1e2d3c4b5a", scope="global")
    assert page.hits[0].kind == "session" and Path(page.hits[0].file).name == "old.jsonl"
    for q in ["no such column: 999", '"unbalanced', "foo(", "a OR b NOT c", "*", ":", "-x"]:
        ids.recall(q, scope="global")
