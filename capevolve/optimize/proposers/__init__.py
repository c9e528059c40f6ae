"""Proposers: given a parent candidate and its context, edit a working copy of it.

The interface is :mod:`capevolve.optimize.proposers.base`; the spec registry is
:func:`~capevolve.optimize.proposers.registry.build_proposer`.
"""
