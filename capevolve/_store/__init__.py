"""Persistence: everything capevolve keeps in a run dir."""
