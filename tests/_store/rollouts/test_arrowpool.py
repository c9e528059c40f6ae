"""The driver's Arrow allocations go to the system pool, which returns freed memory."""

from __future__ import annotations

import os
import subprocess
import sys

HEAD = """
import sys, pyarrow as pa
from capevolve._store.rollouts import arrowpool
before = pa.default_memory_pool().backend_name
"""
TAIL = """
after = pa.default_memory_pool().backend_name
table = pa.table({"s": pa.array(["x" * 40] * 10_000)})  # allocated from the pool in use
print(before, after, table.num_rows)
"""


def _run(setup: str, env: dict | None = None) -> tuple[str, str, int]:
    done = subprocess.run([sys.executable, "-c", HEAD + setup + TAIL],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    before, after, rows = done.stdout.split()
    return before, after, int(rows)


def test_an_evaluate_session_switches_arrow_to_the_system_pool(tmp_path):
    """Opening a Session (what evaluate does) makes the system allocator Arrow's pool (on
    the perf benchmark's 60,000 units: +71 MiB peak RSS growth instead of +136 MiB)."""
    toy = os.path.join(os.path.dirname(__file__), "..", "..", "..", "benchmarks", "toy")
    setup = ("from capevolve._loop.run import create_run\n"
             "from capevolve._loop.session import Session\n"
             f"run = create_run({toy!r}, {str(tmp_path / 'run')!r})\n"
             "session = Session(run, 'val__seed__k1', 'val', 'seed')\n"
             "session.writer.close(); session.ledger.close()\n")
    before, after, _ = _run(setup)
    assert after == "system" and before != "system"


def test_an_explicit_pool_choice_is_left_as_it_is():
    """ARROW_DEFAULT_MEMORY_POOL set by the user: use_system_pool changes nothing."""
    _, after, _ = _run("arrowpool.use_system_pool()", {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"})
    assert after == "jemalloc"
    _, after, _ = _run("arrowpool.use_system_pool()")
    assert after == "system"
