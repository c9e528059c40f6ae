"""Optional integrations with other tools (each needs its extra, e.g. ``pip install
'capevolve[gepa]'``): :mod:`capevolve.integrations.gepa` runs ``gepa.optimize`` through
capevolve's engine and store."""
