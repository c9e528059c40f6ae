"""The leak scan's rules on text: what counts as carrying an id, a gold value or an input
span, what is too common to count, and that a finding never holds the value."""

from __future__ import annotations

from capevolve._policy.leaks import Needles, leaves, scan


def _needles(min_chars: int = 4, ignore: tuple[str, ...] = ("yes", "no")) -> Needles:
    needles = Needles(min_chars, ignore)
    needles.add("retail_0042", "task id")
    needles.add("Refund 3 items to Visa-1234", "gold value of a val task")
    needles.add("42", "gold value of a test task")  # too short: never counts
    needles.add("yes", "gold value of a val task")  # ignored by the project
    return needles


def test_ids_and_gold_values_are_found_whatever_their_case_spacing_and_quotes():
    files = {"prompt.md": b"be kind\nsee 'RETAIL_0042' first\n",
             "tools/tools.py": b"ANSWER = 'refund  3 items to visa 1234'  # cached\n"}
    found = [leak.text() for leak in scan(files, _needles(), [], 0)]
    assert found == ["prompt.md:2: task id",
                     "tools/tools.py:1: gold value of a val task"]


def test_a_value_inside_a_longer_token_and_common_values_do_not_count():
    files = {"prompt.md": b"answer 142 or 42 items; yes or no; retail_00420\n"}
    assert scan(files, _needles(), [], 0) == []


def test_a_long_span_of_an_input_is_found_and_a_short_one_is_not():
    request = ("I bought a blue kettle last week and it arrived with a cracked lid, "
               "please exchange it for the same kettle in green if you have one.")
    copied = {"prompt.md": ("Example:\n" + request[5:120].upper() + "\n").encode()}
    short = {"prompt.md": request[:40].encode()}
    assert [leak.text() for leak in scan(copied, Needles(4, ()), [request], 64)] == [
        "prompt.md:2: span of a task input"]
    assert scan(short, Needles(4, ()), [request], 64) == []


def test_a_finding_names_file_line_and_kind_never_the_value():
    leak = scan({"p.md": b"visa-1234 refund 3 items to visa 1234"}, _needles(), [], 0)[0]
    assert "1234" not in leak.text() and "refund" not in leak.text()


def test_every_string_and_number_of_a_structured_target_is_a_value():
    target = {"actions": [{"name": "refund", "amount": 120.5}], "ok": True, "note": None}
    assert list(leaves(target)) == ["refund", "120.5"]


def test_binary_files_are_skipped():
    assert scan({"logo.png": b"\x89PNG\r\n\x1a\n\xff\xfe retail_0042"}, _needles(), [], 0) == []
