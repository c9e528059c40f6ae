"""capevolve.yaml validation."""

import pytest

from capevolve.config import load_config, parse_config
from capevolve.errors import ConfigError
from capevolve.kinds import EngineKind, GateMode

BASE = {"name": "x", "adapter": "adapter.py:A", "capability_path": "seed"}


def test_defaults_fill_every_section():
    """A minimal config gets the documented defaults."""
    config = parse_config(BASE, "c.yaml")
    assert config.num_trials == 3
    assert config.gate.mode == GateMode.PAIRED and config.gate.min_coverage == 0.6
    assert config.engine.kind == EngineKind.RAY and config.engine.concurrency == 64


@pytest.mark.parametrize("data, fragment", [
    ({**BASE, "gate": {"k_sE": 1}}, "gate.k_sE"),
    ({**BASE, "engine": {"kind": "spark"}}, "engine.kind"),
    ({**BASE, "num_trials": 0}, "num_trials"),
    ({**BASE, "num_trials": "three"}, "num_trials"),
    ({**BASE, "splits": {"train": 0.5, "val": 0.5, "test": 0.5}}, "splits"),
    ({**BASE, "surprise": 1}, "surprise"),
    ({"name": "x"}, "adapter"),
])
def test_invalid_config_names_the_key_path(data, fragment):
    """Every invalid key is reported with its dotted path and the file name."""
    with pytest.raises(ConfigError) as info:
        parse_config(data, "proj/capevolve.yaml")
    message = str(info.value)
    assert message.startswith("proj/capevolve.yaml:") and fragment in message
    assert "\n" not in message


def test_malformed_yaml_and_missing_file(tmp_path):
    """Malformed YAML names the line; a missing file says so."""
    with pytest.raises(ConfigError, match="no capevolve.yaml"):
        load_config(tmp_path)
    (tmp_path / "capevolve.yaml").write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="malformed YAML at line"):
        load_config(tmp_path)
    (tmp_path / "capevolve.yaml").write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(tmp_path)


@pytest.mark.parametrize("key, value", [
    ("num_trials", True), ("num_trials", "3"), ("num_trials", 2.0), ("seed", True),
    ("budget.max_metric_calls", True), ("budget.max_iterations", "20"),
    ("budget.max_usd", True), ("gate.alpha", True), ("gate.no_regression", 1),
    ("gate.no_regression", "yes"), ("engine.concurrency", True), ("engine.workers", True),
    ("engine.timeout_s", "600"), ("splits.seed", False),
])
def test_booleans_and_quoted_numbers_are_not_numbers(key, value):
    """num_trials: true was taken as 1 trial, '3' as 3: a boolean, a quoted number or a
    float where an integer is meant is refused, naming the key."""
    section, _, name = key.rpartition(".")
    data = {**BASE, section: {name: value}} if section else {**BASE, name: value}
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        parse_config(data, "c.yaml")


@pytest.mark.parametrize("text", [".inf", "-.inf", ".nan", ".NaN"])
@pytest.mark.parametrize("key", ["budget: {{max_usd: {v}}}", "gate: {{alpha: {v}}}",
                                 "engine: {{timeout_s: {v}}}", "num_trials: {v}"])
def test_non_finite_yaml_numbers_are_refused(tmp_path, key, text):
    """YAML's .inf and .nan are refused in every numeric field."""
    (tmp_path / "capevolve.yaml").write_text(
        "name: x\nadapter: a.py:A\ncapability_path: seed\n" + key.format(v=text) + "\n")
    with pytest.raises(ConfigError, match=key.split(":")[0]):
        load_config(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("body, fragment", [
    ("capabilities: " + "[" * 5000 + "]" * 5000, "nested too deeply"),
    ("stop_condition: " + "{a: " * 5000 + "1" + "}" * 5000, "nested too deeply"),
    ("num_trials: 2\nnum_trials: 3", "'num_trials' appears twice"),
    ("gate: {alpha: 0.05, alpha: 0.4}", "'alpha' appears twice"),
    ("stop_condition: '" + "x" * (1 << 20) + "'", "larger than"),
])
def test_yaml_that_is_too_deep_repeats_a_key_or_is_huge_is_one_line(tmp_path, body,
                                                                     fragment):
    """YAML nested 5,000 deep was a RecursionError traceback; a repeated key silently
    took the last value. Each is one ConfigError naming the file."""
    path = tmp_path / "capevolve.yaml"
    path.write_text("name: x\nadapter: a.py:A\ncapability_path: seed\n" + body + "\n")
    with pytest.raises(ConfigError, match=fragment) as info:
        load_config(tmp_path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_many_bad_values_are_one_line_with_a_count(tmp_path):
    """An alias bomb of wrong values lists the first five problems and counts the rest."""
    (tmp_path / "capevolve.yaml").write_text(
        "name: x\nadapter: a.py:A\ncapability_path: seed\n"
        "x: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\ncapabilities: [*a, *a, *a, *a, *a, *a, *a]\n")
    with pytest.raises(ConfigError, match=r"\(\+\d+ more\)") as info:
        load_config(tmp_path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("path", [".", "..", "../.."])
def test_a_capability_path_that_holds_the_project_is_refused(tmp_path, path):
    """capability_path: . (or an ancestor) would snapshot the scorer, the config and the
    run dirs as the seed: refused naming the field."""
    from capevolve.config import check_capability_dir

    project = tmp_path / "a" / "b"
    project.mkdir(parents=True)
    config = parse_config({**BASE, "capability_path": path}, "c.yaml")
    with pytest.raises(ConfigError, match="capability_path"):
        check_capability_dir(project, config)


def test_a_capability_path_beside_the_project_is_allowed(tmp_path):
    """../seed (a shared capability dir beside the project) is a directory of its own."""
    from capevolve.config import check_capability_dir

    (tmp_path / "seed").mkdir()
    (tmp_path / "proj").mkdir()
    config = parse_config({**BASE, "capability_path": "../seed"}, "c.yaml")
    assert check_capability_dir(tmp_path / "proj", config) == (tmp_path / "seed").resolve()
