"""Pure decisions: no I/O, imports only ``capevolve.stats`` and the root vocabulary."""
