"""Optimize: automated loops that evolve a capability through the public verbs.

A loop picks a parent (``algorithms``: hill-climb, GEPA-style pareto), has a proposer edit
a prepared copy of it (``proposers``: scripted, command, llm; the interface is
``proposers.base``), and takes the child through evaluate -> gate -> accept | reject, one
ledger record per iteration (``step``, ``loop``), until a stop predicate
(``capevolve._policy.stop``), a budget cap or the iteration count; ``--resume`` continues a
killed loop. Agent mode (a coding agent driving the verbs by hand) is the other way to
use capevolve. The public verb is :func:`capevolve.optimize_run`.
"""
