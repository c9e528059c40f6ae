"""Execution engines: plan work units, run them (locally or on Ray), stream rows back."""
