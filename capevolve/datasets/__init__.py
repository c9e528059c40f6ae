"""Dataset projects: a JSONL file, the code under test and evaluators instead of an adapter.

``corpus`` reads the datapoints (ids from a field or from content), ``metrics`` holds the
deterministic evaluators, ``judge`` the injection-safe LLM judge, and ``adapter`` the
built-in adapter a dataset project runs through (``capevolve.config.DATASET_ADAPTER``), so
splits, engine, store, gate and seal apply unchanged.
"""
