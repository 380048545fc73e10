"""docs/python.md: every python block runs, in order, in one namespace, from the repo root."""

import re
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import REPO

DOC = REPO / "docs" / "python.md"


def blocks() -> List[str]:
    return re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_the_tour_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    code = blocks()
    assert len(code) >= 10
    monkeypatch.chdir(REPO)
    # The tour's `tempfile.mkdtemp()` index folders go under pytest's own, which it cleans.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ns: Dict[str, Any] = {"__name__": "tour"}
    for i, block in enumerate(code):
        try:
            exec(compile(block, f"{DOC}:block{i}", "exec"), ns)
        except Exception as e:  # pragma: no cover - the message names the block
            raise AssertionError(f"docs/python.md block {i} failed:\n{block}") from e
    out = capsys.readouterr().out
    assert "index_out_of_bounds" in out
