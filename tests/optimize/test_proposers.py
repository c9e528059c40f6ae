"""The proposer registry, the command proposer (real subprocesses: exit status, output
tail, timeout of the whole process group, reported spend) and the scripted proposer."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from capevolve.errors import ConfigError
from capevolve.optimize.proposers.base import ProposalContext, Proposer, ProposerConfig
from capevolve.optimize.proposers.registry import build_proposer


def _config(tmp_path: Path, **kw) -> ProposerConfig:
    return ProposerConfig(project_dir=tmp_path, **kw)


def _ctx(tmp_path: Path, iteration: int = 1) -> ProposalContext:
    root = tmp_path / f"work{iteration}"
    (root / "candidate").mkdir(parents=True)
    (root / "candidate" / "prompt.md").write_text("be nice\n")
    (root / "INSTRUCTIONS.md").write_text("improve it")
    return ProposalContext(
        run_dir=tmp_path, run_id="r", iteration=iteration, parent_id="seed",
        parent_dir=tmp_path, workdir=root / "candidate", editable=(), protected=(),
        files=("prompt.md",), diagnosis=None, ledger=(), instructions="improve it")


@pytest.mark.parametrize(("spec", "message"), [
    ("", "empty spec"), ("nope:x", "unknown proposer kind 'nope'"),
    ("command:", "template is missing"), ("command:echo {workdri}", "no {workdir}"),
    ("command:sed -i s/a/b/ {workdir}/x {oops}", "unknown placeholder"),
    ("command:'unbalanced {workdir}", "quotation"),
    ("scripted:", "directory of edits is missing"), ("scripted:/no/such/dir", "no such"),
])
def test_bad_specs_are_one_line_config_errors(tmp_path, spec, message):
    with pytest.raises(ConfigError) as info:
        build_proposer(spec, _config(tmp_path))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_scripted_directory_without_edits_is_refused(tmp_path):
    (tmp_path / "edits").mkdir()
    (tmp_path / "edits" / "README.txt").write_text("not an edit")
    with pytest.raises(ConfigError, match="no edits"):
        build_proposer(f"scripted:{tmp_path / 'edits'}", _config(tmp_path))


def test_the_command_edits_the_workdir_and_its_output_and_spend_are_recorded(tmp_path):
    script = tmp_path / "agent.sh"
    script.write_text('#!/bin/sh\necho "reading $(cat "$2")"\necho "be kind" >> "$1/prompt.md"\n'
                      'echo warn >&2\n'
                      'echo \'{"tokens": 77, "cost_usd": 0.0125}\' > "$CAPEVOLVE_SPEND_FILE"\n')
    script.chmod(0o755)
    proposer = build_proposer(f"command:{script} {{workdir}} {{instructions}}",
                              _config(tmp_path))
    assert isinstance(proposer, Proposer)
    ctx = _ctx(tmp_path)
    proposal = proposer.propose(ctx)
    assert proposal.changed and proposal.blocker is None
    assert (ctx.workdir / "prompt.md").read_text() == "be nice\nbe kind\n"
    assert proposal.detail["exit_status"] == 0
    assert proposal.detail["stdout_tail"] == "reading improve it\n"
    assert proposal.detail["stderr_tail"] == "warn\n"
    assert proposal.spend.tokens == 77 and proposal.spend.cost_usd == 0.0125
    assert proposal.spend.wall_s > 0


def test_a_malformed_spend_file_is_noted_and_cost_stays_not_recorded(tmp_path):
    script = tmp_path / "agent.sh"
    script.write_text('#!/bin/sh\necho \'{"tokens": -5, "cost_usd": "free"}\' '
                      '> "$CAPEVOLVE_SPEND_FILE"\n')
    script.chmod(0o755)
    proposal = build_proposer(f"command:{script} {{workdir}}", _config(tmp_path)).propose(
        _ctx(tmp_path))
    assert proposal.spend.tokens == 0 and proposal.spend.cost_usd is None
    assert "spend file not understood" in proposal.detail["spend_note"]


@pytest.mark.slow
def test_a_timed_out_command_is_killed_with_its_whole_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\nsleep 120 &\necho $! > {pidfile}\nwait\n")
    script.chmod(0o755)
    proposer = build_proposer(f"command:{script} {{workdir}}", _config(tmp_path, timeout_s=1))
    t0 = time.monotonic()
    proposal = proposer.propose(_ctx(tmp_path))
    assert time.monotonic() - t0 < 30
    assert not proposal.changed and "timed out after 1 s" in (proposal.blocker or "")
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    alive = Path(f"/proc/{pid}").exists() and " Z " not in Path(f"/proc/{pid}/stat").read_text()
    assert not alive, "the command's child survived the timeout"


def test_a_failing_or_missing_program_is_a_no_change_with_the_reason(tmp_path):
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho partial >> \"$1/prompt.md\"\necho nope >&2\nexit 4\n")
    script.chmod(0o755)
    proposal = build_proposer(f"command:{script} {{workdir}}", _config(tmp_path)).propose(
        _ctx(tmp_path))
    assert not proposal.changed and proposal.blocker == "command exited with status 4"
    assert proposal.detail["stderr_tail"] == "nope\n"
    missing = build_proposer("command:/no/such/agent {workdir}", _config(tmp_path)).propose(
        _ctx(tmp_path, 2))
    assert not missing.changed and "could not start" in (missing.blocker or "")


def test_scripted_edits_apply_in_order_and_a_bad_one_is_a_no_change(tmp_path):
    edits = tmp_path / "edits"
    edits.mkdir()
    (edits / "01_rule.json").write_text(
        '{"title": "Add a rule", "ops": [{"file": "prompt.md", "append": "- confirm"}]}')
    (edits / "02_bad.json").write_text(
        '{"title": "Bad", "ops": [{"file": "prompt.md", "replace": ["absent", "x"]}]}')
    (edits / "03_escape.json").write_text(
        '{"title": "Out", "ops": [{"file": "../../outside.md", "append": "x"}]}')
    proposer = build_proposer(f"scripted:{edits}", _config(tmp_path))
    first = proposer.propose(_ctx(tmp_path, 1))
    assert first.changed and first.detail["title"] == "Add a rule"
    assert (tmp_path / "work1" / "candidate" / "prompt.md").read_text() == "be nice\n- confirm"
    second = proposer.propose(_ctx(tmp_path, 2))
    assert not second.changed and "occurs 0 times" in (second.blocker or "")
    third = proposer.propose(_ctx(tmp_path, 3))
    assert not third.changed and "outside the candidate" in (third.blocker or "")
    assert not (tmp_path / "outside.md").exists()
    done = proposer.propose(_ctx(tmp_path, 4))
    assert not done.changed and done.detail["exhausted"] is True


def test_the_command_runs_in_the_prepared_directory_with_the_paths_in_env(tmp_path):
    script = tmp_path / "agent.sh"
    script.write_text('#!/bin/sh\npwd > "$CAPEVOLVE_WORKDIR/where.txt"\n'
                      'echo "$CAPEVOLVE_INSTRUCTIONS" >> "$CAPEVOLVE_WORKDIR/where.txt"\n')
    script.chmod(0o755)
    ctx = _ctx(tmp_path)
    build_proposer(f"command:{script} {{workdir}}", _config(tmp_path)).propose(ctx)
    where, instructions = (ctx.workdir / "where.txt").read_text().split()
    assert os.path.realpath(where) == os.path.realpath(ctx.workdir.parent)
    assert instructions == str(ctx.workdir.parent / "INSTRUCTIONS.md")
