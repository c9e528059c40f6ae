"""The reliability matrix as figures: what ``reliability.py`` prints as ``BENCH_ROW`` lines
and what ``reliability_baseline.json`` holds (the collector's "no row worse" check).

:func:`figures` turns the fault rows and bad-input outcomes into (figure, value, unit,
target, better) tuples; a fault scenario that raised is a row that did not survive, and
its other figures are absent (so the baseline check reports them as not measured).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

BASELINE = Path(__file__).resolve().parent / "reliability_baseline.json"
GROUPS = {"config": "capevolve.yaml values and syntax", "path": "paths",
          "usage": "usage errors", "cli": "argument values", "record": "run-dir records"}


def figures(faults: list[dict], inputs: list[dict]) -> list[tuple[str, int, str, str, str]]:
    """(figure, value, unit, target, better) of every reliability figure of this run."""
    out = []
    for r in faults:
        name = r["fault"].split(": ")[0] if "error" in r else r["fault"]
        out.append((f"{name}: survived", int(bool(r["survived"])), "yes=1", "== 1", "higher"))
        for key, what in (("lost", "units lost"), ("duplicates", "duplicate rows"),
                          ("beyond_in_flight", "finished rows lost beyond in flight")):
            if r.get(key) is not None:
                out.append((f"{name}: {what}", int(r[key]), "units", "== 0", "lower"))
        if r.get("executed") is not None and r.get("recorded") is not None:
            out.append((f"{name}: rollouts executed, not counted as spent",
                        max(0, int(r["executed"]) - int(r["recorded"])), "rollouts", "== 0",
                        "lower"))
    for group, label in GROUPS.items():
        rows = [r for r in inputs if r["group"] == group]
        if not rows:
            continue
        unclean = sum(not (r["one_line"] and r["intact"] and r["named"]) or r["traceback"]
                      for r in rows)
        out.append((f"bad inputs, {label}: tried", len(rows), "inputs", "", "higher"))
        out.append((f"bad inputs, {label}: not one clean line, exit 2, data intact", unclean,
                    "inputs", "== 0", "lower"))
    return out


def write_baseline(faults: list[dict], inputs: list[dict], path: Path, commit: str) -> None:
    """``path`` from this run's figures (what later runs must be no worse than)."""
    doc = {"commit": commit, "date": dt.date.today().isoformat(),
           "load": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
           "figures": {f: {"value": v, "better": b} for f, v, _, _, b in
                       figures(faults, inputs)}}
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


