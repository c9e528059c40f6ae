"""The real-model fixture says why it cannot run instead of failing or hanging."""

from __future__ import annotations

import pytest
from fixtures.llama_server import Unavailable, gguf_path, start


def test_a_missing_gguf_is_a_reason_to_skip(tmp_path, monkeypatch):
    """Without the GGUF, start() raises Unavailable naming the path and `make llm-model`
    (the fixture turns that into a skip); no server process is left behind."""
    monkeypatch.setenv("CAPEVOLVE_GGUF", str(tmp_path / "absent.gguf"))
    assert gguf_path() == tmp_path / "absent.gguf"
    with pytest.raises(Unavailable, match=r"(absent\.gguf|xllamacpp).*make llm-model"):
        with start():
            pass
