"""Export a run into other tools: an MLflow tracking store (``capevolve[mlflow]``).

Nothing here imports mlflow until an export is asked for, so the core install stays small
and ``import capevolve`` stays fast. (OpenTelemetry spans live in
:mod:`capevolve.telemetry`, beside the verbs that emit them.)
"""
