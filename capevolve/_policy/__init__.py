"""Pure decisions: no I/O, imports only ``capevolve.stats`` and the root vocabulary.

One rule, one module:

- ``thresholds``: the one tolerance and every threshold comparison (ties, passes);
- ``outcomes``: one side of a gate (valid trial rewards per task);
- ``completeness``: coverage floor and the paired denominator guard;
- ``regression``: the no-regression rule on per-task means;
- ``labels``: significant / within_noise / negligible (t-quantile for the df);
- ``alpha``: the gate's critical value from alpha, run-level spending, the ledger;
- ``power``: the gate's minimum detectable effect from its observed differences;
- ``gate``: the strict gate that combines them;
- ``budget``, ``decisions``: budget caps, one decision per candidate and best;
- ``verdict``: what the held-out test says about the val gain.
"""
