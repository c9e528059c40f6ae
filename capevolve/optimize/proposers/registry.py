"""Proposer specs -> proposers: ``scripted:DIR``, ``command:TEMPLATE``, ``llm[:OPTIONS]``.

:func:`build_proposer` is the one place a spec is parsed. A bad spec (unknown kind, missing
argument, a command template without ``{workdir}``, a scripted directory that does not
exist) is a :class:`~capevolve.errors.ConfigError` with one line, raised before any rollout.
The ``llm`` builder is imported only for an ``llm`` spec:
``capevolve.optimize.proposers.llm.build(options: str, config: ProposerConfig)``.
"""

from __future__ import annotations

import importlib

from capevolve.errors import ConfigError
from capevolve.optimize.proposers.base import Proposer, ProposerConfig

KINDS = ("scripted", "command", "llm")


def build_proposer(spec: str, config: ProposerConfig) -> Proposer:
    """The proposer a spec names (see the module docstring); ConfigError on a bad spec."""
    kind, sep, options = spec.strip().partition(":")
    kind = kind.strip()
    if kind == "llm":
        module = importlib.import_module("capevolve.optimize.proposers.llm")
        proposer: Proposer = module.build(options, config)
        return proposer
    if kind == "scripted":
        from capevolve.optimize.proposers.scripted import build as build_scripted

        return build_scripted(options, config)
    if kind == "command":
        from capevolve.optimize.proposers.command import build as build_command

        return build_command(options, config)
    raise ConfigError(f"--proposer {spec!r}: unknown proposer kind {kind!r} "
                      f"(expected one of {', '.join(KINDS)})" if sep or kind else
                      f"--proposer {spec!r}: empty spec (expected one of {', '.join(KINDS)})")
