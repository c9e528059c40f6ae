"""The tier guard refuses dishonest marks: Ray used or started by a test not marked ray."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

CONFTEST = textwrap.dedent(f"""
    import sys, types
    import pytest
    sys.path.insert(0, {str(TESTS)!r})
    from tier_guard import (pytest_collection_modifyitems, pytest_runtest_logreport,
                            pytest_terminal_summary, ray_only_in_ray_tests)

    @pytest.fixture(scope="session")
    def ray_session():
        yield None

    @pytest.fixture
    def fake_ray_start():
        \"\"\"A stand-in ray module whose init() flips is_initialized(), as ray.init does
        (left in sys.modules, as a real Ray stays up after the test).\"\"\"
        state = {{"up": False}}
        fake = types.SimpleNamespace(is_initialized=lambda: state["up"],
                                     init=lambda: state.update(up=True))
        sys.modules["ray"] = fake
        return fake
""")


def _pytest(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(body), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_an_unmarked_test_using_the_session_ray_is_a_collection_error(tmp_path):
    """Requesting ray_session without @pytest.mark.ray stops the run before any test."""
    out = _pytest(tmp_path, """
        def test_sneaky(ray_session):
            pass
    """)
    assert out.returncode == 4, out.stdout + out.stderr
    assert "not marked @pytest.mark.ray" in out.stdout + out.stderr
    assert "test_sneaky" in out.stdout + out.stderr


@pytest.mark.slow
def test_an_unmarked_test_that_starts_ray_fails_and_a_marked_one_passes(tmp_path):
    """Starting Ray in an unmarked test errors it (at teardown); the same code marked ray
    passes."""
    out = _pytest(tmp_path, """
        import pytest

        def test_starts_ray(fake_ray_start):
            fake_ray_start.init()

        @pytest.mark.ray
        def test_marked(fake_ray_start):
            fake_ray_start.init()
    """)
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert "test_starts_ray started Ray but is not marked" in text
    summary = text.split("short test summary")[-1]
    assert "ERROR test_sample.py::test_starts_ray" in summary  # fails at teardown
    assert "test_marked" not in summary and "1 error" in summary
