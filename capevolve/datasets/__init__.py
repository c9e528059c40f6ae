"""Dataset projects: a JSONL file, code under test and evaluators, run by a built-in adapter."""
