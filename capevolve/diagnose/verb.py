"""``capevolve.diagnose`` is both the public subpackage and the public verb.

The root API exports ``diagnose`` (``capevolve.diagnose(run, candidate_id)``) and
``capevolve.diagnose`` is also this subpackage (``from capevolve.diagnose import
ClusterMode``). A package and a function cannot share one attribute of ``capevolve``, so the
package is made callable: its module object is a :class:`DiagnosePackage`, whose call is
the verb. Everything else about the package is an ordinary module.
"""

from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Any

from capevolve._store.rundir import RunDir
from capevolve.diagnose.diagnosis import DiagnoseOptions, diagnose
from capevolve.diagnose.kinds import ClusterMode
from capevolve.errors import ConfigError
from capevolve.kinds import Split


class DiagnosePackage(types.ModuleType):
    """The ``capevolve.diagnose`` package; calling it runs the ``diagnose`` verb."""

    def __call__(self, run: RunDir | str | os.PathLike[str], candidate_id: str,
                 split: Split | str = Split.VAL, *,
                 cluster: ClusterMode | str = ClusterMode.ROOT_CAUSE, redact_gold: bool = False,
                 project: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Turn ``candidate_id``'s stored rollouts on ``split`` (train or val; test is
        refused) into a reflective dataset and root-cause clusters; writes
        ``diagnoses/<split>__<id>.json`` (``.first-words.json`` in that mode) in the run
        and returns it. ``run`` is a RunDir or
        a run directory's path; ``project`` overrides the project whose adapter gives
        targets and trajectories; ``redact_gold`` replaces target values quoted in feedback.
        """
        if str(split) not in {s.value for s in Split}:
            raise ConfigError(f"split {split!r}: expected train or val")
        if str(cluster) not in {m.value for m in ClusterMode}:
            valid = ", ".join(m.value for m in ClusterMode)
            raise ConfigError(f"cluster {cluster!r}: expected one of {valid}")
        opened = run if isinstance(run, RunDir) else RunDir.open(Path(run))
        options = DiagnoseOptions(split=str(split), tag=candidate_id,
                                  mode=ClusterMode(cluster), redact_gold=redact_gold,
                                  project=None if project is None else Path(project))
        return diagnose(opened, options)
