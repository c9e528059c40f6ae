"""The Ray engine (the only package that imports ray): engine, pool, actor, limiter, probe."""
