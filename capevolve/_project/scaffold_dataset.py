"""``capevolve init --kind dataset``: a runnable dataset project; its capability file,
``knowledge.md``, is a name no protected pattern covers, so edits to it count.
"""

from __future__ import annotations

import json

CONFIG = """\
name: {name}
capability_path: seed_capability
capabilities: [knowledge]
dataset: {{path: data.jsonl, id: id, input: question, expected: answer}}
target: target.py:answer
evaluators:
  - {{name: exact, kind: normalized_exact, weight: 2}}
  - {{name: overlap, kind: token_f1, weight: 1}}
  # - name: judge
  #   kind: judge
  #   rubric: "1 when the output gives the expected answer, 0 otherwise."
  #   base_url: http://127.0.0.1:8080/v1
  #   model: my-pinned-model-id
splits: {{train: 0.5, val: 0.25, test: 0.25, seed: 0}}
num_trials: 1
gate: {{mode: paired, alpha: 0.05, min_delta: 0.02, min_coverage: 0.6, no_regression: true}}
budget: {{max_iterations: 20}}
engine: {{kind: local, workers: 1, concurrency: 8, timeout_s: 60, retries: 1}}
"""

TARGET = '''\
"""The code under test: ``answer(question, candidate_dir) -> output``.

Replace the lookup with a call to your model or pipeline; the capability directory is
what an edit changes (here ``knowledge.md``: ``question => answer`` lines).
"""

from pathlib import Path


def answer(question: str, candidate_dir: Path) -> str:
    known = {{}}
    for line in (Path(candidate_dir) / "knowledge.md").read_text().splitlines():
        if "=>" in line:
            q, _, a = line.partition("=>")
            known[q.strip().lower()] = a.strip()
    return known.get(question.strip().lower(), "I don't know")
'''

WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen"]

PROJECT_MD = """\
# {name}

A capevolve dataset project: no adapter code.

- `capevolve.yaml` — `dataset:` (the JSONL file and its fields), `target:` (the code under
  test) and `evaluators:` (the reward is their weighted mean; each is a score part).
- `data.jsonl` — one datapoint a line; a datapoint without an expected answer is excluded
  (never scored 0).
- `target.py` — `answer(question, candidate_dir)`.
- `seed_capability/` — what edits change.

    capevolve check --project .
    capevolve run --project .
"""


def files(name: str) -> dict[str, str]:
    """Every file of the starter dataset project, by relative path."""
    data = [{"id": f"n{i:02d}", "question": f"What is {w} plus one?", "answer": str(i + 2)}
            for i, w in enumerate(WORDS)]
    data.append({"id": "n99", "question": "What is a number?", "answer": ""})
    known = "\n".join(f"{d['question']} => {d['answer']}" for d in data[:6])
    return {
        "capevolve.yaml": CONFIG.format(name=name),
        "data.jsonl": "".join(json.dumps(d) + "\n" for d in data),
        "target.py": TARGET.format(),
        "seed_capability/knowledge.md": f"# Known answers\n\n{known}\n",
        "PROJECT.md": PROJECT_MD.format(name=name),
    }
