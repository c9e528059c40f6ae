"""Counting under faults against a real model: the llama.cpp server of the ``llm`` tier
(``make llm-model``) behind the fault-injecting proxy of the tests, a 12-task project
whose agent is one call of capevolve's client per rollout.

Prints, as JSON: the tokens the server served and the tokens capevolve recorded (rows plus
the check probe) with 429s and 500s injected; then, with 429 on every call, the calls made
before the circuit breaker stopped the evaluation, and the command's exit code.

Run (needs `make llm-model`; not part of make bench):
.venv/bin/python benchmarks/perf/model_faults.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from cli.cli_support import invoke  # noqa: E402
from fixtures.fault_proxy import FaultProxy  # noqa: E402
from fixtures.llama_server import start  # noqa: E402

import capevolve  # noqa: E402


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="model-faults-"))
    out: dict = {}
    with start() as url, FaultProxy(url, ["429", None, "500", None] * 10) as proxy:
        root = tmp / "p"
        root.mkdir()
        shutil.copy(REPO / "tests" / "fixtures" / "model_adapter.py", root / "adapter.py")
        (root / "seed").mkdir()
        (root / "seed" / "prompt.txt").write_text("Answer yes or no: is the sky blue?")
        (root / "capevolve.yaml").write_text(
            "name: m\nadapter: adapter.py:ModelAdapter\ncapability_path: seed\nnum_trials: 1\n"
            "engine: {kind: local, concurrency: 1, timeout_s: 300, retries: 1}\n"
            f"models:\n  agent: {{base_url: '{proxy.base_url}', model: gemma, max_tokens: 8,"
            " retries: 2, backoff_s: 0.05, price: {input: 0, output: 0}}\n")
        run = tmp / "run"
        capevolve.start_run(root, run, engine="local")
        _, rows = capevolve.query(run, "SELECT sum(tokens), sum(unknown_attempts), count(*) "
                                       "FROM rollouts")
        check = json.loads((run / "run.json").read_text())["models_check"]
        out["served_tokens"] = proxy.served_tokens
        out["recorded_tokens"] = rows[0][0] + check["prompt_tokens"] + check["completion_tokens"]
        out["unknown_attempts"] = rows[0][1] + check["unknown_attempts"]
        out["injected"] = {f: sum(r["fault"] == f for r in proxy.requests)
                           for f in ("429", "500")}
        before = len(proxy.requests)
        proxy.faults, proxy.default = [], "429"
        cand = tmp / "c"
        cand.mkdir()
        (cand / "prompt.txt").write_text("Answer yes or no: is grass green?")
        result = invoke("evaluate", "--run-dir", run, "--candidate", cand, "--split", "val",
                        "--engine", "local", "--json")
        out["quota_calls_until_stop"] = len(proxy.requests) - before
        out["quota_exit_code"] = result.exit_code
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
