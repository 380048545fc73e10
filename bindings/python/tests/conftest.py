"""Shared fixtures: the repository's corpora copied to a temporary folder, and memories over them."""

import os
import shutil
from pathlib import Path

import pytest

import sessiondex

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "sessions"
QUERIES = REPO / "testdata" / "queries"
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures" / "sessions"


def copy_corpus(src: Path, dst: Path) -> Path:
    """Copies a corpus with one distinct, increasing mtime per file (sorted by path), as the
    Rust query tests do, so "newest first" is the same on every machine."""
    files = sorted(p for p in src.rglob("*") if p.is_file())
    for i, f in enumerate(files):
        out = dst / f.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, out)
        t = 1_700_000_000 + i * 60
        os.utime(out, (t, t))
    return dst


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    return copy_corpus(EXAMPLES, tmp_path / "examples")


@pytest.fixture
def memory(examples: Path, tmp_path: Path) -> sessiondex.Memory:
    return sessiondex.Memory(examples, index_dir=tmp_path / "index")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return copy_corpus(QUERIES / "corpus", tmp_path / "corpus")


@pytest.fixture
def corpus_memory(corpus: Path, tmp_path: Path) -> sessiondex.Memory:
    return sessiondex.Memory(corpus, index_dir=tmp_path / "corpus-index", hot_sessions=10)
