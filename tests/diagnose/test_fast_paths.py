"""The fast paths give exactly what the plain code gives: the JSON parser, the trace
pre-check, the shared cause-text keys, the document writer and the trajectory text."""

from __future__ import annotations

import json
import math
import random

import pytest
from diagnose import golden_corpus

from capevolve._store.documents import diagnosis_record
from capevolve.diagnose import trajectories
from capevolve.diagnose.diagnosis import canonical_json, document_bytes
from capevolve.diagnose.jsontext import is_json, loads
from capevolve.diagnose.narrated import call_mutates, trace_calls, trace_may_write
from capevolve.diagnose.signature import KeyCache, key_of, raw_tokens
from capevolve.diagnose.source import Trial

ODD_JSON = ["NaN", "[NaN, Infinity, -Infinity]", '"\\ud800"', '"\\ud83d\\ude00"',
            '{"a": 1, "b": 2, "a": 3}', "123456789012345678901234567890", "1e400", "-0",
            '"a\x01b"', "\ufeff1", " [1] ", "[1] x", "", "  ", '"\\x"', "[1,]", "01", "1.",
            '{"\\u0061": 1}', "[" * 3000 + "]" * 3000, "9" * 5000, "-NaN", "Infinity",
            '"\\u0000"', "{1: 2}", "{'a': 1}", "[]]", "nul", "1_000", '"\\/"', "-0.0",
            '"\ud800"', '["a\udfffb", {"k\ud83d": 1}]']  # raw lone surrogates (not UTF-8)


def _outcome(parse, text):
    try:
        return "ok", repr(parse(text))
    except ValueError:
        return "error", None
    except RecursionError:
        return "recursion", None


@pytest.mark.parametrize("text", ODD_JSON)
def test_loads_gives_json_loads_value_or_error(text):
    """Value (repr, so NaN and key order count) or error: the same as json.loads, except
    that nesting json.loads cannot recurse through is a ValueError (not JSON to diagnose)."""
    expected = _outcome(json.loads, text)
    if expected[0] == "recursion":
        expected = ("error", None)
    assert _outcome(loads, text) == expected
    assert is_json(text) == (expected[0] == "ok")


def test_a_trace_nested_too_deep_is_written_as_text_not_a_traceback(tmp_path):
    """A candidate's trace nested 3,000 deep (json.loads raises RecursionError on it) is
    kept in its trajectory file as a JSON string, byte for byte, instead of ending the
    diagnose with a traceback."""
    deep = "[" * 3000 + "]" * 3000
    trial = Trial("e", "t", 0, 0.0, "f", None, "out", None, deep, deep, None, None, None)
    folder = tmp_path / "trajectories"
    trajectories.write_all(folder, [trial])
    (written,) = folder.iterdir()
    back = json.loads(written.read_bytes())
    assert back["trace"] == deep


FOOLING_TRACES = [
    '[{"tool_calls": [{"function": {"n\\u0061me": "cancel_order"}}]}]',
    '[{"tool_calls": [{"function": {"name": "cancel\\u005forder"}}]}]',
    '[{"tool_calls": [{"function": {"name": "get_order"}, "mutates": true}]}]',
    '[{"tool_calls": [{"function": {"name": "get_\\"x"}}]}]',
    '[{"tool_calls": [{"function": {"name": 7}}]}]',
    '[{"tool_calls": [{"name": "get_order"}]}, {"content": "{\\"name\\": \\"cancel_order\\"}"}]',
    '[{"tool_calls": [{"name": "get_order"}, {"name" : "refund_order"}]}]',
    '[{"function_call": {"name": "delete_user"}}]',
    '{"tool_calls": [{"function": {"name": "search"}, "name": "list_x"}]}',
]


def _traces() -> list[str]:
    rng = random.Random(5)
    out = [t.trace for t in golden_corpus.corpus() if t.trace] + FOOLING_TRACES
    for _ in range(300):
        names = [rng.choice(golden_corpus.NAMES) for _ in range(rng.randint(0, 3))]
        items = [{"function": {"name": n}} if rng.random() < 0.5 else {"name": n}
                 for n in names]
        if rng.random() < 0.2 and items:
            items[0]["mutates"] = rng.choice([True, False, None])
        out.append(json.dumps([{"role": "assistant", "tool_calls": items},
                               {"role": "tool", "content": json.dumps({"name": rng.choice(
                                   golden_corpus.NAMES)})}], ensure_ascii=rng.random() < 0.5))
    return out


def test_the_trace_precheck_never_misses_a_mutating_call():
    """Wherever the text says "no write", parsing the trace finds no mutating call; and
    it does say so for plain read-only traces (the fast path is taken)."""
    said_no = 0
    for trace in _traces():
        if not trace_may_write(trace):
            said_no += 1
            assert not any(call_mutates(c.name, c.mutates) for c in trace_calls(trace)), trace
    assert said_no > 50
    for trace in FOOLING_TRACES:
        if any(call_mutates(c.name, c.mutates) for c in trace_calls(trace)):
            assert trace_may_write(trace), trace


ODD_CALL_COLUMNS = [
    None, "", "  ", "null", "[]", '"[]"', "not json", "\ufeff[]", '{"name": "cancel_x"}',
    '[{"name": 18446744073709551616, "arguments": {}}]',
    '[{"name": -9223372036854775809, "arguments": {}}]',
    '[{"name": 7, "arguments": {}}]', '[{"name": 1e16, "arguments": {}}]',
    '[{"name": 1e400, "arguments": {}}]',
    '[{"name": "get_x", "mutates": 18446744073709551616, "arguments": {}}]',
    '[{"name": "get_x", "mutates": 1, "arguments": {"a": 1}}]',
    '[{"name": "cancel_x", "mutates": 0, "arguments": {}}]',
    '[{"name": "get_x", "mutates": "yes", "arguments": {}}]',
    '[{"name": "x", "arguments": {"a": NaN}}]', '[{"name": "x", "arguments": {"a": "\\ud800"}}]',
    '[{"name": "\\ud83d\\ude00_x", "arguments": {}}]', '[{"name": "ünï_get", "arguments": {}}]',
    '[{"name": "get_x", "name": "cancel_x", "arguments": {"b": 1, "a": 2, "b": 3}}]',
    '[{"name": "x", "arguments": {"\\u0061": 1, "a": 2}}]',
    '[{"name": "", "arguments": {}}]', '[{"name": null, "arguments": {}}]', '[{"arguments": {}}]',
    '[{"name": "x", "arguments": "{\\"k\\": 1}"}]', '[{"name": "x", "arguments": "not json"}]',
    '[{"name": "x", "arguments": [1]}]', '[{"name": "x"}]', '[{"name": "x", "arguments": null}]',
    '[1, {"name": "x", "arguments": {}}]', '["x"]', '[[{"name": "x", "arguments": {}}]]',
    '[{"name": "x", "arguments": {}}] trailing', '[{"name": "x", "arguments": {}},]',
    '[{"name": "x\x01", "arguments": {}}]',
    '[{"name": "refund", "mutates": false, "arguments": {}}]',
    '[{"name": "get_x", "mutates": true, "arguments": {}}]',
    '[{"name": "x", "arguments": {"a": ' + "[" * 2000 + "]" * 2000 + '}}]',
    '[{"name": "x\ud800", "arguments": {"k\udfff": 1}}]',  # raw lone surrogates
]


def _call_columns() -> list[str | None]:
    rng = random.Random(9)
    out = [t.tool_calls for t in golden_corpus.corpus(seed=3, n=600)] + ODD_CALL_COLUMNS
    for _ in range(300):
        calls = [{"name": rng.choice(golden_corpus.NAMES),
                  "arguments": {rng.choice(["order_id", "user_id", "zip"]): rng.randint(1, 9)
                                for _ in range(rng.randint(0, 2))},
                  "mutates": rng.choice([None, True, False])} for _ in range(rng.randint(0, 5))]
        out.append(json.dumps(calls, ensure_ascii=rng.random() < 0.5))
    return out


def test_column_calls_are_the_calls_of_the_json_loads_value(monkeypatch):
    """``column_calls`` (orjson's value where every item has the usual shape) gives the
    calls of json.loads' value of the column (none for a text that is not JSON); and
    plain columns do take the fast path (the exact parse is not called for them)."""
    from capevolve.diagnose import narrated

    columns = _call_columns()
    expected = []
    for text in columns:
        try:
            value = json.loads(text) if text else None
        except (ValueError, RecursionError):
            value = None
        expected.append(narrated.calls_of(value))
    exact = []

    def counted(text):
        exact.append(text)
        return narrated.load_or_none(text)

    monkeypatch.setattr(narrated, "_load", counted)
    for text, calls in zip(columns, expected, strict=True):
        assert narrated.column_calls(text) == calls, text
    assert len(columns) - len(exact) > 300


def test_shared_keys_equal_the_keys_of_each_failure():
    """KeyCache gives key_of(raw_tokens(text, ids), ids), also where an identifier names
    a word or a quoted word of the text (then the text is keyed on its own)."""
    cache = KeyCache()
    texts = [t.feedback for t in golden_corpus.corpus() if t.feedback] + [
        "the 'refund' was wrong; called 'Refund' and `cancel`", "update fee's total 'fee'"]
    id_sets = [frozenset(), frozenset({"get_order", "order_id"}), frozenset({"refund"}),
               frozenset({"fee", "cancel"}), frozenset({"customer", "the"})]
    for text in texts:
        for ids in id_sets:
            assert cache.key(text, ids) == key_of(raw_tokens(text, ids), ids)


def _doc(reward: float) -> dict:
    return {"format_version": 1, "split": "val", "tag": "seed", "eval_id": "e", "mode": "x",
            "reflective_dataset": [{"reward": reward, "Feedback": "ü \u2028 \x01",
                                    "claimed_verbs": ["a"], "task_mean": reward}],
            "clusters": [{"signature": "s", "tasks": ["t"], "score_lost": 0.5}],
            "kept_good": [], "flaky": [], "always_failing": [], "consistently_partial": [],
            "unscored": [], "failing_total": 1, "failing_tasks": 1, "errored_trials": 0,
            "sanity": [], "history": {"tried": []}, "gold_check": {"available": False}}


@pytest.mark.parametrize("reward", [0.5, 1e-300, 2.5e-5, 1e17, math.nan, math.inf])
def test_document_bytes_are_the_validated_records_json(reward):
    """The written bytes equal the whole record's canonical JSON form, a NaN reward
    included (both write null where the plain encoder would refuse)."""
    doc = _doc(reward)
    assert document_bytes(doc) == canonical_json(diagnosis_record(doc).to_json())


def test_document_bytes_refuse_what_the_record_refuses():
    """An envelope the record rejects (a negative count) is still refused."""
    with pytest.raises(ValueError):
        document_bytes({**_doc(0.5), "failing_total": -1})


def _plain_canonical(value) -> bytes:
    """The canonical form as json.dumps spells it (the definition orjson must meet)."""
    return (json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False,
                       separators=(",", ":")) + "\n").encode("utf-8", "backslashreplace")


def _text(rng: random.Random) -> str:
    pool = [chr(c) for c in range(0, 0x250)] + ["\u2028", "\u2029", "\ufeff", "\U0001f600",
                                                 '"', "\\", "/", "\x7f", "\u00e9", "\uffff"]
    return "".join(rng.choice(pool) for _ in range(rng.randint(0, 12)))


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return _text(rng)
    if kind == 1:
        return rng.choice([0, -1, 7, 2**53 + 1, 2**63 - 1, -(2**63), True, False, None])
    if kind == 2:  # floats where the two writers agree: 0 and 1e-4 <= |x| < 1e16
        x = 10 ** rng.uniform(-4, 15.99) * rng.choice([1, -1])
        return rng.choice([x, round(x, 6), round(x, rng.randint(0, 16)), 0.0, -0.0, 0.1])
    if kind in (3, 4):
        return rng.choice(["", "a", "Z", "é", "zz"])
    if kind in (5, 6):
        return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randint(0, 5))}
    return [_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def test_canonical_json_is_json_dumps_compact_sorted_form():
    """orjson's bytes are json.dumps' (sorted keys, no ASCII escaping, compact separators)
    for every string (control characters, quotes, backslashes, U+2028, astral), integer
    (to 64 bits) and float in the range where both spell it alike (0, 1e-4 to 1e16)."""
    rng = random.Random(4)
    for _ in range(3000):
        value = _value(rng)
        assert canonical_json(value) == _plain_canonical(value), value
    for code in range(0x800):
        assert canonical_json(chr(code)) == _plain_canonical(chr(code))


@pytest.mark.parametrize("value", [{"a": "\ud800 x", "b": 2.5e-5}, [2**64, 1e-7],
                                   {"deep": json.loads("[" * 300 + "]" * 300)}])
def test_what_orjson_refuses_is_written_by_json_in_the_same_form(value):
    """A lone surrogate, an integer beyond 64 bits, nesting past orjson's limit: written
    by json.dumps in the canonical form (a surrogate as its JSON escape), reading back
    as the same value."""
    data = canonical_json(value)
    assert data == _plain_canonical(value)
    assert json.loads(data) == value


@pytest.mark.parametrize("reward", [None, 0.0, 0.1, 1e-17, 1, math.nan])
def test_trajectory_text_equals_json_dumps_of_the_plain_fields(reward):
    """The spelled-out plain fields are json.dumps' (sorted keys, no ASCII escaping);
    a value it refuses (NaN) is refused the same way."""
    trial = Trial("e\u2028", 'a"b\\', 3, reward, "f\x00ü\n", None, None, None, None, None,
                  None, None, None)
    plain = {"eval_id": trial.eval_id, "feedback": trial.feedback, "output": trial.output,
             "reward": reward, "task_id": trial.task_id, "trial": trial.trial}
    try:
        expected = json.dumps(plain, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except ValueError:
        with pytest.raises(ValueError):
            trajectories.document(trial)
        return
    assert trajectories.document(trial).startswith(expected[:-1] + ', "inputs": null')


def test_a_lone_surrogate_is_written_as_its_json_escape(tmp_path):
    """Text that is not Unicode (a lone surrogate, as json.loads gives for "\\ud800") is
    written as its JSON escape: the document and the trajectory file read back as the same
    strings, instead of the write failing with UnicodeEncodeError."""
    from capevolve.diagnose.diagnosis import write_document

    doc = _doc(0.5)
    doc["reflective_dataset"][0]["Feedback"] = "bad \ud800 text ü"
    path = tmp_path / "diagnosis.json"
    write_document(path, doc)
    assert "\\ud800" in path.read_text(encoding="utf-8")
    assert json.loads(path.read_bytes())["reflective_dataset"][0]["Feedback"] == \
        "bad \ud800 text ü"
    trial = Trial("e", "t", 0, 0.0, "f\udfff", None, "out", None, None, None, None,
                  None, None)
    folder = tmp_path / "trajectories"
    trajectories.write_all(folder, [trial])
    (written,) = folder.iterdir()
    back = json.loads(written.read_bytes())
    assert (back["feedback"], back["output"]) == ("f\udfff", "out")


def test_the_omission_precheck_never_hides_a_regex_match():
    """``_reports_omission`` (a substring pre-check, then the regex) equals the regex alone
    over texts built from the regex's own words, in odd cases and with Unicode case pairs
    (Kelvin sign, long s, dotted I) that ``lower()`` does not fold as the regex does."""
    from capevolve.diagnose import classify

    words = ["did not", "DIDN'T", "never", "forgot to", "tell", "Inform", "report",
             "notifying", "reply", "SUMMARY", "message", "omitted", "left out", "lacks",
             "the", "customer", "refund", ".", "x" * 45, "\u212aell", "me\u017f\u017fage",
             "\u0130nform", "n\u0130ver", "did", "not", "\t", "\n"]
    rng = random.Random(7)
    for _ in range(4000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
        expected = classify._COMM_FEEDBACK.search(text) is not None
        assert classify._reports_omission.__wrapped__(text) is expected, text



@pytest.mark.parametrize("redact", [False, True])
def test_the_analyser_gives_what_analyse_gives(redact):
    """The per-distinct-value analyser (facts of a calls list once, claims once per calls
    and message) gives the plain ``analyse``'s Failure on every awkward corpus row, each row
    analysed twice (the second time from the caches), also with the gold guard redacting."""
    from capevolve.diagnose.classify import is_failure
    from capevolve.diagnose.gold import GoldGuard
    from capevolve.diagnose.narrated import rollout_calls
    from capevolve.diagnose.reflective import Analyser, analyse

    guard = GoldGuard(golden_corpus.targets())
    analyser = Analyser(guard, redact)
    rows = [t for t in golden_corpus.corpus(seed=11, n=900) if is_failure(t)]
    assert len(rows) > 300
    for trial in rows + rows:
        calls = rollout_calls(trial.tool_calls, trial.trace)
        assert analyser.failure(trial, calls) == analyse(trial, calls, guard, redact), trial
    flagged = [analyse(t, rollout_calls(t.tool_calls, t.trace), guard, redact) for t in rows]
    assert any(f.narrated for f in flagged) and any(f.claimed for f in flagged)


def test_texts_that_differ_in_digits_share_a_key_only_where_it_is_exact():
    """Digits are evened out for the shared key, yet every text gets exactly its own
    key_of: also where a digit sits in an underscore identifier (kept verbatim), in a
    quoted identifier, in an identifier of the rollout, or is not an ASCII digit."""
    rng = random.Random(3)
    shapes = ["expected {n} got {m}", "order_{n} not refunded, expected {m}",
              'called "get_order{n}" for order {m}', "wrong zip {n}{m}0 for 'addr{n}'",
              "fee {n}.{m} not told; `cancel_{n}`", "refund ٣{n} issued", "seat {n}A-{m}b",
              "zone {n} and o{m}_x", "{n} {m} 0 00", "field v{n} wrong"]
    texts = [shape.format(n=rng.randint(0, 99), m=rng.randint(0, 9999))
             for shape in shapes for _ in range(20)]
    texts += ["field v1 wrong", "field v2 wrong", "wrong zip 5 for 'addr7'", "seat 1A-2b"]
    id_sets = [frozenset(), frozenset({"get_order", "order_id"}), frozenset({"addr7"}),
               frozenset({"v1", "zone"}), frozenset({"seat"}), frozenset({"o1_x"})]
    cache = KeyCache()
    for text in texts + texts:
        for ids in id_sets:
            assert cache.key(text, ids) == key_of(raw_tokens(text, ids), ids), (text, ids)
    assert len(cache._templates) < len(set(texts)) / 2  # the digits were evened out


def _plain_units(feedback, parts, labels, passing):
    """The cause units as the string-based code before the span rewrite cut them."""
    from capevolve.diagnose.signature import raw_tokens as tokens
    from capevolve.diagnose.units import (
        _LABEL,
        _SEGMENTS,
        _SENTENCE,
        TOLERANCE,
        Unit,
        normalise,
        score_part_of,
    )

    out = []
    for segment in [s for s in _SEGMENTS.split(feedback) if s.strip()]:
        match = _LABEL.match(segment)
        label = match.group(1).strip().lower() if match else None
        known = label is not None and (score_part_of(label, parts) is not None if parts
                                       else label in labels)
        if known and match:
            out.append((label, segment[match.end():].strip()))
        elif out:
            out[-1] = (out[-1][0], f"{out[-1][1]} {segment.strip()}")
        else:
            out.append((None, segment.strip()))
    units = []
    for label, text in out:
        part = score_part_of(label, parts)
        if part is not None and parts[part] >= 1 - TOLERANCE:
            continue
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            if sentence and tokens(sentence) and normalise(sentence) not in passing:
                units.append(Unit(label, sentence))
    if not units and feedback.strip():
        units.append(Unit(None, feedback.strip()))
    return units


def test_units_cut_through_the_digit_cache_are_the_plain_units():
    """Feedbacks that differ in their digits share one split (UnitCache), yet every one
    gets exactly the plain string-based units: also with digits in part labels (db2:
    names score part db2, db3: does not), sentence ends after numbers, blank parts,
    separators and odd whitespace."""
    from capevolve.diagnose.units import UnitCache, normalise, units_of

    rng = random.Random(9)
    pieces = ["db{n}: wrong total {m}.", "messages: never told {n} fee. ", "; db: x{n}_y set",
              "\n\nmessages:  ", "refund {n}.{m} failed! Then {m}? ok", "  \u2003step {n}:  ",
              "the end state matches the reference {n}.", "v{n}: {m}", "\n", "x: y{n}; z: w"]
    feedbacks = ["".join(rng.choice(pieces).format(n=rng.randint(0, 12), m=rng.randint(0, 999))
                         for _ in range(rng.randint(1, 4))) for _ in range(600)]
    labels = frozenset({"db", "messages", "db2", "v1", "x"})
    passing = frozenset({normalise("the end state matches the reference 1.")})
    for parts in ({}, {"db2": 0.0, "messages": 1.0}, {"db": 1.0, "v3": 0.0}):
        cache = UnitCache(parts, labels, passing)
        for feedback in feedbacks + feedbacks:
            expected = _plain_units(feedback, parts, labels, passing)
            assert cache.units(feedback) == expected, feedback
            assert units_of(feedback, parts, labels, passing) == expected
        assert len(cache._known) < len(set(feedbacks))


def test_the_omission_regex_is_blind_to_which_digit_it_reads():
    """failure_kind reads the omission regex on the feedback with its digits evened out:
    for texts thick with digits next to, inside and between its words, the match (and
    its span) is the same on both texts."""
    from capevolve.diagnose import classify
    from capevolve.diagnose.signature import even_digits

    words = ["did not", "never", "tell", "told", "reply", "omitted", "lacks", "message",
             "7", "2reply", "tell9", "a1b", "x" * 33, "12.5", "٣", "\n", "the", "4 5 6"]
    rng = random.Random(2)
    for _ in range(4000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 9)))
        text = "".join(str(rng.randint(1, 9)) if ch == "7" else ch for ch in text)
        a, b = classify._COMM_FEEDBACK.search(text), classify._COMM_FEEDBACK.search(
            even_digits(text))
        assert (a and a.span()) == (b and b.span()), text


def test_a_trace_the_facts_do_not_need_changes_none_of_them():
    """``Analyser.needs_trace`` is the exact rule for leaving a trace unread: wherever it
    says a failing row's facts do not read the trace, the Failure is the same with the
    stored trace, with none, and with a trace that holds a mutating call and a final
    message of its own; and it does say so for plain rows (the fast path is taken)."""
    from capevolve.diagnose.classify import is_failure
    from capevolve.diagnose.gold import GoldGuard
    from capevolve.diagnose.narrated import column_calls, rollout_calls
    from capevolve.diagnose.reflective import Analyser

    other = json.dumps([{"role": "assistant", "content": "Your order has been cancelled.",
                         "tool_calls": [{"function": {"name": "cancel_order"}}]}])
    rows = [t for t in golden_corpus.corpus(seed=11, n=900) if is_failure(t)]
    analyser = Analyser(GoldGuard(golden_corpus.targets()), False)
    unneeded = 0
    for trial in rows + rows:
        expected = analyser.failure(trial, rollout_calls(trial.tool_calls, trial.trace))
        calls = column_calls(trial.tool_calls)
        if analyser.needs_trace(trial, calls):
            continue
        unneeded += 1
        for trace in (None, other, "not json"):
            got = analyser.failure(trial._replace(trace=trace), calls)
            assert got[1:] == expected[1:], trial  # every fact (the row itself aside)
    assert 100 < unneeded < 2 * len(rows)


def test_even_digits_and_the_cached_omission_test_equal_the_plain_rules():
    """``even_digits`` (bytes for an ASCII text) is ``str.translate`` of the ASCII digits
    for any text (non-ASCII digits, lone surrogates, astral characters kept); and
    ``is_communication`` (the omission regex once per digit-evened text) is the label
    test or the regex itself."""
    from capevolve.diagnose import classify
    from capevolve.diagnose.signature import even_digits

    table = str.maketrans("123456789", "000000000")
    rng = random.Random(8)
    pool = list("0123456789 abc.:\n") + ["٣", "\ud800", "\U0001f600", "é", "never told ",
                                        "the reply omitted ", "did not tell "]
    labels = [None, "", "messages", "db", "Inform2"]
    for _ in range(3000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 14)))
        assert even_digits(text) == text.translate(table), text
        label = rng.choice(labels)
        plain = bool((label and classify._COMM_PART.search(label.lower()))
                     or classify._COMM_FEEDBACK.search(text))
        assert classify.is_communication(label, text) is plain, (label, text)


def test_labels_read_through_the_digit_cache_are_each_feedbacks_own():
    """common_labels reads labels once per digit-evened text, yet counts exactly each
    feedback's own labels: also labels holding digits (db2 / db3 stay apart, v0 and v7
    too) and digits next to the separators."""
    from collections import Counter

    from capevolve.diagnose.units import _LABEL, _segments, common_labels

    def plain(feedbacks):
        seen: Counter[str] = Counter()
        for feedback, n in Counter(feedbacks).items():
            for label in {m.group(1).strip().lower() for a, b in _segments(feedback)
                          if (m := _LABEL.match(feedback[a:b]))}:
                seen[label] += n
        return frozenset(label for label, n in seen.items() if n >= 2)

    rng = random.Random(12)
    pieces = ["db{n}: wrong total {m}.", "messages: never told {n} fee. ", "; db: x{n}_y set",
              "\n\nmessages:  ", "v{n}: {m}", "\n", "x: y{n}; z{m}: w", "{n}a: b", "step {n}: ok"]
    for _ in range(200):
        feedbacks = ["".join(rng.choice(pieces).format(n=rng.randint(0, 3), m=rng.randint(0, 9))
                             for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(2, 30))]
        assert common_labels(feedbacks) == plain(feedbacks), feedbacks


def _judged(doc) -> bool:
    """Whether the earlier file's clusters hold a judgement carry_judgements would keep."""
    clusters = doc.get("clusters", []) if isinstance(doc, dict) else []
    return any(isinstance(c, dict) and (c.get("tag") or c.get("blast_radius"))
               for c in (clusters if isinstance(clusters, list) else []))


def _earlier(rng: random.Random) -> dict:
    values = [None, None, None, "BEHAVIORAL", "", [], ["t1"], 0, {"a": None}, "tag", "null"]
    clusters = []
    for _ in range(rng.randint(0, 4)):
        c = {"signature": rng.choice(["a", 'say "tag": x', "tag", "b\\c"]), "size": 1}
        for name in rng.sample(["tag", "blast_radius", "note"], rng.randint(0, 3)):
            c[name] = rng.choice(values)
        clusters.append(c)
    doc = {"clusters": clusters, "reflective_dataset": [
        {"Feedback": rng.choice(['"tag": "X"', "tag", "t\u0061g", "x"]),
         rng.choice(["tag", "kind", "blast_radius"]): rng.choice(values)}]}
    if rng.random() < 0.9:
        doc["tag"] = rng.choice(["seed", None, "", "c\\d", 'a"b'])
    if rng.random() < 0.9:
        doc["unscored"] = rng.choice([[], ["t1", "t2"], [1], ['q"'], None])
    return doc


def test_the_judgement_precheck_never_hides_a_judgement():
    """Wherever the bytes say "no judgement", the parsed file's clusters hold none: files
    written in every JSON form (compact, spaced, indented, keys in any order, escaped
    key names, a judgement's name quoted inside a string, the document's own tag null,
    missing or last); and for a file as diagnose writes it (document_bytes) the parse is
    skipped."""
    from capevolve.diagnose.diagnosis import (
        canonical_json,
        document_bytes,
        may_hold_judgements,
    )

    rng = random.Random(6)
    skipped = 0
    for _ in range(3000):
        doc = _earlier(rng)
        if rng.random() < 0.3:
            doc = dict(reversed(list(doc.items())))
        form = rng.randrange(4)
        data = (canonical_json(doc) if form == 0 else json.dumps(
            doc, indent=(2 if form == 2 else None), ensure_ascii=form == 3,
            sort_keys=rng.random() < 0.7).encode())
        if rng.random() < 0.1:
            data = data.replace(b'"tag"', b'"t\\u0061g"')
        if not may_hold_judgements(data):
            skipped += 1
            assert not _judged(json.loads(data)), data
    assert skipped > 150
    written = document_bytes(_doc(0.5) | {"clusters": [
        {"signature": "s", "tag": None, "blast_radius": None}], "unscored": ["t9"],
        "reflective_dataset": [{"Feedback": "ü \u2028 the tag was wrong", "cluster": "s"}]})
    assert not may_hold_judgements(written)
    assert may_hold_judgements(written.replace(b'"tag":null', b'"tag":"KNOWLEDGE"'))
