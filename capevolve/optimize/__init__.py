"""Driving the edit loop: the agent-mode handoff (and, later, automated optimizers)."""
