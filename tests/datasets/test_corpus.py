"""Reading a JSONL dataset: ids from a field or content, every bad line named."""

import json

import pytest

from capevolve.config import DatasetConfig
from capevolve.datasets.corpus import content_id, load_corpus
from capevolve.errors import ConfigError


def _write(tmp_path, lines) -> None:
    (tmp_path / "d.jsonl").write_text("".join(
        (line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))


def test_ids_from_the_field_and_from_content_are_recorded(tmp_path):
    _write(tmp_path, [{"id": 7, "input": "a", "expected": "b", "cluster": "c1"}, "",
                      {"id": "x", "input": "c"}])
    tasks = load_corpus(tmp_path, DatasetConfig(path="d.jsonl", id="id"))
    assert [t.id for t in tasks] == ["7", "x"]
    assert tasks[0].target == "b" and tasks[1].target is None
    assert tasks[0].metadata == {"id_source": "field", "line": 1, "cluster": "c1"}
    assert "expected" not in json.dumps(tasks[0].metadata)  # the gold stays out of metadata
    again = load_corpus(tmp_path, DatasetConfig(path="d.jsonl"))
    assert [t.id for t in again] == [content_id({"id": 7, "input": "a", "expected": "b",
                                                 "cluster": "c1"}),
                                     content_id({"input": "c", "id": "x"})]
    assert all(t.metadata["id_source"] == "content" for t in again)
    assert again[0].id == load_corpus(tmp_path, DatasetConfig(path="d.jsonl"))[0].id


@pytest.mark.parametrize(("lines", "match"), [
    (["{not json"], r"d.jsonl:1: not JSON"),
    ([[1, 2]], r"d.jsonl:1: expected a JSON object, got list"),
    ([{"input": "a"}, {"input": "a"}], r"d.jsonl:2: duplicate id .* \(first on line 1\)"),
    ([{"id": "", "input": "a"}], r"d.jsonl:1: id field 'id' must be"),
    ([{"id": True, "input": "a"}], r"d.jsonl:1: id field 'id' must be"),
    ([{"id": "q", "question": "a"}], r"d.jsonl:1: no input field 'input'"),
    ([""], r"has no datapoints"),
])
def test_a_malformed_dataset_is_one_line_naming_file_and_line(tmp_path, lines, match):
    _write(tmp_path, lines)
    idf = "id" if any(isinstance(x, dict) and "id" in x for x in lines) else None
    with pytest.raises(ConfigError, match=match):
        load_corpus(tmp_path, DatasetConfig(path="d.jsonl", id=idf))
