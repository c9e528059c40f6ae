"""The deterministic evaluators: each metric's edges, and bad expected values as errors."""

import pytest

from capevolve.config import EvaluatorConfig
from capevolve.datasets.metrics import DETERMINISTIC, normalize
from capevolve.kinds import EvaluatorKind


def _score(kind: str, output, expected, **settings) -> float:
    ev = EvaluatorConfig(name="m", kind=kind, **settings)
    return DETERMINISTIC[EvaluatorKind(kind)](ev, output, expected)[0]


def test_every_deterministic_kind_has_a_metric_and_only_those():
    assert set(DETERMINISTIC) == {k for k in EvaluatorKind if k.deterministic} - {
        EvaluatorKind.PYTHON}
    assert not EvaluatorKind.JUDGE.deterministic


def test_exact_and_normalised_exact():
    assert _score("exact", " Paris ", "Paris") == 1.0
    assert _score("exact", "paris", "Paris") == 0.0
    assert _score("exact", 3, "3") == 0.0 and _score("exact", [1, 2], [1, 2]) == 1.0
    assert _score("normalized_exact", "The  PARIS!", "paris") == 1.0
    assert _score("normalized_exact", "Lyon", "Paris") == 0.0
    assert normalize("An Apple, the pear.") == "apple pear"


def test_token_f1_set_overlap():
    assert _score("token_f1", "new delhi india", "New Delhi") == pytest.approx(0.8)
    assert _score("token_f1", "", "x") == 0.0 and _score("token_f1", "", "") == 1.0
    assert _score("set_overlap", ["x", "Y", "z"], "x, y, w") == pytest.approx(2 / 4)
    assert _score("set_overlap", "x", ["y"]) == 0.0


def test_regex_and_numeric_and_json_field():
    assert _score("regex", "order 1234 shipped", None, pattern=r"\b\d{4}\b") == 1.0
    assert _score("regex", "order shipped", r"\d+") == 0.0
    assert _score("numeric", "3.14", 3.14159, tolerance=0.01) == 1.0
    assert _score("numeric", "3.2", 3.14159, tolerance=0.01) == 0.0
    assert _score("numeric", "pi", 3.1) == 0.0  # a wrong output, not missing data
    assert _score("numeric", True, 1) == 0.0
    assert _score("json_field", '{"a": {"b": 2}}', {"a": {"b": 2}}, field="a.b") == 1.0
    assert _score("json_field", {"a": [5, 6]}, 6, field="a.1") == 1.0
    assert _score("json_field", "not json", 1, field="a") == 0.0
    assert _score("json_field", '{"c": 1}', 1, field="a") == 0.0


def test_an_unusable_expected_value_is_an_error_not_a_score():
    with pytest.raises(ValueError, match="expected value is not a number"):
        _score("numeric", "1", "one")
    with pytest.raises(ValueError, match="no field 'a.b'"):
        _score("json_field", "{}", {"a": {}}, field="a.b")


def test_settings_each_kind_needs_are_config_errors():
    from pydantic import ValidationError
    for kind, match in (("python", "needs function"), ("json_field", "needs field"),
                        ("judge", "needs rubric")):
        with pytest.raises(ValidationError, match=match):
            EvaluatorConfig(name="m", kind=kind)
    with pytest.raises(ValidationError, match="both base_url and model, or neither"):
        EvaluatorConfig(name="m", kind="judge", rubric="r", model="x")
    with pytest.raises(ValidationError, match="pattern"):
        EvaluatorConfig(name="m", kind="regex", pattern="(")
