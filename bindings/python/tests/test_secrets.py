"""Secrets at ingest through the Python API (docs/secrets.md): over
testdata/sessions/secrets-pi.jsonl (made-up credentials) recall finds no planted token by
default, ``expand`` and ``walk`` show ``[redacted:<kind>]`` unless ``reveal=True``, and
``Memory(..., redact_secrets=False)`` indexes the tokens as they are. Also
``Hit.snippet_unavailable`` and the snippet of an entry read past the ``max_entry_chars`` cut
under both policies."""

import json
import shutil
from pathlib import Path
from typing import List

import pytest

import sessiondex
from conftest import REPO

FILE = "secrets-pi.jsonl"
TOKEN = "ghp_SyNtHeTiC0123456789abcdefABCDEFghijKL"
REDACTED = "[redacted:github_token]"
# The records of the file that hold TOKEN: the session title line, the user's request, the
# assistant's text and its tool call, the tool result.
HOLDERS = ["e0", "u2", "a2", "a2/0", "r2"]


@pytest.fixture
def secrets_dir(tmp_path: Path) -> Path:
    src = tmp_path / "s"
    src.mkdir()
    shutil.copyfile(REPO / "testdata" / "sessions" / FILE, src / FILE)
    return src


def _memory(src: Path, tmp_path: Path, **config: object) -> sessiondex.Memory:
    return sessiondex.Memory(src, index_dir=tmp_path / "index", **config)  # type: ignore[arg-type]


def test_recall_never_finds_a_planted_token_by_default(secrets_dir: Path, tmp_path: Path) -> None:
    m = _memory(secrets_dir, tmp_path)
    assert m.config["redact_secrets"] is True
    assert m.recall(TOKEN, scope="global").total == 0
    assert m.recall(TOKEN, mode="phrase", scope="global").total == 0
    assert m.recall("SyNtHeTiC0123456789", mode="regex", scope="global").total == 0
    assert m.recall(TOKEN, mode="fuzzy", scope="global").total == 0
    # What the index holds instead: the kind.
    page = m.recall("please configure github_token credential", match="all", scope="global")
    snippets = [h.snippet.text for h in page.hits if h.snippet is not None]
    assert any(REDACTED in s for s in snippets), snippets
    assert not any("SyNtHeTiC" in s for s in snippets), snippets
    assert [s.title for s in m.sessions()] == [f"deploy with token {REDACTED}"]


def test_redact_secrets_false_finds_the_planted_token(secrets_dir: Path, tmp_path: Path) -> None:
    m = _memory(secrets_dir, tmp_path, redact_secrets=False)
    assert m.config["redact_secrets"] is False
    page = m.recall(TOKEN, scope="global")
    assert sorted(h.entry_id for h in page.hits) == sorted(HOLDERS)
    assert all(h.snippet is not None and TOKEN in h.snippet.text for h in page.hits)
    assert m.recall(TOKEN, mode="phrase", scope="global").total == len(HOLDERS)
    assert [s.title for s in m.sessions()] == [f"deploy with token {TOKEN}"]


def test_expand_redacts_unless_reveal(secrets_dir: Path, tmp_path: Path) -> None:
    m = _memory(secrets_dir, tmp_path)
    file = secrets_dir / FILE
    want = "please configure the service, the github_token credential is {} thanks"
    assert [e.text for e in m.expand(file, entry_ids="u2")] == [want.format(REDACTED)]
    assert [e.text for e in m.expand(file, entry_ids="u2", reveal=True)] == [want.format(TOKEN)]
    # A follow of a hit expands redacted too.
    hit = m.recall("please configure github_token credential", match="all", scope="global").hits[0]
    followed = m.call(hit.follow)
    assert isinstance(followed, sessiondex.ExpandResult)
    assert not any("SyNtHeTiC" in e.text for e in followed.entries)


def _holding(records: List[sessiondex.Record], needle: str) -> List[str]:
    return [r.entry_id for r in records if needle in r.text]


def test_walk_redacts_unless_reveal(secrets_dir: Path, tmp_path: Path) -> None:
    m = _memory(secrets_dir, tmp_path)
    file = secrets_dir / FILE
    hidden = list(m.walk(file))
    shown = list(m.walk(file, reveal=True))
    assert len(hidden) == len(shown) == 53
    assert _holding(hidden, TOKEN) == []
    assert not any("SyNtHeTiC" in r.text for r in hidden)
    # u3..r3 hold a fine-grained token, also of kind github_token.
    assert _holding(hidden, REDACTED) == HOLDERS + ["u3", "a3", "a3/0", "r3"]
    assert _holding(shown, TOKEN) == HOLDERS
    # Every file under the sources (no session): the same.
    assert _holding(list(m.walk()), TOKEN) == []
    assert _holding(list(m.walk(reveal=True)), TOKEN) == HOLDERS


def test_walk_and_expand_show_the_source_with_the_policy_off(secrets_dir: Path, tmp_path: Path) -> None:
    m = _memory(secrets_dir, tmp_path, redact_secrets=False)
    assert _holding(list(m.walk(secrets_dir / FILE)), TOKEN) == HOLDERS
    assert TOKEN in m.expand(secrets_dir / FILE, entry_ids="u2").entries[0].text


TERM = "zebracorn7"


def _long_session(tail: str, size: int = 20_000) -> str:
    """A pi session whose tool output is ``size`` bytes of filler, then ``tail``."""
    output = "lorem ipsum dolor sit amet " * (size // 27) + f"the answer is {tail} here."
    lines = [
        {"type": "session", "version": 3, "id": "big", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "run the build"},
        },
        {
            "type": "message",
            "id": "t1",
            "parentId": "u1",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "bash",
                "isError": False,
                "content": [{"type": "text", "text": output}],
            },
        },
    ]
    return "".join(json.dumps(x) + "\n" for x in lines)


@pytest.mark.parametrize("redact", [True, False])
def test_snippet_past_the_cut_follows_the_policy(tmp_path: Path, redact: bool) -> None:
    src = tmp_path / "s"
    src.mkdir()
    (src / "big.jsonl").write_text(_long_session(f"{TERM} with token {TOKEN}"), encoding="utf-8")
    m = _memory(src, tmp_path, redact_secrets=redact)
    page = m.recall(TERM, scope="global")
    assert [h.entry_id for h in page.hits] == ["t1"]
    h = page.hits[0]
    assert h.snippet_unavailable is None
    assert h.snippet is not None
    shown = REDACTED if redact else TOKEN
    assert f"{TERM} with token {shown} here." in h.snippet.text
    assert ("SyNtHeTiC" in h.snippet.text) is not redact


def test_snippet_unavailable_is_a_hit_field(tmp_path: Path) -> None:
    # A stale source cannot be produced here (recall syncs first and re-indexes a changed
    # file); the Rust facade tests cover "stale_pointer". The field is there, None when the
    # snippet was read, and in to_dict.
    src = tmp_path / "s"
    src.mkdir()
    (src / "big.jsonl").write_text(_long_session(TERM), encoding="utf-8")
    hit = _memory(src, tmp_path).recall(TERM, scope="global").hits[0]
    assert hit.snippet is not None and TERM in hit.snippet.text
    assert hit.snippet_unavailable is None
    assert hit.to_dict()["snippet_unavailable"] is None
    assert sessiondex.Hit({"kind": "entry", "snippetUnavailable": "stale_pointer"}).snippet_unavailable == (
        "stale_pointer"
    )
