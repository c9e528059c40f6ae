"""No-op loops through the real CLI: how often the default promotes a candidate no better
than the seed, per loop and per stage, and whether any process dies natively.

Run with ``.venv/bin/python benchmarks/perf/cli_noop_loops.py [--loops N]``. Each loop is
``capevolve run`` on a flex project (32 tasks, 8 on val, 2 trials, a rollout good with
probability 0.5) then ``capevolve optimize --finalize`` over ``EDITS`` salted no-op edits
(each the seed's quality with noise of its own; the seed too has a salt per loop, else
every loop would share one baseline draw), with ``budget.max_iterations`` = EDITS
and the default gate (``alpha_spending: confirm``), so the loop's bound is alpha itself.
The gate's no-regression veto is off and min_delta 0 (``GATE``): the bound must hold for the
t-tests alone, and the veto would otherwise refuse most noisy screens before the t-test.
Counted from every run's ledger and gate events: children stopped at their first look
(``gate.first_look``: never gated), screens passed / children (each at most
a = sqrt(alpha / EDITS)), confirmations passed / confirmations run (each at most a), and
loops that promoted (at most alpha); every exit code and any "terminate called" in
stderr. Writes ``cli_noop_loops.md`` beside it (docs/statistics.md includes it) unless
``--no-write``; exits 1 on a native abort or a loop rate whose Wilson interval lies above
alpha.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_row import emit, load_note

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
CAPEVOLVE = Path(sys.executable).with_name("capevolve")
ALPHA, EDITS = 0.05, 8
GATE = "gate: {no_regression: false, min_delta: 0}"
TABLE = Path(__file__).resolve().parent / "cli_noop_loops.md"


def wilson(hits: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a binomial rate."""
    if n == 0:
        return 0.0, 1.0
    z, rate = 1.959964, hits / n
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def one_loop(root: Path, i: int) -> dict[str, object]:
    """One run and its optimize --finalize; the counts of its gate events."""
    from fixtures.loops import loop_project, scripted_edits

    project = loop_project(root / f"p{i}", tasks=32, quality=0.5,
                           extra=f"budget: {{max_iterations: {EDITS}}}\n{GATE}\n")
    (project / "seed" / "salt.txt").write_text(f"seed-{i}")  # each loop its own baseline draw
    edits = scripted_edits(root / f"e{i}", [{"salt.txt": f"{i}-{k}"} for k in range(EDITS)])
    run_dir = root / f"run{i}"
    procs = [subprocess.run([str(CAPEVOLVE), "run", "--project", str(project), "--run-dir",
                             str(run_dir), "--engine", "local", "--json"],
                            capture_output=True, text=True, timeout=900)]
    if procs[0].returncode == 0:
        procs.append(subprocess.run(
            [str(CAPEVOLVE), "optimize", "--run-dir", str(run_dir), "--algorithm",
             "hill-climb", "--proposer", f"scripted:{edits}", "--iterations", str(EDITS),
             "--finalize", "--engine", "local", "--json"],
            capture_output=True, text=True, timeout=1800))
    aborted = any("terminate called" in p.stderr or p.returncode < 0 or p.returncode == 134
                  for p in procs)
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text()
              .splitlines() if line.strip()] if (run_dir / "events.jsonl").is_file() else []
    gates = [e for e in events if e.get("kind") == "gate" and not e.get("exploratory")]
    confirmed = [g for g in gates if g.get("confirmation")]
    best = json.loads(procs[-1].stdout).get("best_id") if procs[-1].returncode == 0 else None
    ledger = run_dir / "optimize" / "ledger.jsonl"
    rows = [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()] \
        if ledger.is_file() else []
    children = [r for r in rows if r.get("child_id")]
    stopped = [r for r in children if (r.get("screen") or {}).get("split") == "val"]
    return {"ok": all(p.returncode == 0 for p in procs), "aborted": aborted,
            "children": len(children), "looks_stopped": len(stopped),
            "gates": len(gates), "screens_passed": len(confirmed),
            "accepted": sum(g.get("decision") == "accept" for g in confirmed),
            "promoted": best not in (None, "seed"), "codes": [p.returncode for p in procs]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=40)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--workers", type=int, default=2, help="loops run at once")
    parser.add_argument("--from-log", type=Path, default=None,
                        help="summarise the loop lines an earlier (interrupted) run printed")
    args = parser.parse_args()
    t0 = time.monotonic()
    loops: list[dict[str, object]] = []
    if args.from_log is not None:
        loops = [json.loads(line) for line in args.from_log.read_text().splitlines()
                 if line.startswith('{"loop"')]
    else:
        with tempfile.TemporaryDirectory(prefix="cli-noop-") as tmp, \
                ThreadPoolExecutor(max_workers=args.workers) as pool:
            for i, done in enumerate(pool.map(lambda k: one_loop(Path(tmp), k),
                                              range(args.loops))):
                loops.append(done)
                print(json.dumps({"loop": i, **done}), flush=True)
    a = math.sqrt(ALPHA / EDITS)
    screens = sum(int(x["screens_passed"]) for x in loops)  # type: ignore[call-overload]
    accepted = sum(int(x["accepted"]) for x in loops)  # type: ignore[call-overload]
    promoted = sum(bool(x["promoted"]) for x in loops)
    aborts = sum(bool(x["aborted"]) for x in loops)
    failed = sum(not x["ok"] for x in loops)
    n = len(loops)
    load = load_note()
    children = sum(int(x.get("children", 0)) for x in loops)  # type: ignore[call-overload]
    stopped = sum(int(x.get("looks_stopped", 0)) for x in loops)  # type: ignore[call-overload]
    cells = {"loops promoting a no-op": (promoted, n, ALPHA),
             "children stopped at their first look (never gated)": (stopped, children, None),
             "screens passed per no-op child (a stopped child did not pass)":
                 (screens, children, a),
             "confirmations passed per confirmation": (accepted, screens, a)}
    for figure, (hits, total, bound) in cells.items():
        lo, hi = wilson(hits, total)
        emit(f"cli no-op loops: {figure}", round(100 * hits / max(1, total), 2), "%",
             note=f"{hits}/{total}; 95% CI {lo:.1%} .. {hi:.1%}; bound "
                  f"{'—' if bound is None else f'{bound:.3f}'}; {load}")
    emit("cli no-op loops: processes that died natively", aborts, "loops", "== 0",
         note=f"{n} loops; {failed} with a non-zero exit")
    low, _ = wilson(promoted, n)
    ok = aborts == 0 and failed == 0 and low <= ALPHA
    lines = [f"{n} loops of {EDITS} salted no-op edits through `capevolve run` and `capevolve "
             f"optimize --finalize` (flex project: 8 val tasks x 2 trials, success rate 0.5; "
             f"`budget.max_iterations: {EDITS}`, default gate with `{GATE}`, so each stage "
             f"tests at a = {a:.3f} and the loop's bound is {ALPHA:g}); {load}"
             + ("" if args.from_log else f"; {time.monotonic() - t0:.0f} s")
             + ". Written by `benchmarks/perf/cli_noop_loops.py`.",
             "", "| figure | count | rate [95% CI] | bound |", "|---|---|---|---|"]
    for figure, (hits, total, bound) in cells.items():
        lo, hi = wilson(hits, total)
        lines.append(f"| {figure} | {hits} / {total} | {hits / max(1, total):.1%} "
                     f"[{lo:.1%}, {hi:.1%}] | {'—' if bound is None else f'{bound:.3f}'} |")
    lines.append(f"| processes that died natively (rc 134, a signal, \"terminate called\") | "
                 f"{aborts} / {n} loops | | 0 |")
    if not args.no_write:
        TABLE.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps({"loops": n, "promoted": promoted, "aborts": aborts, "failed": failed,
                      "met": ok}), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
