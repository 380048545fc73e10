"""One Memory shared by threads: the same answers as serial calls, and the GIL is released."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import sessiondex

QUERIES = ["timeout", "deploy pipeline", "migration", "zebra", "error", "config"]


def test_threads_recall_on_one_memory(corpus_memory: sessiondex.Memory) -> None:
    corpus_memory.sync()
    serial = {q: corpus_memory.recall(q, scope="global").to_dict() for q in QUERIES}

    def work(i: int) -> bool:
        q = QUERIES[i % len(QUERIES)]
        page = corpus_memory.recall(q, scope="global")
        x = corpus_memory.call(page.hits[0].follow) if page.hits else None
        return page.to_dict() == serial[q] and (x is None or len(x.entries) >= 1)

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(work, range(64)))


def test_threads_mixed_methods(corpus_memory: sessiondex.Memory) -> None:
    n_records = len(list(corpus_memory.walk("sa")))

    def work(i: int) -> bool:
        k = i % 4
        if k == 0:
            return corpus_memory.sync().coverage.eligible_sessions >= 5
        if k == 1:
            return len(list(corpus_memory.walk("sa"))) == n_records
        if k == 2:
            return corpus_memory.expand("sa", indices=[0]).entries[0].entry_id == "u1"
        return len(corpus_memory.sessions()) == 5

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert all(pool.map(work, range(32)))


def test_gil_is_released_during_sync(tmp_path: Path) -> None:
    # Many small sessions: a sync long enough to watch another Python thread run beside it.
    src = tmp_path / "many"
    src.mkdir()
    line = (
        '{{"type":"message","id":"m{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:{s:02d}.000Z",'
        '"message":{{"role":"user","content":"word{i} alpha beta gamma delta"}}}}\n'
    )
    for n in range(300):
        body = '{"type":"session","version":3,"id":"s%d","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n' % n
        body += "".join(
            line.format(i=i, parent="null" if i == 0 else f'"m{i - 1}"', s=i % 60) for i in range(40)
        )
        (src / f"s{n}.jsonl").write_text(body)
    m = sessiondex.Memory(src, index_dir=tmp_path / "i")
    ticks = 0
    done = threading.Event()

    def tick() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        start = time.monotonic()
        report = m.sync()
        took = time.monotonic() - start
    finally:
        done.set()
        t.join()
    assert report.indexed == 300
    # With the GIL held for the whole sync, the ticker could not have run at all during it.
    if took > 0.05:
        assert ticks > 5, (ticks, took)
