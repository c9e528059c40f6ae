"""Read-only views of a run (compare, diff, the web viewer); nothing here writes into a run dir."""
