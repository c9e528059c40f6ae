"""The toy project: a simulated arithmetic agent whose skill depends on its system prompt.

Each task kind has one rule keyword. When a markdown bullet of ``system_prompt.md`` mentions
the keyword, the simulated agent follows that rule and is usually right; without it the agent
makes the typical mistake for that kind (a dropped carry, a dropped remainder, ...). All
randomness comes from ``random.Random(seed)``, so one seed always gives the same rollout.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from capevolve.adapter import Rollout, Score, Task, ToolCall

KINDS = ("add", "sub", "mul", "div", "compare", "word")
RULE_KEYWORDS = {
    "add": "carry",
    "sub": "borrow",
    "mul": "multiply",
    "div": "remainder",
    "compare": "compare",
    "word": "step by step",
}
P_CORRECT_WITH_RULE = 0.9
P_CORRECT_WITHOUT_RULE = 0.25
P_NEAR_MISS_WITH_RULE = 0.6  # a wrong answer despite the rule is usually a small slip
P_NEAR_MISS_WITHOUT_RULE = 0.3
N_TASKS = 80
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_DIV_ANSWER = re.compile(r"^\s*(-?\d+)\s*(?:r\s*(-?\d+))?\s*$")


def _digitwise(a: int, b: int, op) -> int:
    """Combine a and b column by column with no carry or borrow between columns."""
    width = max(len(str(a)), len(str(b)))
    pairs = zip(str(a).zfill(width), str(b).zfill(width), strict=True)
    digits = [op(int(x), int(y)) % 10 for x, y in pairs]
    return int("".join(map(str, digits)))


def _make_task(i: int, kind: str, rng: random.Random) -> Task:
    meta: dict = {"kind": kind}
    if kind == "add":  # carries into both the tens and the hundreds column
        while True:
            a, b = rng.randint(100, 899), rng.randint(100, 899)
            if a % 10 + b % 10 >= 10 and a // 10 % 10 + b // 10 % 10 + 1 >= 10:
                break
        question, answer, meta["operands"] = f"What is {a} + {b}?", a + b, [a, b]
    elif kind == "sub":  # needs a borrow from the tens column
        while True:
            a, b = rng.randint(300, 999), rng.randint(100, 299)
            if a % 10 < b % 10 and b % 10 - a % 10 != 5:
                break
        question, answer, meta["operands"] = f"What is {a} - {b}?", a - b, [a, b]
    elif kind == "mul":
        a, b = rng.randint(12, 98), rng.randint(12, 98)
        question, answer, meta["operands"] = f"What is {a} x {b}?", a * b, [a, b]
    elif kind == "div":
        d = rng.randint(3, 9)
        n = rng.choice([k for k in range(100, 1000) if k % d])
        question = f"Divide {n} by {d}. Answer as 'Q r R' (quotient, remainder)."
        answer, meta["operands"] = f"{n // d} r {n % d}", [n, d]
    elif kind == "compare":
        x, y = rng.randint(0, 9), rng.randint(2, 9)
        bigger, smaller = f"{x}.{y}", f"{x}.{rng.randint(0, y - 1)}{rng.randint(1, 9)}"
        pair = [bigger, smaller] if rng.random() < 0.5 else [smaller, bigger]
        question = f"Which number is larger: {pair[0]} or {pair[1]}?"
        answer, meta["operands"] = bigger, pair
    else:
        template = rng.randrange(3)
        if template == 0:
            a, b = rng.randint(6, 15), rng.randint(3, 9)
            c = rng.randint(2, 20)
            question = (f"A box holds {a} pens. Sam buys {b} boxes and gives away {c} pens. "
                        "How many pens does Sam have left?")
            first, answer, expr = a * b, a * b - c, f"{a}*{b}-{c}"
        elif template == 1:
            c, q = rng.randint(2, 6), rng.randint(3, 12)
            b = rng.randint(5, c * q - 5)
            a = c * q - b
            question = (f"Mia has {a} stickers and gets {b} more. She shares them equally among "
                        f"{c} friends. How many stickers does each friend get?")
            first, answer, expr = c * q, q, f"({a}+{b})/{c}"
        else:
            a, b = rng.randint(40, 90), rng.randint(5, 35)
            c, d = rng.randint(2, 6), rng.randint(4, 12)
            question = (f"A shop has {a} apples, sells {b}, then receives {c} crates of {d} "
                        "apples each. How many apples does it have now?")
            first, answer, expr = a - b, a - b + c * d, f"{a}-{b}+{c}*{d}"
        meta.update(first_step=first, expression=expr)
    return Task(id=f"t{i:03d}", input=question, target=str(answer), metadata=meta)


def _wrong_answer(task: Task, near: bool, rng: random.Random) -> str:
    """The kind-specific plausible mistake: a near miss (partial credit) or a far miss."""
    kind, ops, target = task.metadata["kind"], task.metadata.get("operands"), task.target
    if kind == "add":
        return str(int(target) - 10 if near else _digitwise(ops[0], ops[1], lambda x, y: x + y))
    if kind == "sub":
        no_borrow = _digitwise(ops[0], ops[1], lambda x, y: abs(x - y))
        return str(int(target) + 10 if near else no_borrow)
    if kind == "mul":
        a, b = ops
        return str(int(target) + 10 if near else a * (b % 10) + a * (b // 10))
    if kind == "div":
        n, d = ops
        return str(n // d) if near else f"{n // d - 1} r {n % d + d}"
    if kind == "compare":
        return next(x for x in ops if x != target)
    return str(int(target) + rng.choice([-1, 1]) if near else task.metadata["first_step"])


def _rules(prompt: str) -> set[str]:
    """Task kinds whose rule keyword appears in a markdown bullet of the prompt."""
    bullets = [m.group(1).lower() for line in prompt.splitlines() if (m := _BULLET.match(line))]
    return {kind for kind, word in RULE_KEYWORDS.items() if any(word in b for b in bullets)}


class ToyAdapter:
    """Adapter for the toy arithmetic project (synchronous)."""

    run_target_sees_target = True
    """The simulated agent answers with the target when it applies the rule: its
    run_target needs the answers (the run says candidate code could see them)."""

    def tasks(self) -> list[Task]:
        """80 deterministic arithmetic tasks, ids t000..t079, kinds in rotation."""
        rng = random.Random(0)
        return [_make_task(i, KINDS[i % len(KINDS)], rng) for i in range(N_TASKS)]

    def run_target(self, candidate: Path, task: Task, *, trial: int, seed: int) -> Rollout:
        """Simulate the agent with the capability in ``candidate`` answering ``task``."""
        path = Path(candidate) / "system_prompt.md"
        if not path.is_file():
            return Rollout(error=f"capability has no system_prompt.md (looked for {path})")
        prompt = path.read_text(encoding="utf-8")
        kind = task.metadata["kind"]
        rules = _rules(prompt)
        has_rule = kind in rules
        rng = random.Random(seed)
        trace: list[dict] = [
            {"step": "read_capability", "rules_found": sorted(RULE_KEYWORDS[k] for k in rules)},
            {"step": "plan", "kind": kind,
             "rule_applied": RULE_KEYWORDS[kind] if has_rule else None},
        ]
        tool_calls: list[ToolCall] = []
        if has_rule and "calculator" in prompt.lower() and kind in ("mul", "word"):
            a = task.metadata.get("operands") or [None, None]
            expr = f"{a[0]}*{a[1]}" if kind == "mul" else task.metadata["expression"]
            call = ToolCall(name="calculate", arguments={"expression": expr}, mutates=False)
            tool_calls.append(call)
            trace.append({"step": "tool", "name": "calculate", "expression": expr})
        if rng.random() < (P_CORRECT_WITH_RULE if has_rule else P_CORRECT_WITHOUT_RULE):
            output = task.target
        else:
            p_near = P_NEAR_MISS_WITH_RULE if has_rule else P_NEAR_MISS_WITHOUT_RULE
            output = _wrong_answer(task, rng.random() < p_near, rng)
        trace.append({"step": "answer", "text": output})
        tokens = len(prompt.split()) + len(str(task.input).split()) + len(output.split())
        return Rollout(
            output=output, trace=trace, tool_calls=tool_calls, tokens=tokens, cost_usd=None
        )

    def score(self, task: Task, rollout: Rollout) -> Score:
        """1.0 for the exact answer, 0.5 for a near miss, 0 otherwise; feedback says why."""
        reward, feedback = self._judge(task, rollout)
        return Score(reward=reward, feedback=feedback, parts={"exact": float(reward == 1.0)})

    @staticmethod
    def _judge(task: Task, rollout: Rollout) -> tuple[float, str]:
        kind, ops = task.metadata["kind"], task.metadata.get("operands")
        if rollout.error or rollout.output is None:
            return 0.0, "no answer was produced"
        out = str(rollout.output).strip()
        if out == task.target:
            return 1.0, "correct: the answer matches exactly"
        if kind == "compare":
            if out not in ops:
                return 0.0, "the answer is neither of the two numbers in the question"
            return 0.0, ("the wrong number was picked: it has more digits after the decimal "
                         "point but a smaller tenths digit; compare place by place starting "
                         "from the tenths")
        if kind == "div":
            m = _DIV_ANSWER.match(out)
            n, d = ops
            if not m:
                return 0.0, "the answer is not in the form 'Q r R' (quotient, remainder)"
            q, r = int(m.group(1)), m.group(2)
            if r is None and q == n // d:
                return 0.5, "the quotient is right but the remainder was dropped"
            if r is not None and int(r) >= d:
                return 0.0, ("the remainder is not smaller than the divisor, so one more group "
                             "fits and the quotient is too small")
            return 0.0, "the quotient and remainder do not divide the number back out"
        try:
            value, target = int(out), int(task.target)
        except ValueError:
            return 0.0, "the answer is not a whole number"
        diff = value - target
        if kind == "add":
            if diff == -10:
                return 0.5, ("the carry into the tens column was dropped; "
                             "the other columns are right")
            if value == _digitwise(ops[0], ops[1], lambda x, y: x + y):
                return 0.0, ("every carry was dropped: each column was added on its own "
                             "without carrying")
        elif kind == "sub":
            if diff == 10:
                return 0.5, ("a borrow was taken for the ones column but the tens digit "
                             "was not reduced")
            if value == _digitwise(ops[0], ops[1], lambda x, y: abs(x - y)):
                return 0.0, ("the smaller digit was subtracted from the larger in each column "
                             "instead of borrowing from the next column")
        elif kind == "mul":
            if 0 < abs(diff) <= 10:
                return 0.5, "the product is close but a carry inside a partial product slipped"
            if value == ops[0] * (ops[1] % 10) + ops[0] * (ops[1] // 10):
                return 0.0, ("the partial product for the tens digit was not shifted one place "
                             "left before adding")
        elif kind == "word":
            if abs(diff) == 1:
                return 0.5, "the steps were right but the final count is off by one"
            if value == task.metadata["first_step"]:
                return 0.0, "only the first step was carried out; the later steps were ignored"
        return 0.0, "the answer is wrong by a wide margin"
