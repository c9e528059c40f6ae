"""Optimize: automated loops that evolve a capability through the public verbs."""
