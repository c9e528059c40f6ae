"""Proposers: edit a working copy of a parent candidate (interface: :mod:`.base`)."""
