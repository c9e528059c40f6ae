"""Runs of one engine at once share engine.concurrency exactly, never more in all."""

from __future__ import annotations

import threading

from capevolve._engine.shares import ConcurrencyShares


def test_k_runs_started_together_hold_exactly_the_engines_concurrency():
    shares = ConcurrencyShares(8)
    shares.shares = 3
    parts = [shares.take() for _ in range(3)]
    assert parts == [3, 3, 2] and sum(parts) == 8
    for part in parts:
        shares.give(part)
    shares.shares = 1
    assert shares.take() == 8  # a run alone holds all of it


def test_parts_taken_from_many_threads_never_pass_the_total():
    """Runs starting and ending in threads: at every moment the parts held sum to at most
    the total while there are no more runs than slots."""
    shares = ConcurrencyShares(12)
    shares.shares = 4
    held: list[int] = []
    lock = threading.Lock()
    peak = [0]

    def run() -> None:
        for _ in range(200):
            part = shares.take()
            with lock:
                held.append(part)
                peak[0] = max(peak[0], sum(held))
            with lock:
                held.remove(part)
            shares.give(part)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 0 < peak[0] <= 12
    assert shares.take() == 3  # everything given back: a fresh run gets its 12 / 4
