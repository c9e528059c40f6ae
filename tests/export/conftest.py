"""The export tests reuse the viewer's toy run (three candidates on val, diagnosed)."""

from view.conftest import view_run  # noqa: F401 - the shared session fixture
