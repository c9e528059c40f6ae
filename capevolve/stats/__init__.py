"""Statistics for capevolve: task-level estimators and candidate/reference comparisons."""

from capevolve.stats.estimators import (
    clustered_se,
    mean_and_se,
    minimum_detectable_effect,
    pass_hat_k,
    pass_k_table,
    task_means,
    trials_needed,
)
from capevolve.stats.significance import (
    Comparison,
    confidence_label,
    paired_comparison,
    paired_regressions,
    summary_comparison,
    welch_comparison,
)

__all__ = [
    "Comparison",
    "clustered_se",
    "confidence_label",
    "mean_and_se",
    "minimum_detectable_effect",
    "paired_comparison",
    "paired_regressions",
    "pass_hat_k",
    "pass_k_table",
    "summary_comparison",
    "task_means",
    "trials_needed",
    "welch_comparison",
]
