"""The bad-input table: what a hurried user or a damaged disk hands the real CLI.

Each :class:`Case` is one input (a bad capevolve.yaml value, a bad argument, a path that
must not be used, a hand-edited or truncated record). :func:`run_case` builds a fresh
copy of a small project and of a run dir already holding a seed baseline, applies the
case, runs the real ``capevolve`` console script in a subprocess (stdout a pipe, not a
terminal) and judges the outcome from what it printed and what is on disk:

- ``one_line``: exit 2, nothing on stdout, exactly one ``error: ...`` line on stderr (the
  only other lines allowed are ``capevolve: ...`` progress lines);
- ``traceback``: a Python traceback anywhere in the output;
- ``intact``: every file of the run dir (and, for ``run``, the absence of the new run
  dir) is byte-identical after the command to what it was before it.

Used by ``tests/cli/test_bad_inputs.py`` (every row asserted) and by
``benchmarks/perf/reliability.py`` (the table in the README).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from fixtures.projects import clean_env, make_project  # noqa: E402

CAPEVOLVE = Path(sys.executable).with_name("capevolve")

Arg = str | bytes


@dataclass
class Env:
    """One case's sandbox: ``tmp`` holds ``project/``, ``run/`` and ``cand/``."""

    tmp: Path

    @property
    def project(self) -> Path:
        return self.tmp / "project"

    @property
    def run(self) -> Path:
        return self.tmp / "run"

    @property
    def cand(self) -> Path:
        return self.tmp / "cand"

    @property
    def new_run(self) -> Path:
        return self.tmp / "new_run"


@dataclass(frozen=True)
class Case:
    """One bad input: ``args`` with ``{project}``, ``{run}``, ``{cand}``, ``{new_run}``,
    ``{tmp}`` placeholders, an optional ``prepare`` that damages the sandbox first, and
    ``needle``, a text the error line must contain (the file, field or value named)."""

    name: str
    group: str
    args: tuple[Arg, ...]
    prepare: Callable[[Env], None] | None = None
    needle: str | None = None
    usage: bool = False
    """A usage error (Click): one line is asked for, the needle is optional."""
    extra_env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """What a case did."""

    name: str
    group: str
    exit_code: int | None
    one_line: bool
    traceback: bool
    intact: bool
    named: bool
    stderr: str

    @property
    def ok(self) -> bool:
        return self.one_line and not self.traceback and self.intact and self.named


# -- the sandbox ----------------------------------------------------------------------------

def build_base(root: Path) -> Env:
    """A project (12 tasks, local engine), a run dir with the seed's val baseline, and a
    candidate directory; built once and copied for every case."""
    sys.path.insert(0, str(REPO))
    from capevolve._loop.evaluate import evaluate
    from capevolve._loop.run import create_run

    os.environ.setdefault("CAPEVOLVE_KEY_DIR", str(root / "keys"))  # run keys, shared
    env = Env(root)
    make_project(env.project, 12, trials=1)
    run = create_run(env.project, env.run)
    evaluate(run, "seed", "val")
    env.cand.mkdir()
    (env.cand / "quality.txt").write_text("0.9")
    return env


def clone(base: Env, dest: Path) -> Env:
    """A copy of the base sandbox (run dir and project keep their absolute paths apart)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("project", "cand"):
        shutil.copytree(base.tmp / name, dest / name, symlinks=True)
    shutil.copytree(base.run, dest / "run", symlinks=True)
    _point_at_project(dest / "run", dest / "project")
    return Env(dest)


def _point_at_project(run: Path, project: Path) -> None:
    """Make the cloned run's manifest name the cloned project (its ledger, its files)."""
    from capevolve._store import jsonfiles
    from capevolve.records import RunManifest

    path = run / "run.json"
    manifest = RunManifest.model_validate(jsonfiles.read(path))
    jsonfiles.write_atomic(path, manifest.model_copy(
        update={"project_dir": str(project)}).to_json())


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (``lock`` aside: its bytes name the last holder)."""
    if not root.exists():
        return {}
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == "lock" or rel.endswith("/lock"):
            continue
        if path.is_symlink():
            out[rel] = "symlink:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            out[rel] = "dir"
    return out


def _fill(arg: Arg, env: Env) -> Arg:
    if isinstance(arg, bytes):
        return arg
    return arg.format(project=env.project, run=env.run, cand=env.cand, new_run=env.new_run,
                      tmp=env.tmp)


def judge_output(code: int | None, stdout: str, stderr: str) -> tuple[bool, bool]:
    """(one_line, traceback) of a finished command."""
    lines = stderr.splitlines()
    errors = [ln for ln in lines if ln.startswith("error: ")]
    others = [ln for ln in lines if not ln.startswith(("error: ", "capevolve: "))]
    one_line = code == 2 and stdout == "" and len(errors) == 1 and not others
    return one_line, "Traceback" in stdout + stderr


def run_case(case: Case, base: Env, where: Path, timeout: float = 120) -> Outcome:
    """Apply ``case`` to a fresh clone of ``base`` under ``where`` and judge it."""
    env = clone(base, where)
    if case.prepare is not None:
        case.prepare(env)
    before = (tree_digest(env.run), _project_digest(env), env.new_run.exists())
    argv: list[Arg] = [str(CAPEVOLVE), *(_fill(a, env) for a in case.args)]
    proc_env = {**clean_env(), **case.extra_env}
    try:
        proc = subprocess.run(argv, cwd=env.tmp, env=proc_env, stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)
        code: int | None = proc.returncode
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as exc:
        code, stdout = None, (exc.stdout or b"").decode("utf-8", "replace")
        stderr = (exc.stderr or b"").decode("utf-8", "replace") + "\n<timed out>"
    after = (tree_digest(env.run), _project_digest(env), env.new_run.exists())
    intact = after[0] == before[0] and after[1] == before[1] and after[2] == before[2]
    one_line, traceback = judge_output(code, stdout, stderr)
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error: ")]
    named = case.needle is None or any(case.needle in ln for ln in errors)
    return Outcome(case.name, case.group, code, one_line, traceback, intact, named, stderr)


def _project_digest(env: Env) -> dict[str, str]:
    digest = tree_digest(env.project)
    return {k: v for k, v in digest.items() if not k.startswith(".capevolve/")
            and "__pycache__" not in k}


# -- the cases ------------------------------------------------------------------------------

def _yaml(text: str, replace: str | None = None) -> Callable[[Env], None]:
    """Append (or with ``replace``, substitute for that line prefix) a capevolve.yaml line."""

    def prepare(env: Env) -> None:
        path = env.project / "capevolve.yaml"
        lines = path.read_text().splitlines()
        if replace is not None:
            lines = [ln for ln in lines if not ln.startswith(replace)]
        path.write_text("\n".join([*lines, text]) + "\n")

    return prepare


def _write(rel: str, data: bytes | str, *, base: str = "run") -> Callable[[Env], None]:
    def prepare(env: Env) -> None:
        path = getattr(env, base) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.chmod(0o644)
        if isinstance(data, str):
            path.write_text(data)
        else:
            path.write_bytes(data)

    return prepare


def _mutate(rel: str, fn: Callable[[bytes], bytes], *, base: str = "run") -> Callable[[Env], None]:
    def prepare(env: Env) -> None:
        path = getattr(env, base) / rel
        path.chmod(0o644)
        path.write_bytes(fn(path.read_bytes()))

    return prepare


def _append_event(obj: object) -> Callable[[Env], None]:
    def prepare(env: Env) -> None:
        with open(env.run / "events.jsonl", "ab") as fh:
            fh.write(json.dumps(obj).encode() + b"\n")

    return prepare


def _edit_last_event(update: dict, drop: Sequence[str] = (), kind: str | None = None
                     ) -> Callable[[Env], None]:
    """Rewrite the last event of ``kind`` (in place, keeping the chain's shape)."""

    def prepare(env: Env) -> None:
        path = env.run / "events.jsonl"
        lines = path.read_bytes().splitlines()
        for i in range(len(lines) - 1, -1, -1):
            obj = json.loads(lines[i])
            if kind is None or obj.get("kind") == kind:
                obj.update(update)
                for key in drop:
                    obj.pop(key, None)
                lines[i] = json.dumps(obj, sort_keys=True).encode()
                break
        path.write_bytes(b"\n".join(lines) + b"\n")

    return prepare


def _chain(*steps: Callable[[Env], None]) -> Callable[[Env], None]:
    def prepare(env: Env) -> None:
        for step in steps:
            step(env)

    return prepare


def _symlink(rel: str, target: str, *, base: str = "cand") -> Callable[[Env], None]:
    def prepare(env: Env) -> None:
        link = getattr(env, base) / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target.format(tmp=env.tmp))

    return prepare


def _remove(rel: str, *, base: str = "run") -> Callable[[Env], None]:
    def prepare(env: Env) -> None:
        path = getattr(env, base) / rel
        if path.is_dir() and not path.is_symlink():
            for sub in path.rglob("*"):
                if not sub.is_symlink():
                    sub.chmod(0o755 if sub.is_dir() else 0o644)
            shutil.rmtree(path)
        else:
            path.unlink()

    return prepare


RUN = ("run", "--project", "{project}", "--run-dir", "{new_run}", "--engine", "local")
EVAL = ("evaluate", "--run-dir", "{run}", "--split", "val", "--engine", "local")
STATUS = ("status", "--run-dir", "{run}")


def _config_cases() -> list[Case]:
    values = [
        ("num_trials", "num_trials: {v}", "num_trials", [".inf", ".nan", "true", "false",
                                                          "3.5", "'3'", "-1", "0", "null",
                                                          "[3]", "1e9"]),
        ("seed", "seed: {v}", "seed", [".inf", "true", "1.5", "abc"]),
        ("max_usd", "budget: {{max_usd: {v}}}", "budget.max_usd", [".inf", ".nan", "-1",
                                                                   "true"]),
        ("max_metric_calls", "budget: {{max_metric_calls: {v}}}", "budget.max_metric_calls",
         ["true", "1.5", ".inf", "-3"]),
        ("max_iterations", "budget: {{max_iterations: {v}}}", "budget.max_iterations",
         ["true", ".nan"]),
        ("stall", "budget: {{stall: {v}}}", "budget.stall", ["true"]),
        ("alpha", "gate: {{alpha: {v}}}", "gate.alpha", [".nan", ".inf", "true", "0.7"]),
        ("min_delta", "gate: {{min_delta: {v}}}", "gate.min_delta", [".inf", "-.inf", "true"]),
        ("k_se", "gate: {{k_se: {v}}}", "gate.k_se", [".inf", ".nan", "true"]),
        ("min_coverage", "gate: {{min_coverage: {v}}}", "gate.min_coverage", [".nan", "true"]),
        ("no_regression", "gate: {{no_regression: {v}}}", "gate.no_regression", ["3",
                                                                                  "'maybe'"]),
        ("split_train", "splits: {{train: {v}, val: 0.25, test: 0.25}}", "splits.train",
         [".nan", ".inf", "true"]),
        ("split_seed", "splits: {{seed: {v}}}", "splits.seed", ["true", ".inf"]),
        ("concurrency", "engine: {{kind: local, concurrency: {v}}}", "engine.concurrency",
         ["true", ".inf", "0", "2.5"]),
        ("timeout", "engine: {{kind: local, timeout_s: {v}}}", "engine.timeout_s",
         [".nan", ".inf", "-1", "true"]),
        ("retries", "engine: {{kind: local, retries: {v}}}", "engine.retries", ["true",
                                                                                  "100"]),
        ("workers", "engine: {{kind: local, workers: {v}}}", "workers", ["true", "0",
                                                                                  "many"]),
        ("engine_kind", "engine: {{kind: {v}}}", "engine.kind", ["spark", "true"]),
    ]
    cases = []
    for name, template, needle, vals in values:
        prefix = template.split(":")[0] + ":"
        for v in vals:
            cases.append(Case(f"config {name}={v}", "config", RUN,
                              _yaml(template.format(v=v), replace=prefix), needle))
    deep_list = "capabilities: " + "[" * 5000 + "]" * 5000
    deep_map = "stop_condition: " + "{a: " * 5000 + "1" + "}" * 5000
    cases += [
        Case("config nested 5,000 deep (lists)", "config", RUN, _yaml(deep_list,
                                                                      "capabilities:"),
             "capevolve.yaml"),
        Case("config nested 5,000 deep (maps)", "config", RUN, _yaml(deep_map,
                                                                     "stop_condition:"),
             "capevolve.yaml"),
        Case("config alias bomb", "config", RUN, _yaml(
            "x: &a [1,1,1,1,1,1,1,1,1,1]\ny: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
            "z: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nw: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
            "capabilities: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]", "capabilities:"),
             "capevolve.yaml"),
        Case("config unknown key", "config", RUN, _yaml("gate: {k_sE: 1}", "gate:"), "k_sE"),
        Case("config not UTF-8", "config", RUN, _write("capevolve.yaml", b"name: \xff\xfe\n",
                                                       base="project"), "UTF-8"),
        Case("config NUL bytes", "config", RUN, _write("capevolve.yaml", b"name: a\x00b\n",
                                                       base="project"), "capevolve.yaml"),
        Case("config empty", "config", RUN, _write("capevolve.yaml", "", base="project"),
             "capevolve.yaml"),
        Case("config a list", "config", RUN, _write("capevolve.yaml", "- 1\n- 2\n",
                                                    base="project"), "capevolve.yaml"),
        Case("config malformed YAML", "config", RUN, _write("capevolve.yaml", "a: [1, 2\n",
                                                            base="project"), "line"),
        Case("config duplicate key", "config", RUN, _yaml("num_trials: 2\nnum_trials: 3"),
             "capevolve.yaml"),
        Case("config is a directory", "config", RUN, _chain(_remove("capevolve.yaml",
                                                                    base="project"),
                                                            _write("capevolve.yaml/x", "",
                                                                   base="project")),
             "capevolve.yaml"),
        Case("config missing", "config", RUN, _remove("capevolve.yaml", base="project"),
             "capevolve.yaml"),
        Case("config name empty", "config", RUN, _yaml("name: ''", "name:"), "name"),
        Case("config capability_path /etc", "path", RUN, _yaml("capability_path: /etc",
                                                               "capability_path:"),
             "capability_path: candidate: /etc/"),
        Case("config capability_path ../..", "path", RUN, _yaml("capability_path: ../..",
                                                                "capability_path:"),
             "capability_path"),
        Case("config capability_path the project", "path", RUN,
             _yaml("capability_path: .", "capability_path:"), "capability_path"),
        Case("config capability_path missing", "path", RUN,
             _yaml("capability_path: nowhere", "capability_path:"), "capability_path"),
        Case("config capability_path a file", "path", RUN,
             _yaml("capability_path: spec.json", "capability_path:"), "capability_path"),
        Case("config capability_path symlink out", "path", RUN, _chain(
            _symlink("outside", "/etc", base="project"),
            _yaml("capability_path: outside", "capability_path:")), "capability_path:"),
        Case("config adapter missing file", "config", RUN, _yaml("adapter: nope.py:A",
                                                                 "adapter:"), "nope.py"),
        Case("config adapter no class", "config", RUN, _yaml("adapter: adapter.py:Nope",
                                                             "adapter:"), "Nope"),
        Case("config adapter /etc/passwd", "path", RUN, _yaml("adapter: /etc/passwd:A",
                                                              "adapter:"), "adapter"),
        Case("config adapter ../x.py", "path", RUN, _yaml("adapter: ../x.py:A", "adapter:"),
             "adapter"),
        Case("config adapter no colon", "config", RUN, _yaml("adapter: adapter.py",
                                                             "adapter:"), "adapter"),
        Case("config ids_file missing", "config", RUN,
             _yaml("splits: {ids_file: none.json}", "splits:"), "none.json"),
        Case("config ids_file malformed", "config", RUN, _chain(
            _write("ids.json", "{\"train\": [", base="project"),
            _yaml("splits: {ids_file: ids.json}", "splits:")), "ids.json"),
        Case("config ids_file /etc/passwd", "path", RUN,
             _yaml("splits: {ids_file: /etc/passwd}", "splits:"), "ids_file"),
        Case("config ids_file unknown ids", "config", RUN, _chain(
            _write("ids.json", json.dumps({"train": [], "val": ["zz"], "test": ["t001"]}),
                   base="project"),
            _yaml("splits: {ids_file: ids.json}", "splits:")), "zz"),
    ]
    return cases


def _c(name: str, group: str, args: tuple[Arg, ...], needle: str | None = None,
       prepare: Callable[[Env], None] | None = None, usage: bool = False) -> Case:
    return Case(name, group, args, prepare, needle, usage)


def _cli_cases() -> list[Case]:
    r = ("--run-dir", "{run}")
    return [
        _c("unknown command", "usage", ("frobnicate",), usage=True),
        _c("unknown option", "usage", ("status", *r, "--frob"), usage=True),
        _c("missing option", "usage", ("evaluate", *r), usage=True),
        _c("missing option --json", "usage", ("evaluate", *r, "--json"), usage=True),
        _c("bad --n-trials", "usage", (*EVAL, "--candidate", "seed", "--n-trials", "abc"),
             usage=True),
        _c("--n-trials 0", "usage", (*EVAL, "--candidate", "seed", "--n-trials", "0"),
             usage=True),
        _c("bad --engine", "usage", ("evaluate", *r, "--candidate", "seed", "--engine",
                                       "spark"), usage=True),
        _c("bad --k-se", "usage", ("gate", *r, "--candidate", "seed", "--k-se", "-1"),
             usage=True),
        _c("gate --mode coin", "usage", ("gate", *r, "--candidate", "seed", "--mode",
                                           "coin"), usage=True),
        _c("evaluate --split test", "cli", (*EVAL[:4], "test", "--candidate", "seed"),
             "test"),
        _c("evaluate --split bogus", "cli", (*EVAL[:4], "bogus", "--candidate", "seed"),
             "bogus"),
        _c("evaluate unknown candidate id", "cli", (*EVAL, "--candidate", "cand_999"),
             "cand_999"),
        _c("evaluate --candidate ../x", "path", (*EVAL, "--candidate", "../x"), "../x"),
        _c("evaluate --candidate a file", "path", (*EVAL, "--candidate", "{project}/spec.json"),
             "spec.json"),
        _c("evaluate --candidate empty", "path", (*EVAL, "--candidate", ""), "candidate"),
        _c("evaluate --candidate the run dir", "path", (*EVAL, "--candidate", "{run}"),
             "candidate"),
        _c("evaluate --candidate a snapshot path", "path",
             (*EVAL, "--candidate", "{run}/candidates/seed/files"), "candidate"),
        _c("evaluate --candidate /", "path", (*EVAL, "--candidate", "/"), "candidate"),
        _c("evaluate --candidate /etc", "path", (*EVAL, "--candidate", "/etc"), "candidate"),
        _c("evaluate --candidate not UTF-8", "path", (*EVAL, "--candidate", b"\xff\xfe"),
             "candidate"),
        _c("evaluate --candidate symlink to /etc", "path", (*EVAL, "--candidate", "{cand}"),
             "passwd.md", _symlink("passwd.md", "/etc/passwd")),
        _c("evaluate --candidate dangling symlink", "path",
             (*EVAL, "--candidate", "{cand}"), "gone.md", _symlink("gone.md", "{tmp}/nowhere")),
        _c("evaluate --candidate dir symlink out", "path", (*EVAL, "--candidate", "{cand}"),
             "sub", _symlink("sub", "/etc")),
        _c("evaluate --candidate symlink loop", "path", (*EVAL, "--candidate", "{cand}"),
             "loop", _symlink("loop", "loop")),
        _c("evaluate --candidate unreadable name", "path", (*EVAL, "--candidate", "{cand}"),
             "name", lambda env: (env.cand / os.fsdecode(b"bad\xffname.md")).write_text("x")),
        _c("evaluate --candidate fifo", "path", (*EVAL, "--candidate", "{cand}"),
             "pipe", lambda env: os.mkfifo(env.cand / "pipe")),
        _c("gate unknown candidate", "cli", ("gate", *r, "--candidate", "cand_999"),
             "cand_999"),
        _c("gate never evaluated", "cli", ("gate", *r, "--candidate", "seed"), None),
        _c("gate --current nan", "cli", ("gate", "--current", "nan", "--candidate", "0.5",
                                           "--current-stderr", "0.1", "--candidate-stderr",
                                           "0.1"), "finite"),
        _c("gate --current inf", "cli", ("gate", "--current", "inf", "--candidate", "0.5",
                                           "--current-stderr", "0.1", "--candidate-stderr",
                                           "0.1"), "finite"),
        _c("gate raw candidate not a number", "cli",
             ("gate", "--current", "0.5", "--candidate", "abc", "--current-stderr", "0.1",
              "--candidate-stderr", "0.1"), "abc"),
        _c("gate raw negative SE", "cli",
             ("gate", "--current", "0.5", "--candidate", "0.6", "--current-stderr", "-1",
              "--candidate-stderr", "0.1"), None),
        _c("accept without a gate", "cli", ("accept", *r, "--candidate", "seed"), "seed"),
        _c("accept unknown", "cli", ("accept", *r, "--candidate", "../../etc"), "etc"),
        _c("reject the best", "cli", ("reject", *r, "--candidate", "cand_404"), "cand_404"),
        _c("accept --note not UTF-8", "cli", ("accept", *r, "--candidate", "seed",
                                                "--note", b"\xff\xfe"), None),
        _c("reject --note not UTF-8", "cli", ("reject", *r, "--candidate", "seed",
                                                "--note", b"caf\xe9"), "note"),
        _c("reject --note NUL-free control chars", "cli",
             ("reject", *r, "--candidate", "cand_1", "--note", "\x1b[2J"), "cand_1"),
        _c("query write", "cli", ("query", *r, "COPY rollouts TO '/tmp/x.csv'"), None),
        _c("query bad SQL", "cli", ("query", *r, "SELEC 1"), None),
        _c("query other file", "cli", ("query", *r, "SELECT * FROM read_text('/etc/passwd')"),
             None),
        _c("query not UTF-8", "cli", ("query", *r, b"SELECT '\xff'"), None),
        _c("status --run-dir missing", "path", ("status", "--run-dir", "{tmp}/nope"), "nope"),
        _c("status --run-dir a file", "path", ("status", "--run-dir", "{project}/spec.json"),
             "spec.json"),
        _c("status --run-dir /", "path", ("status", "--run-dir", "/"), "/"),
        _c("status --run-dir not UTF-8", "path", ("status", "--run-dir", b"{tmp}/\xff"),
             "run"),
        _c("status --run-dir the project", "path", ("status", "--run-dir", "{project}"),
             "project"),
        _c("evaluate --run-dir empty", "path", ("evaluate", "--run-dir", "", "--candidate",
                                                  "seed"), None),
        _c("report --run-dir missing", "path", ("report", "--run-dir", "{tmp}/nope"), "nope"),
        _c("finalize --run-dir missing", "path", ("finalize", "--run-dir", "{tmp}/nope"),
             "nope"),
        _c("run --project missing", "path", ("run", "--project", "{tmp}/nope", "--run-dir",
                                               "{new_run}"), "nope"),
        _c("run --project a file", "path", ("run", "--project", "{project}/spec.json",
                                              "--run-dir", "{new_run}"), "spec.json"),
        _c("run --project not UTF-8", "path", ("run", "--project", b"\xff", "--run-dir",
                                                 "{new_run}"), None),
        _c("run --run-dir an existing run", "path", ("run", "--project", "{project}",
                                                       "--run-dir", "{run}", "--engine",
                                                       "local"), "run"),
        _c("run --run-dir a file", "path", ("run", "--project", "{project}", "--run-dir",
                                              "{project}/spec.json", "--engine", "local"),
             "spec.json"),
        _c("run --run-dir under a file", "path", ("run", "--project", "{project}",
                                                    "--run-dir", "{project}/spec.json/r",
                                                    "--engine", "local"), "spec.json"),
        _c("run --run-dir in /proc", "path", ("run", "--project", "{project}", "--run-dir",
                                                "/proc/capevolve-run", "--engine", "local"),
             "/proc"),
        _c("init into /proc", "path", ("init", "/proc/capevolve-init"), "/proc"),
        _c("init under a file", "path", ("init", "{project}/spec.json/new"), "spec.json"),
        _c("init into a file", "path", ("init", "{project}/spec.json"), "spec.json"),
        _c("init into an existing project", "path", ("init", "{project}"), "capevolve.yaml"),
        _c("init not UTF-8", "path", ("init", b"\xff\xfe"), None),
        _c("init into /sys", "path", ("init", "/sys/capevolve-init"), "/sys"),
        _c("diagnose --split test", "cli", ("diagnose", *r, "--split", "test", "--tag",
                                              "seed"), "test"),
        _c("diagnose unknown tag", "cli", ("diagnose", *r, "--split", "val", "--tag",
                                             "cand_404"), "cand_404"),
        _c("diagnose annotate missing file", "path",
             ("diagnose", "annotate", *r, "--file", "{tmp}/nope.json", "--cluster", "x",
              "--tag", "BEHAVIORAL"), "nope.json"),
        _c("census check missing", "path", ("census", "check", "{tmp}/nope.json"),
             "nope.json"),
        _c("census check garbage", "path", ("census", "check", "{project}/adapter.py"),
             "adapter.py"),
        _c("census export --out a file", "path",
             ("census", "export", *r, "--split", "val", "--tag", "seed", "--out",
              "{project}/spec.json"), "spec.json"),
    ]


def _record_cases() -> list[Case]:
    """Hand-edited, truncated or removed files of the run dir, then a reading command."""
    spend = "spend"
    eval_file = "evals/val__seed__k1.json"
    means_file = "evals/val__seed__k1.means.parquet"
    cases = [
        ("event without kind", _edit_last_event({}, drop=["kind"]), "events.jsonl:"),
        ("event spend metric_calls 'abc'", _edit_last_event({"metric_calls": "abc"},
                                                            kind=spend), "events.jsonl:"),
        ("event spend metric_calls 1.5", _edit_last_event({"metric_calls": 1.5}, kind=spend),
         "events.jsonl:"),
        ("event spend metric_calls true", _edit_last_event({"metric_calls": True},
                                                           kind=spend), "events.jsonl:"),
        ("event spend cost -5", _edit_last_event({"cost_usd": -5.0}, kind=spend),
         "events.jsonl:"),
        ("event spend tokens 1e400", _mutate("events.jsonl", lambda b: b.replace(
            b'"tokens": ', b'"tokens": 1e400, "x_": ', 1)), "events.jsonl:"),
        ("event a JSON list", _append_event([1, 2, 3]), "events.jsonl:"),
        ("event a JSON string", _append_event("hello"), "events.jsonl:"),
        ("event unknown version", _append_event({"kind": "note", "format_version": 99}),
         "events.jsonl:"),
        ("event kind a number", _edit_last_event({"kind": 7}), "events.jsonl:"),
        ("event ts missing", _edit_last_event({}, drop=["ts"]), "events.jsonl:"),
        ("event not UTF-8", _mutate("events.jsonl", lambda b: b.replace(b'"pid"',
                                                                        b'"p\xffid"', 1)),
         "events.jsonl"),
        ("events.jsonl removed", _remove("events.jsonl"), "events.jsonl"),
        ("events.jsonl a directory", _chain(_remove("events.jsonl"),
                                            _write("events.jsonl/x", "")), "events.jsonl"),
        ("events.jsonl emptied", _write("events.jsonl", ""), "events.jsonl"),
        ("eval truncated", _mutate(eval_file, lambda b: b[: len(b) // 2]), eval_file),
        ("eval emptied", _write(eval_file, ""), eval_file),
        ("eval a list", _write(eval_file, "[]"), eval_file),
        ("eval mean a string", _mutate(eval_file, lambda b: b.replace(b'"mean": ',
                                                                      b'"mean": "x", "_m": ')),
         eval_file),
        ("eval n_tasks -1", _mutate(eval_file, lambda b: b.replace(b'"n_tasks": ',
                                                                   b'"n_tasks": -1, "_n": ')),
         eval_file),
        ("eval unknown status", _mutate(eval_file, lambda b: b.replace(b'"complete"',
                                                                       b'"finished"')),
         eval_file),
        ("eval not UTF-8", _mutate(eval_file, lambda b: b.replace(b"{", b"{\xff", 1)),
         eval_file),
        ("eval renamed", lambda env: (env.run / eval_file).rename(
            env.run / "evals/val__seed__k7.json"), "val__seed__k7"),
        ("eval a directory", _chain(_remove(eval_file), _write(eval_file + "/x", "")),
         "val__seed__k1"),
        ("run.json truncated", _mutate("run.json", lambda b: b[: len(b) // 2]), "run.json"),
        ("run.json missing field", _mutate("run.json", lambda b: b.replace(b'"run_id"',
                                                                           b'"run_idx"')),
         "run.json"),
        ("run.json removed", _remove("run.json"), "run.json"),
        ("run.json version 2", _mutate("run.json", lambda b: b.replace(
            b'"format_version": 1', b'"format_version": 2')), "run.json"),
        ("splits.json truncated", _mutate("splits.json", lambda b: b[: len(b) // 2]),
         "splits.json"),
        ("splits.json edited", _mutate("splits.json", lambda b: b.replace(b'"t0', b'"x0', 1)),
         "splits.json"),
        ("splits.json a list", _write("splits.json", "[]"), "splits.json"),
        ("candidate.json truncated", _mutate("candidates/seed/candidate.json",
                                             lambda b: b[: len(b) // 2]), "candidate.json"),
        ("candidate.json wrong id", _mutate("candidates/seed/candidate.json",
                                            lambda b: b.replace(b'"id": "seed"',
                                                                b'"id": "other"')),
         "candidate.json"),
        ("snapshot file edited", _mutate("candidates/seed/files/quality.txt",
                                         lambda b: b"1.0"), "seed"),
        ("snapshot removed", _remove("candidates/seed/files"), "seed"),
        ("seal.json garbage", _write("seal.json", "{not json"), "seal.json"),
        ("final.json garbage", _write("final.json", "{\"format_version\": 1}"), "final.json"),
        ("state.json garbage then evaluate", _write("state.json", "\x00\x01garbage"), None),
        ("lock is a directory", _chain(_remove("lock"), _write("lock/x", "")), "lock"),
    ]
    out = []
    for name, prepare, needle in cases:
        args = STATUS
        if name == "state.json garbage then evaluate":
            continue  # a cache: status must still work; covered by the tests, not here
        if name.startswith(("seal.json", "lock")):
            args = (*EVAL, "--candidate", "seed")
        elif name.startswith("candidate.json"):
            args = (*EVAL, "--candidate", "{cand}")  # a new candidate reads every record
        elif name.startswith("snapshot"):
            args = (*EVAL, "--candidate", "seed", "--n-trials", "2")  # runs the snapshot
        verb = args[0]
        out.append(Case(f"record: {name} ({verb})", "record", args, prepare, needle))
    extra = [
        Case("record: event without kind (evaluate)", "record",
             (*EVAL, "--candidate", "{cand}"), _edit_last_event({}, drop=["kind"]),
             "events.jsonl:"),
        Case("record: spend 'abc' (gate)", "record", ("gate", "--run-dir", "{run}",
                                                      "--candidate", "seed"),
             _edit_last_event({"metric_calls": "abc"}, kind=spend), "events.jsonl:"),
        Case("record: eval truncated (evaluate)", "record", (*EVAL, "--candidate", "seed"),
             _mutate(eval_file, lambda b: b[: len(b) // 2]), eval_file),
        Case("record: eval truncated (report)", "record", ("report", "--run-dir", "{run}"),
             _mutate(eval_file, lambda b: b[: len(b) // 2]), eval_file),
        Case("record: eval means truncated (report --json)", "record",
             ("report", "--run-dir", "{run}", "--json"),
             _mutate(means_file, lambda b: b[: len(b) // 2]), means_file),
        Case("record: eval means byte flipped (report --json)", "record",
             ("report", "--run-dir", "{run}", "--json"),
             _mutate(means_file, lambda b: b[:8] + bytes([b[8] ^ 1]) + b[9:]), means_file),
        Case("record: eval means removed (report --json)", "record",
             ("report", "--run-dir", "{run}", "--json"), _remove(means_file), means_file),
        Case("record: eval means removed (report --html)", "record",
             ("report", "--run-dir", "{run}", "--html"), _remove(means_file), means_file),
        Case("record: run.json truncated (query)", "record",
             ("query", "--run-dir", "{run}", "SELECT 1"), _mutate("run.json",
                                                                   lambda b: b[:40]),
             "run.json"),
    ]
    return out + extra


def all_cases() -> list[Case]:
    """Every row of the bad-input table."""
    cases = _config_cases() + _cli_cases() + _record_cases()
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "case names must be unique"
    return cases
