"""Bad input as a new user would type it: each is one line, exit 2, no traceback, no run."""

from __future__ import annotations

import random

import pytest
from cli.cli_support import invoke, one_json, user_error, write_project

GOOD = """
class A:
    def tasks(self):
        return [Task(id=f"t{i}", input=TEXT.format(i=i), target="x") for i in range(12)]

    def run_target(self, candidate, task, *, trial, seed):
        return Rollout(output="x" if seed % 3 else "y")

    def score(self, task, rollout):
        good = rollout.output == "x"
        return Score(reward=1.0 if good else 0.0, feedback=FEEDBACK if not good else "ok")
"""

ESC = "\x1b[2J\x1b[31mred\x1b[0m\x07"


def project(tmp_path, config="", text="do {i}", feedback="wrong"):
    body = f"TEXT = {text!r}\nFEEDBACK = {feedback!r}\n" + GOOD
    return write_project(tmp_path / "p", body, config)


@pytest.mark.parametrize("config, field", [
    ("num_trials: -3\n", "num_trials"),
    ("num_trials: 1000000000\n", "num_trials"),
    ("engine: {kind: local, concurrency: 0}\n", "engine.concurrency"),
    ("engine: {kind: local, timeout_s: -1}\n", "engine.timeout_s"),
    ("gate: {k_se: -2}\n", "gate.k_se"),
    ("gate: {min_coverage: 7}\n", "gate.min_coverage"),
    ("budget: {max_usd: -5}\n", "budget.max_usd"),
    ("splits: {train: 2, val: 0.5, test: 0.5}\n", "splits.train"),
    ("engine: [1, 2]\n", "engine"),
    ("gate: {mode: coin_flip}\n", "gate.mode"),
])
def test_absurd_values_name_the_field(tmp_path, config, field):
    """Absurd or mistyped values are a one-line error naming the field; no run dir made."""
    proj = project(tmp_path, config)
    user_error(invoke("run", "--project", proj, "--run-dir", tmp_path / "r"), field)
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_random_yaml_garbage_never_tracebacks(tmp_path):
    """Random bytes as capevolve.yaml: always a one-line user error (seeded fuzz)."""
    proj = project(tmp_path)
    rng = random.Random(7)
    alphabet = b"abc:{}[]-\n\t #'\"!&*|>%@`\xff\xfe\x00"
    for _ in range(25):
        (proj / "capevolve.yaml").write_bytes(bytes(rng.choice(alphabet)
                                                    for _ in range(rng.randint(1, 60))))
        user_error(invoke("run", "--project", proj, "--run-dir", tmp_path / "r"))
        assert not (tmp_path / "r").exists()


def test_empty_task_list_is_refused(tmp_path):
    """An adapter with no tasks is refused before a run dir is created."""
    proj = project(tmp_path)
    source = (proj / "adapter.py").read_text().replace("range(12)", "range(0)")
    (proj / "adapter.py").write_text(source)
    user_error(invoke("run", "--project", proj, "--run-dir", tmp_path / "r"), "no tasks")
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_odd_text_and_huge_feedback_are_stored_and_shown_safely(tmp_path):
    """Non-ASCII task text, megabyte feedback and terminal escapes survive storage; human
    output neutralises the escapes (raw ESC never reaches the terminal)."""
    proj = project(tmp_path, text="d\u00e9j\u00e0 \u2603 " + ESC + " {i}",
                   feedback=ESC + "x" * 1_000_000)
    handoff = one_json(invoke("run", "--project", proj, "--run-dir", tmp_path / "r",
                              "--json"))
    assert handoff["baseline"]["n_scored"] == 3
    result = invoke("query", "--run-dir", tmp_path / "r",
                    "SELECT inputs, substr(feedback, 1, 20) AS f FROM rollouts "
                    "WHERE reward = 0 LIMIT 1")
    assert result.exit_code == 0
    assert "\x1b" not in result.stdout and "\\x1b" in result.stdout
    payload = one_json(invoke("query", "--run-dir", tmp_path / "r",
                              "SELECT max(length(feedback)) FROM rollouts", "--json"))
    assert payload["rows"][0][0] >= 1_000_000
