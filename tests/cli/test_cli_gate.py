"""The gate command: the raw form refuses non-finite numbers and honours min_delta."""

import pytest
from cli.cli_support import invoke, one_json, user_error

RAW = ("gate", "--candidate", "0.6", "--current-stderr", "0.02", "--candidate-stderr", "0.02")


@pytest.mark.parametrize("option, value", [
    ("--current", "-inf"), ("--current", "nan"), ("--current", "inf"),
    ("--current-stderr", "inf"), ("--candidate-stderr", "nan"), ("--k-se", "inf"),
])
def test_raw_gate_refuses_non_finite_numbers(option, value):
    """`gate --current -inf` and friends: one line naming the option, exit 2, no traceback."""
    args = dict(zip(RAW[1::2], RAW[2::2], strict=True))
    args.setdefault("--current", "0.5")
    args[option] = value
    flat = [part for pair in args.items() for part in pair]
    user_error(invoke("gate", *flat, "--json"), option)


def test_raw_gate_small_exact_move_is_negligible_below_min_delta():
    """+0.005 with zero SEs is an exact move below min_delta: rejected and negligible,
    never significant; with --min-delta 0.001 it is accepted."""
    args = ("gate", "--current", "0.5", "--candidate", "0.505", "--current-stderr", "0",
            "--candidate-stderr", "0", "--json")
    payload = one_json(invoke(*args))
    assert payload["decision"] == "reject" and payload["confidence"] == "negligible"
    loose = one_json(invoke(*args, "--min-delta", "0.001"))
    assert loose["decision"] == "accept" and loose["exact"]


def test_raw_gate_refuses_a_negative_stderr():
    """A negative SE is one error line naming the option."""
    user_error(invoke("gate", "--current", "0.5", "--candidate", "0.6", "--current-stderr",
                      "-0.1", "--candidate-stderr", "0.02"), "--current-stderr", ">= 0")
