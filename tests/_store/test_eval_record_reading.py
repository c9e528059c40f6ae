"""Reading evaluation records: what capevolve writes is read; anything else is one RunDirError
naming the file."""

from __future__ import annotations

import json

import pytest

from capevolve._store.evals import read_eval_file
from capevolve.errors import RunDirError

RECORD = {"format_version": 1, "eval_id": "val__seed__k1", "candidate_id": "seed",
          "split": "val", "n_trials": 1, "candidate_hash": "h", "status": "running",
          "started_at": "2026-12-01T00:00:00+00:00"}


def _write(tmp_path, data, text=None):
    path = tmp_path / "val__seed__k1.json"
    path.write_text(text if text is not None else json.dumps(data))
    return path


def test_a_record_capevolve_writes_is_read(tmp_path):
    path = _write(tmp_path, RECORD)
    assert read_eval_file(path).eval_id == "val__seed__k1"


@pytest.mark.parametrize("change, message", [
    ({"format_version": True}, "format_version True"),
    ({"format_version": 2}, "format_version 2"),
    ({"n_trials": "1x"}, "n_trials"),
    ({"unknown": 1}, "unknown"),
    ({"eval_id": "val__other__k1"}, "holds evaluation"),
])
def test_what_the_checked_path_refuses_stays_refused(tmp_path, change, message):
    """A boolean or another format version, a bad field, an unknown key and a record
    under another evaluation's name are each one RunDirError naming the file."""
    path = _write(tmp_path, {**RECORD, **change})
    with pytest.raises(RunDirError, match=message) as info:
        read_eval_file(path)
    assert str(path) in str(info.value)


def test_a_repeated_version_key_or_bad_json_is_refused(tmp_path):
    text = json.dumps(RECORD)[:-1] + ', "format_version": true}'
    with pytest.raises(RunDirError, match="format_version"):
        read_eval_file(_write(tmp_path, None, text))
    with pytest.raises(RunDirError, match="unreadable"):
        read_eval_file(_write(tmp_path, None, "{not json"))
