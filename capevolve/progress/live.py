"""The live progress display of long commands, on stderr only."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from capevolve.progress import observing
from capevolve.progress.iterations import IterationRow, iteration_line, iteration_table
from capevolve.progress.tally import EvalTally, fmt_duration, summary_line

if TYPE_CHECKING:  # rich is imported by the terminal display only (a pipe never needs it)
    from rich.console import RenderableType
    from rich.live import Live

KEEP_FINISHED = 3  # finished evaluations kept in the live table (each left a plain line)


class LiveDisplay:
    """A :class:`capevolve.progress.Display` writing to ``stream`` (default stderr)."""

    def __init__(self, stream: IO[str] | None = None, *, plain: bool | None = None,
                 every_s: float = 5.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)()
        self.plain = (not isatty) if plain is None else plain
        self.every_s = every_s
        self.evals: dict[str, EvalTally] = {}
        self.rows_: list[IterationRow] = []
        self.stages: dict[str, float] = {}
        self.lock = threading.RLock()
        self._live: Live | None = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- the Display protocol -------------------------------------------------------------
    def begin(self, label: str, total: int) -> None:
        with self.lock:
            self.evals[label] = EvalTally(label, total)
        self._say(f"{label}: {total} units to run")

    def dispatched(self, label: str, n: int) -> None:
        with self.lock:
            tally = self.evals.get(label)
            if tally is not None:
                tally.dispatched = max(tally.dispatched, n)

    def rows(self, label: str, rows: list[dict[str, Any]]) -> None:
        with self.lock:
            tally = self.evals.get(label)
            if tally is not None:
                tally.add(rows)

    def end(self, label: str) -> None:
        with self.lock:
            tally = self.evals.get(label)
            if tally is None:
                return
            tally.finished = time.monotonic()
            line = summary_line(tally) + f"; took {fmt_duration(tally.elapsed())}"
        self._say(line)

    # -- optimizer and stages -------------------------------------------------------------
    def iteration(self, row: IterationRow) -> None:
        """Add one row to the iteration table."""
        with self.lock:
            self.rows_.append(row)
        self._say(iteration_line(row))

    @contextmanager
    def stage(self, label: str) -> Iterator[None]:
        """Show ``label`` and its elapsed time while the block runs; "done in ..." on success."""
        with self.lock:
            self.stages[label] = time.monotonic()
        try:
            yield
        finally:
            with self.lock:
                started = self.stages.pop(label, time.monotonic())
        self._say(f"{label}: done in {fmt_duration(time.monotonic() - started)}")

    # -- output ---------------------------------------------------------------------------
    def _say(self, line: str) -> None:
        """A line that stays: above the live table, or plain."""
        if self._live is not None:
            self._live.console.print(line, markup=False, highlight=False)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()

    def plain_lines(self) -> list[str]:
        """The periodic lines: running evaluations and stages."""
        now = time.monotonic()
        with self.lock:
            lines = [summary_line(t, now) for t in self.evals.values() if t.finished is None]
            lines += [f"{label}: {fmt_duration(now - t0)}" for label, t0 in self.stages.items()]
        return lines

    def render(self) -> RenderableType:
        """The rich renderable of the whole display."""
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
        for name in ("evaluation", "", "units", "rate", "ETA", "in flight", "errors",
                     "retries", "mean ± SE", "busy"):
            table.add_column(name, no_wrap=True)
        now = time.monotonic()
        with self.lock:
            finished = [t for t in self.evals.values() if t.finished is not None]
            shown = [t for t in self.evals.values()
                     if t.finished is None or t in finished[-KEEP_FINISHED:]]
            for t in shown:
                mean, se, n = t.mean_se()
                rate = t.rate(now)
                workers, nodes = t.busy(now)
                table.add_row(
                    t.label, ProgressBar(total=max(t.total, 1), completed=t.done, width=24),
                    f"{t.done}/{t.total}", "—" if rate is None else f"{rate:.1f}/s",
                    "done" if t.finished else fmt_duration(t.eta_s(now)), str(t.in_flight()),
                    ", ".join(f"{k} {v}" for k, v in sorted(t.errors.items())) or "0",
                    str(t.retries),
                    "—" if mean is None else f"{mean:.3f}" + ("" if se is None else
                                                               f" ± {se:.3f}") + f" ({n})",
                    f"{workers}w/{nodes}n" if workers else "—")
            parts: list[RenderableType] = [table] if self.evals else []
            if self.rows_:
                parts.append(iteration_table(self.rows_))
            parts += [f"{label}: {fmt_duration(now - t0)}" for label, t0 in self.stages.items()]
        return Group(*parts)

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            for line in self.plain_lines():
                self._say(line)

    def __enter__(self) -> LiveDisplay:
        if self.plain:
            self._ticker = threading.Thread(target=self._tick, daemon=True,
                                            name="capevolve-progress")
            self._ticker.start()
        else:
            from rich.console import Console
            from rich.live import Live

            console = Console(file=self.stream, force_terminal=True)
            self._live = Live(get_renderable=self.render, console=console,
                              refresh_per_second=4, transient=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        if self._live is not None:
            self._live.stop()
            self._live = None


@contextmanager
def live_progress(stream: IO[str] | None = None) -> Iterator[LiveDisplay | None]:
    """Run the block with a live display on stderr (None when CAPEVOLVE_PROGRESS=off)."""
    mode = os.environ.get("CAPEVOLVE_PROGRESS", "").strip().lower()
    if mode in ("0", "off", "no", "false"):
        with observing(None):
            yield None
        return
    try:
        every = float(os.environ.get("CAPEVOLVE_PROGRESS_EVERY", "5"))
    except ValueError:
        every = 5.0
    display = LiveDisplay(stream, plain=True if mode == "plain" else None,
                          every_s=max(every, 0.1))
    with display, observing(display):
        yield display
