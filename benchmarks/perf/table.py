"""`make bench`: every benchmark script, one table.

    .venv/bin/python benchmarks/perf/table.py [--quick] [--only NAME ...] [--docs]

Runs each script of :data:`SCRIPTS` (the one list of what ``make bench`` runs) in its own
subprocess with a timeout (``collect.py``), collects the ``BENCH_ROW`` lines they print
(``bench_row.py``), checks the reliability rows against ``reliability_baseline.json``
(``baseline.py``; full runs only), and prints ONE table (rich on a terminal, markdown
otherwise): script, figure, value, unit, target, met, reference line, note. Then writes the
table as markdown to ``last_run.md`` and everything, with the commit, date, load average and
cores, to ``last_run.json`` (both beside this file, or in ``--out-dir``); ``--docs``
replaces the block between ``<!-- bench:start -->`` and ``<!-- bench:end -->`` of
``figures.md`` (which the docs' performance page includes) with the markdown (refused,
exit 2, when the markers are not there exactly once each, or with ``--quick``); with
``--only`` it replaces only the rows of the scripts run and keeps the others' rows with
the header line of the run that measured them. Exit status 1 when
any target is missed or any script failed (crashed, timed out, printed no row or a
malformed one), after everything is printed and written; 0 otherwise. A listed script not
in the tree is a ``missing`` row with no verdict.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

import baseline  # noqa: E402
from bench_row import CollectedRow  # noqa: E402
from collect import Outcome, Script, run_all  # noqa: E402

SCRIPTS = [
    Script("bench", HERE / "bench.py", timeout_s=600, quick_timeout_s=240),
    Script("bench_startup", HERE / "bench_startup.py", timeout_s=240, quick_timeout_s=120),
    Script("bench_queries", HERE / "bench_queries.py", timeout_s=600, quick_timeout_s=240),
    Script("bench_diagnose", HERE / "bench_diagnose.py", timeout_s=240, quick_timeout_s=120),
    Script("bench_optimize", HERE / "bench_optimize.py", timeout_s=600, quick_timeout_s=240),
    Script("bench_cluster", HERE / "bench_cluster.py", timeout_s=480, quick_timeout_s=300),
    Script("bench_gate", HERE / "bench_gate.py", timeout_s=300, quick_timeout_s=90),
    Script("bench_loop_error", HERE / "bench_loop_error.py", timeout_s=1800, quick_timeout_s=300),
    Script("bench_verify", HERE / "bench_verify.py", timeout_s=120, quick_timeout_s=60),
    Script("bench_sandbox", HERE / "bench_sandbox.py", timeout_s=600, quick_timeout_s=300,
           args=("--ray",)),
    Script("bench_diagnose_quality", HERE / "bench_diagnose_quality.py", timeout_s=240,
           quick_timeout_s=180),
    Script("reliability", HERE / "reliability.py", timeout_s=1200, quick_timeout_s=300),
]
"""What ``make bench`` runs, in order (timeouts in seconds: full run, ``--quick``)."""
BASELINE = HERE / "reliability_baseline.json"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
COLUMNS = ("script", "figure", "value", "unit", "target", "met", "reference", "note")


FIGURES = HERE / "figures.md"
"""The figures the docs' performance page includes (``--docs`` writes its block)."""


class FiguresBlockError(ValueError):
    """The figures file has no single, ordered bench:start / bench:end pair."""


def fmt_value(value: float | None) -> str:
    if value is None:
        return "—"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def cells(row: CollectedRow) -> list[str]:
    met = {True: "yes", False: "**no**", None: "—"}[row.met]
    note = f"{row.error}: {row.note}" if row.error and row.note else (row.error or row.note)
    return [row.script, row.figure, fmt_value(row.value), row.unit, row.target or "—", met,
            row.reference or "—", note or "—"]


def markdown(rows: list[CollectedRow], header: str) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = [header, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(esc(c) for c in cells(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def print_table(rows: list[CollectedRow], header: str) -> None:
    if not sys.stdout.isatty():
        print(markdown(rows, header))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=header, show_lines=False)
    for col in COLUMNS:
        table.add_column(col, overflow="fold")
    for row in rows:
        style = "red" if row.met is False else None
        table.add_row(*[c.replace("**", "") for c in cells(row)], style=style)
    Console().print(table)


def replace_block(text: str, block: str) -> str:
    """``text`` with what lies between the bench markers replaced by ``block``."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise FiguresBlockError(f"needs exactly one {START} followed by one {END}")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n{block.rstrip()}\n{END}{tail}"


def block_of(text: str) -> str:
    """What lies between the bench markers of ``text`` (FiguresBlockError without them)."""
    replace_block(text, "")
    return text.split(START)[1].split(END)[0]


def merge_block(old: str, new: str, ran: set[str]) -> str:
    """The figures block for a run of the scripts ``ran`` only: ``new``'s header and rows,
    then the rows of ``old`` from scripts not run (in :data:`SCRIPTS` order) under the
    header lines of the runs that measured them."""
    def parts(block: str) -> tuple[list[str], dict[str, list[str]]]:
        headers, rows = [], {}
        for line in block.strip().splitlines():
            if line.startswith("`make bench`"):
                headers.append(line)
            elif line.startswith("| ") and not line.startswith("| script |"):
                rows.setdefault(line[2:].split(" | ", 1)[0].strip(), []).append(line)
        return headers, rows

    new_headers, new_rows = parts(new)
    old_headers, old_rows = parts(old)
    kept = {name: lines for name, lines in old_rows.items() if name not in ran}
    order = [s.name for s in SCRIPTS]
    order += [n for n in dict.fromkeys([*new_rows, *sorted(kept)]) if n not in order]
    lines = [*new_headers]
    if kept:  # each header its own paragraph
        lines += ["", f"Rows of {', '.join(n for n in order if n in kept)} from an earlier "
                  "run:"]
        for header in (h for h in old_headers if h not in new_headers):
            lines += ["", header]
    lines += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for name in order:
        lines += new_rows.get(name, []) if name in ran else kept.get(name, [])
    return "\n".join(lines) + "\n"


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(REPO), "diff", "--quiet", "HEAD"],
                               capture_output=True, timeout=10).returncode != 0
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (out.stdout.strip() or "unknown") + ("+dirty" if dirty else "")


def all_rows(outcomes: list[Outcome], quick: bool, baseline_path: Path) -> list[CollectedRow]:
    rows = [r for o in outcomes for r in o.rows]
    ran = [o for o in outcomes if o.script.name == baseline.SCRIPT and o.status != "missing"]
    if ran and not quick:
        rows += baseline.regressions(rows, baseline_path)
    elif ran:
        rows.append(CollectedRow(script=baseline.SCRIPT, figure="reliability vs baseline",
                                 note="not compared in --quick (fewer injections)"))
    return rows


def run(scripts: list[Script], quick: bool, out_dir: Path, figures: Path | None,
        baseline_path: Path = BASELINE) -> int:
    """Run, print, write; the exit status (0, 1 on a miss or failure, 2 on a bad figures
    file)."""
    if figures is not None:
        if quick:
            print("error: --docs: a --quick run's figures do not go in the docs",
                  file=sys.stderr)
            return 2
        try:
            replace_block(figures.read_text(), "")
        except (OSError, FiguresBlockError) as exc:
            print(f"error: {figures}: {exc}", file=sys.stderr)
            return 2
    load0, t0 = os.getloadavg(), time.monotonic()
    outcomes = run_all(scripts, quick)
    rows = all_rows(outcomes, quick, baseline_path)
    load1, seconds = os.getloadavg(), time.monotonic() - t0
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    commit = git_commit()
    took = ", ".join(f"{o.script.name} {o.seconds:.0f} s" for o in outcomes)
    header = (f"`make bench`{' --quick' if quick else ''} of {now:%Y-%m-%d %H:%M} UTC, commit "
              f"{commit}, {os.cpu_count()} cores, load average {load0[0]:.1f} at the start, "
              f"{load1[0]:.1f} at the end; {seconds / 60:.1f} min ({took}).")
    print_table(rows, header)
    md = markdown(rows, header)
    failed = any(r.met is False for r in rows)
    doc = {"commit": commit, "date": now.isoformat(), "quick": quick, "cpus": os.cpu_count(),
           "load_start": list(load0), "load_end": list(load1), "seconds": round(seconds, 1),
           "failed": failed,
           "scripts": [{"name": o.script.name, "status": o.status, "returncode": o.returncode,
                        "seconds": round(o.seconds, 1)} for o in outcomes],
           "rows": [r.model_dump() for r in rows]}
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "last_run.md", md)
    write_atomic(out_dir / "last_run.json", json.dumps(doc, indent=1) + "\n")
    if figures is not None:
        text = figures.read_text()
        ran = {o.script.name for o in outcomes}
        block = md if ran >= {s.name for s in SCRIPTS} else merge_block(block_of(text), md,
                                                                          ran)
        write_atomic(figures, replace_block(text, block))
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every script")
    parser.add_argument("--only", action="append", metavar="NAME",
                        choices=[s.name for s in SCRIPTS], help="run only this (repeatable)")
    parser.add_argument("--docs", action="store_true",
                        help="put the table in figures.md (the docs' performance page)")
    parser.add_argument("--out-dir", type=Path, default=HERE,
                        help="where last_run.md / last_run.json go")
    args = parser.parse_args(argv)
    scripts = [s for s in SCRIPTS if not args.only or s.name in args.only]
    return run(scripts, args.quick, args.out_dir, FIGURES if args.docs else None)


if __name__ == "__main__":
    sys.exit(main())
