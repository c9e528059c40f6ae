"""Journals of one evaluate session, so that a driver killed at any moment loses only what
was in flight and never spends what is not counted.

A *session* is one run of the engine for one evaluation (one ``evaluate`` invocation),
named by a random token.
"""
