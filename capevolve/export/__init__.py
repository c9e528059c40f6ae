"""Export a run into other tools: MLflow (``capevolve[mlflow]``), imported only when used."""
