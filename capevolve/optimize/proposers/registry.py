"""Proposer specs -> proposers: ``scripted:DIR``, ``command:TEMPLATE``, ``llm[:OPTIONS]``;
a bad spec is a one-line ConfigError before any rollout."""

from __future__ import annotations

import importlib

from capevolve.errors import ConfigError
from capevolve.optimize.proposers.base import Proposer, ProposerConfig

KINDS = ("scripted", "command", "llm")


def build_proposer(spec: str, config: ProposerConfig) -> Proposer:
    """The proposer ``spec`` names; ConfigError on a bad spec."""
    kind, sep, options = spec.strip().partition(":")
    kind = kind.strip()
    if kind in KINDS:  # the module of each kind, imported only when named
        module = importlib.import_module(f"capevolve.optimize.proposers.{kind}")
        proposer: Proposer = module.build(options, config)
        return proposer
    raise ConfigError(f"--proposer {spec!r}: unknown proposer kind {kind!r} "
                      f"(expected one of {', '.join(KINDS)})" if sep or kind else
                      f"--proposer {spec!r}: empty spec (expected one of {', '.join(KINDS)})")
