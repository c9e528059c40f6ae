"""Read-only views of a run: compare and diff candidates, and the local web viewer.

Nothing in this package writes into a run dir: every function opens the run read-only and
computes what it shows from the stored records and rows.
"""
