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
