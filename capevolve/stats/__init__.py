"""Statistics: task-level estimators, comparisons and power (numbers; decisions are policy)."""

from capevolve.stats.estimators import (
    clustered_se,
    mean_and_se,
    n_clusters,
    pass_hat_k,
    pass_k_table,
    task_means,
)
from capevolve.stats.power import (
    detectable_effect,
    minimum_detectable_effect,
    t_quantile,
    trials_needed,
)
from capevolve.stats.significance import (
    Comparison,
    paired_comparison,
    summary_comparison,
    welch_comparison,
)

__all__ = [
    "Comparison",
    "clustered_se",
    "detectable_effect",
    "mean_and_se",
    "minimum_detectable_effect",
    "n_clusters",
    "paired_comparison",
    "pass_hat_k",
    "pass_k_table",
    "summary_comparison",
    "t_quantile",
    "task_means",
    "trials_needed",
    "welch_comparison",
]
