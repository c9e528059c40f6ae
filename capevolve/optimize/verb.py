"""``capevolve.optimize`` is both the public subpackage and the public verb.

As with ``capevolve.diagnose``, a package and a function cannot share one attribute of
``capevolve``, so the package's module object is an :class:`OptimizePackage`, whose call
runs the loop. The loop's code (and the engine) load on the first call only.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any


class OptimizePackage(types.ModuleType):
    """The ``capevolve.optimize`` package; calling it runs the ``optimize`` verb."""

    def __call__(self, run: Any, *, algorithm: str | None = None,
                 proposer: str | None = None, iterations: int | None = None,
                 parallel: int = 1, focus: str | None = None, timeout_s: float = 900.0,
                 finalize: bool = False, resume: bool = False, engine: str | None = None,
                 address: str | None = None,
                 on_iteration: Callable[[Any], None] | None = None,
                 minibatch: int | None = None,
                 spend_test_ids: bool = False) -> dict[str, Any]:
        """Run an optimization loop on the run dir ``run`` (a RunDir or its path): the
        ``algorithm`` (``hill-climb`` or ``pareto``) picks parents, the ``proposer`` spec
        (``scripted:DIR``, ``command:"... {workdir} ..."``, ``llm[:options]``) edits a copy of
        each, and every child goes evaluate -> gate -> accept | reject on full val. Stops at
        the project's stop condition, a budget cap, ``iterations`` or a proposer with
        nothing left; ``parallel`` children are proposed and evaluated concurrently on one
        shared engine; ``minibatch`` is how many train tasks a pareto child is screened on
        per iteration (default 3; a subset evaluation, never gateable); ``resume``
        continues a killed loop with its recorded settings; ``finalize`` seals test once
        and writes report.md (when the best is still the seed, test is left unscored and
        the run open unless ``spend_test_ids``: ``not_finalized`` says why).
        ``on_iteration`` is called with each iteration's row (a dict, as in the result's
        ``iterations``) once recorded.
        Bad settings raise ConfigError before any rollout. Returns the loop's summary
        (iteration rows, stop reason, plateau, spend, and ``final`` after finalize)."""
        from capevolve._loop import engines
        from capevolve._loop import evaluate as evaluating
        from capevolve._store.rundir import RunDir
        from capevolve.optimize.loop import LoopSettings, run_loop

        opened = run if isinstance(run, RunDir) else RunDir.open(Path(os.fspath(run)))
        settings = LoopSettings(algorithm=algorithm, proposer=proposer, iterations=iterations,
                                parallel=parallel, focus=focus, timeout_s=timeout_s,
                                finalize=finalize, resume=resume, minibatch=minibatch,
                                spend_test_ids=spend_test_ids)
        chosen = engines.engine_for(evaluating.run_config(opened).engine, engine, address)
        from capevolve.optimize.summary import iteration_row

        def report(record: Any) -> None:
            if on_iteration is not None:
                on_iteration(iteration_row(record))

        return run_loop(opened, settings, chosen, report)
