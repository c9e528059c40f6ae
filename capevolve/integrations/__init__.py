"""Optional integrations with other tools, each needing its extra (``capevolve[gepa]``)."""
