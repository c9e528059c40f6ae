"""The `make bench` collector: the BENCH_ROW parser, scripts that crash, hang or print
nothing, the reliability baseline check and the figures block."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

PERF = Path(__file__).resolve().parents[2] / "benchmarks" / "perf"
sys.path.insert(0, str(PERF))

import baseline  # noqa: E402
import table  # noqa: E402
from bench_row import PREFIX, format_row, parse_line, target_verdict  # noqa: E402
from collect import Script, run_script  # noqa: E402

GOOD = {"figure": "wall / ideal", "value": 1.1, "unit": "x", "target": "<= 1.15", "met": True,
        "reference": "asyncio 1.06", "note": "load 2.0"}


def line(**change) -> str:
    return PREFIX + json.dumps({**GOOD, **change})


def script(tmp_path: Path, body: str, name: str = "fake", timeout: float = 30) -> Script:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    return Script(name, path, timeout_s=timeout, quick_timeout_s=timeout)


def test_a_good_row_parses_with_every_field():
    row = parse_line("s", line())
    assert row is not None and row.error is None
    assert (row.script, row.figure, row.value, row.met) == ("s", "wall / ideal", 1.1, True)


def test_a_line_without_the_prefix_is_not_a_row():
    assert parse_line("s", "wall 1.1 s") is None
    assert parse_line("s", " " + line()) is None


@pytest.mark.parametrize("bad, reason", [
    (PREFIX + "{not json", "not JSON"),
    (PREFIX + "[1, 2]", "not a JSON object"),
    (line(value="1.1"), "field value"),
    (line(value=True), "field value"),
    (PREFIX + json.dumps(GOOD)[:-1] + ', "value": NaN}', "not JSON"),
    (line(met="yes"), "field met"),
    (line(figure=""), "field figure"),
    (line(extra=1), "field extra"),
    (PREFIX + json.dumps({k: v for k, v in GOOD.items() if k != "unit"}), "field unit"),
    (line(value=1.3, met=True), "met is True but 1.3 <= 1.15 is False"),
    (line(value=1.0, met=False), "met is False but"),
])
def test_a_malformed_row_is_an_error_row_naming_the_fault(bad, reason):
    row = parse_line("s", bad)
    assert row is not None and row.met is False and row.figure == "s: malformed BENCH_ROW"
    assert reason in row.error


def test_target_verdicts_and_the_emitted_line_round_trip():
    assert target_verdict(">= 25,000 /s", 26_000) is True
    assert target_verdict("< 0.5 s", 0.7) is False
    assert target_verdict("no worse than before", 3) is None
    row = parse_line("s", format_row("rate", 0.94, "x", ">= 0.90", reference="one node"))
    assert row.met is True and row.error is None and row.reference == "one node"
    with pytest.raises(ValueError):
        format_row("rate", float("nan"), "x")


def test_a_script_rows_and_its_other_output_are_both_collected(tmp_path):
    s = script(tmp_path, f"""
        import json
        print("a table line of its own")
        print({line()!r})
        print({line(figure='rate', value=3000, target='>= 5000', met=False)!r})
        raise SystemExit(1)
    """)
    out = run_script(s, quick=False, echo=open(os.devnull, "w"))
    assert out.status == "ok" and [r.figure for r in out.rows] == ["wall / ideal", "rate"]


def test_a_crashing_script_is_a_failed_row_after_its_rows(tmp_path):
    s = script(tmp_path, f"""
        print({line()!r}, flush=True)
        raise RuntimeError("boom in the benchmark")
    """)
    out = run_script(s, quick=False, echo=open(os.devnull, "w"))
    assert out.rows[0].figure == "wall / ideal"
    assert out.rows[-1].figure == "fake: exited with code 1" and out.rows[-1].met is False
    assert "boom in the benchmark" in out.rows[-1].note


def test_a_script_killed_by_a_signal_is_a_crashed_row(tmp_path):
    s = script(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    out = run_script(s, quick=False, echo=open(os.devnull, "w"))
    assert out.status == "crashed" and out.rows[-1].figure == "fake: killed by signal 9"


@pytest.mark.slow
def test_a_hanging_script_is_killed_with_its_children_and_is_a_timeout_row(tmp_path):
    pid_file = tmp_path / "child.pid"
    s = script(tmp_path, f"""
        import subprocess, time
        print({line()!r}, flush=True)
        child = subprocess.Popen(["sleep", "120"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(120)
    """, timeout=3)
    t0 = time.monotonic()
    out = run_script(s, quick=False, echo=open(os.devnull, "w"))
    assert time.monotonic() - t0 < 20
    assert out.status == "timeout" and out.rows[0].figure == "wall / ideal"
    assert out.rows[-1].figure == "fake: timed out after 3 s" and out.rows[-1].met is False
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    assert not _alive(pid), "the script's child outlived the timeout"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_silent_script_and_a_missing_one_are_rows(tmp_path):
    silent = run_script(script(tmp_path, "print('figures as prose only')\n"), quick=False,
                        echo=open(os.devnull, "w"))
    assert silent.status == "no-rows" and silent.rows[0].met is False
    missing = run_script(Script("later", tmp_path / "nope.py", 5), quick=False)
    assert missing.status == "missing" and missing.rows[0].met is None
    assert "nope.py" in missing.rows[0].error


def test_quick_is_passed_on(tmp_path):
    s = script(tmp_path, f"""
        import sys
        print({line()!r}.replace("load 2.0", " ".join(sys.argv[1:])))
    """)
    out = run_script(s, quick=True, echo=open(os.devnull, "w"))
    assert out.rows[0].note == "--quick"


def test_figures_block_replaced_and_refused_without_markers():
    text = f"# T\n\nbefore\n{table.START}\nold table\n{table.END}\nafter\n"
    new = table.replace_block(text, "| a |\n")
    assert new == f"# T\n\nbefore\n{table.START}\n| a |\n{table.END}\nafter\n"
    for bad in ("# T\nno markers\n", f"{table.END}\n{table.START}\n",
                f"{table.START}\n{table.START}\n{table.END}\n", f"{table.START}\nonly start\n"):
        with pytest.raises(table.FiguresBlockError):
            table.replace_block(bad, "| a |\n")


def test_run_prints_writes_and_fails_on_a_miss_or_a_crash(tmp_path, capsys):
    ok = script(tmp_path, f"print({line()!r})\n", name="ok")
    miss = script(tmp_path, f"print({line(value=2.0, met=False)!r})\n", name="miss")
    readme = tmp_path / "figures.md"
    readme.write_text(f"intro\n{table.START}\nstale\n{table.END}\nrest\n")
    out_dir = tmp_path / "out"
    assert table.run([ok], False, out_dir, readme) == 0
    assert table.run([ok, miss], False, out_dir, readme) == 1
    printed = capsys.readouterr().out
    assert "| miss | wall / ideal | 2 | x | <= 1.15 | **no** |" in printed
    doc = json.loads((out_dir / "last_run.json").read_text())
    assert doc["failed"] and [s["name"] for s in doc["scripts"]] == ["ok", "miss"]
    assert doc["cpus"] == os.cpu_count() and len(doc["load_start"]) == 3 and doc["commit"]
    md = (out_dir / "last_run.md").read_text()
    assert md in readme.read_text() and "stale" not in readme.read_text()
    assert readme.read_text().startswith("intro\n") and readme.read_text().endswith("rest\n")


def test_run_refuses_a_figures_file_without_markers_before_running_anything(tmp_path, capsys):
    ran = tmp_path / "ran"
    s = script(tmp_path, f"open({str(ran)!r}, 'w')\nprint({line()!r})\n")
    readme = tmp_path / "figures.md"
    readme.write_text("no block here\n")
    assert table.run([s], False, tmp_path / "out", readme) == 2
    assert "error:" in capsys.readouterr().err and not ran.exists()
    assert readme.read_text() == "no block here\n"
    assert table.run([s], True, tmp_path / "out", readme) == 2


def _baseline(tmp_path: Path, figures: dict) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"commit": "abc", "date": "2026-12-01", "load": [1, 1, 1],
                                "cpus": 2, "figures": figures}))
    return path


def _rel(figure: str, value: float):
    return parse_line("reliability", format_row(figure, value, "units"))


def test_a_reliability_figure_worse_than_the_baseline_is_a_regression_row(tmp_path):
    path = _baseline(tmp_path, {"lost": {"value": 0, "better": "lower"},
                                "survived": {"value": 1, "better": "higher"},
                                "gone": {"value": 0, "better": "lower"}})
    rows = baseline.regressions([_rel("lost", 2), _rel("survived", 1)], path)
    assert [r.figure for r in rows] == ["regression: gone", "regression: lost",
                                        "reliability figures worse than the baseline"]
    assert rows[1].value == 2 and rows[1].met is False and rows[-1].value == 2
    clean = baseline.regressions([_rel("lost", 0), _rel("survived", 1), _rel("gone", 0)], path)
    assert len(clean) == 1 and clean[0].met is True and clean[0].value == 0


def test_a_malformed_baseline_is_one_error_row_naming_the_file(tmp_path):
    path = _baseline(tmp_path, {"lost": {"value": 0, "better": "sideways"}})
    rows = baseline.regressions([_rel("lost", 0)], path)
    assert len(rows) == 1 and rows[0].met is False and str(path) in rows[0].error
    assert "figures.lost.better" in rows[0].error
    path.write_text("{truncated")
    assert baseline.regressions([], path)[0].met is False


def test_the_baseline_is_only_compared_on_a_full_run(tmp_path):
    path = _baseline(tmp_path, {"lost": {"value": 0, "better": "lower"}})
    rel = script(tmp_path, "print('nothing')\n", name="reliability")
    out = run_script(rel, quick=True, echo=open(os.devnull, "w"))
    quick = table.all_rows([out], True, path)
    assert quick[-1].figure == "reliability vs baseline" and quick[-1].met is None
    full = table.all_rows([out], False, path)
    assert "regression: lost" in [r.figure for r in full]


def test_make_bench_lists_every_benchmark_script_once():
    names = [s.name for s in table.SCRIPTS]
    assert len(set(names)) == len(names)
    on_disk = {p.stem for p in PERF.glob("bench*.py")} - {"bench_row"} | {"reliability"}
    assert on_disk <= set(names), on_disk - set(names)


def test_reliability_figures_and_baseline_catch_a_fault_that_gets_worse(tmp_path):
    import reliability_figures as reliability

    fault = {"fault": "driver kill", "injected": 3, "survived": True, "units": 120, "lost": 0,
             "duplicates": 0, "beyond_in_flight": 0, "executed": 199, "recorded": 203}
    inputs = [{"group": "config", "one_line": True, "intact": True, "named": True,
               "traceback": False}] * 3
    path = tmp_path / "baseline.json"
    reliability.write_baseline([fault], inputs, path, "abc1234")
    names = {f for f, *_ in reliability.figures([fault], inputs)}
    assert {"driver kill: survived", "driver kill: units lost",
            "driver kill: rollouts executed, not counted as spent",
            "bad inputs, capevolve.yaml values and syntax: tried"} <= names

    def rows(faults, inputs):
        return [parse_line("reliability", format_row(f, v, u, t))
                for f, v, u, t, _ in reliability.figures(faults, inputs)]

    assert [r.met for r in baseline.regressions(rows([fault], inputs), path)] == [True]
    worse_fault = {**fault, "lost": 2, "executed": 210}
    worse_inputs = inputs[:2] + [{**inputs[0], "traceback": True}]
    found = {r.figure for r in baseline.regressions(rows([worse_fault], worse_inputs), path)}
    assert {"regression: driver kill: units lost",
            "regression: driver kill: rollouts executed, not counted as spent",
            "regression: bad inputs, capevolve.yaml values and syntax: not one clean line, "
            "exit 2, data intact"} <= found
    crashed = {"fault": "driver_kills: kill -9 ...", "survived": False, "error": "boom"}
    found = {r.figure for r in baseline.regressions(rows([crashed], inputs), path)}
    assert "regression: driver kill: survived" in found


def test_a_partial_docs_run_replaces_only_its_scripts_rows(tmp_path):
    """``--only X --docs``: X's rows are the new run's, every other script's rows stay
    with the header line of the run that measured them; a full run replaces everything."""
    readme = tmp_path / "figures.md"
    old = ("`make bench` of 2026-11-30 10:00 UTC, commit aaa, 2 cores.\n\n"
           "| " + " | ".join(table.COLUMNS) + " |\n" + "|" + "---|" * 8 + "\n"
           "| bench | wall / ideal | 1.5 | x | <= 1.15 | **no** | — | old |\n"
           "| bench_gate | false accepts | 4.5 | % | <= 5 | yes | — | kept |\n")
    readme.write_text(f"intro\n{table.START}\n{old}{table.END}\nrest\n")
    bench = script(tmp_path, f"print({line()!r})\n", name="bench")
    assert table.run([bench], False, tmp_path / "out", readme) == 0
    block = table.block_of(readme.read_text())
    assert "| bench | wall / ideal | 1.1 | x | <= 1.15 | yes |" in block
    assert "old |" not in block and "| bench_gate | false accepts | 4.5 |" in block
    assert "commit aaa" in block and "Rows of bench_gate from an earlier run:" in block
    assert block.index("| bench |") < block.index("| bench_gate |")
    assert readme.read_text().startswith("intro\n") and readme.read_text().endswith("rest\n")
