"""Persistence: everything capevolve keeps in a run dir, through typed records.

- ``layout``     every path inside a run dir
- ``jsonfiles``  canonical JSON, atomic replace, the append-only line format
- ``rundir``     RunDir: manifest, splits, candidates, events, best, spend, the API rules
- ``events``     events.jsonl read once and cached; best and spend derived from it
- ``evals``      evaluation records and the latest-evaluation lookups
- ``documents``  final.json and diagnosis files
- ``candidates`` content hashes and read-only snapshots
- ``splits``     the frozen, checksummed splits
- ``lock``       the run's writer lock (flock on a held descriptor)
- ``seal``       the test seal (O_EXCL, its liveness a flock)
- ``ledger``     the project's record of every finalize
- ``rollouts/``  the Parquet schema, writer and the confined read-only query
"""
