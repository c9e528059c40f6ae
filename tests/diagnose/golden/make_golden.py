"""Write the diagnosis golden files (run from the repository root, with the code whose
output is the reference): ``.venv/bin/python tests/diagnose/golden/make_golden.py``.

- ``corpus_<mode>_<variant>.json.gz``: ``build_diagnosis`` of ``golden_corpus.corpus()``
  (variants: ``targets``, ``redact`` and ``none`` = no adapter), as ``write_document``
  writes it; ``corpus_trajectories.json.gz``: every trajectory document, by file name;
- ``retail_<split>_trials.jsonl.gz`` / ``retail_<split>_<mode>.json.gz`` /
  ``retail_<split>_trajectories.sha256``: the retail benchmark's seed rows (evaluated with
  the local engine) and ``diagnose``'s file and trajectory files over them, the run
  root replaced by ``<RUN>``;
- ``bench_2000.sha256``: digests of ``bench_diagnose.build_run(2000)``'s diagnosis (with a
  trajectory folder and with an adapter trace store) and of its trajectory files.

The diagnosis documents are held (and digested) in the form the files had when the goldens
were made, ``json.dumps``' default separators (:func:`canonical`); the files are compact
since, and are compared in that form (:func:`spaced`: the same content, byte for byte).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(HERE.parent), str(ROOT / "benchmarks" / "perf")]

from capevolve import evaluate  # noqa: E402
from capevolve._loop.run import create_run  # noqa: E402
from capevolve._store import jsonfiles  # noqa: E402
from capevolve._store.documents import diagnosis_record  # noqa: E402
from capevolve.diagnose import trajectories  # noqa: E402
from capevolve.diagnose.classify import is_failure  # noqa: E402
from capevolve.diagnose.context import AdapterContext  # noqa: E402
from capevolve.diagnose.diagnosis import (  # noqa: E402
    DiagnoseOptions,
    build_diagnosis,
    diagnose,
    diagnosis_path,
)
from capevolve.diagnose.kinds import ClusterMode  # noqa: E402
from capevolve.diagnose.source import load_trials  # noqa: E402

VARIANTS = ("targets", "redact", "none")
FOLDER = "diagnoses/trajectories/val__seed"


def canonical(doc: dict) -> bytes:
    """The bytes the goldens hold for ``doc``: its record's JSON as ``write_document``
    wrote it when they were made (``json.dumps``' default separators, ``", "`` and
    ``": "``; since then the file is compact, see :func:`spaced`)."""
    return (jsonfiles.dumps(diagnosis_record(doc).to_json(), indent=None) + "\n").encode()


def spaced(data: bytes) -> bytes:
    """A diagnosis file's bytes in the form the goldens hold (``json.dumps``' default
    separators, a lone surrogate as its JSON escape): the file's content, compared byte
    for byte with the goldens. The file itself is the compact canonical form
    (``diagnosis.canonical_json``)."""
    return (jsonfiles.dumps(json.loads(data), indent=None) + "\n").encode(
        "utf-8", "backslashreplace")


def corpus_document(trials: list, mode: ClusterMode, variant: str,
                    writer: Callable[[dict], bytes] = canonical) -> bytes:
    import golden_corpus

    context = (AdapterContext(unavailable="no adapter") if variant == "none"
               else AdapterContext(targets=golden_corpus.targets()))
    options = DiagnoseOptions("val", "seed", mode=mode, redact_gold=variant == "redact")
    return writer(build_diagnosis(trials, context, options, FOLDER))


def trajectory_digest(folder: Path) -> str:
    files = sorted(folder.glob("*.json"))
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return f"{len(files)} {digest.hexdigest()}"


def write_corpus() -> None:
    import golden_corpus

    trials = golden_corpus.corpus()
    for mode in ClusterMode:
        for variant in VARIANTS:
            data = corpus_document(trials, mode, variant)
            (HERE / f"corpus_{mode.value}_{variant}.json.gz").write_bytes(
                gzip.compress(data, mtime=0))
    docs = {trajectories.file_name(t): trajectories.document(t) for t in trials
            if is_failure(t)}
    (HERE / "corpus_trajectories.json.gz").write_bytes(gzip.compress(
        json.dumps(docs, sort_keys=True, ensure_ascii=False).encode(), mtime=0))


def write_retail(tmp: Path) -> None:
    run = create_run(ROOT / "benchmarks" / "retail", tmp / "retail-run")
    for split in ("val", "train"):
        evaluate(run, "seed", split, engine="local")
        rows = "".join(json.dumps(t._asdict(), sort_keys=True) + "\n"
                       for t in load_trials(run, split, "seed"))
        (HERE / f"retail_{split}_trials.jsonl.gz").write_bytes(
            gzip.compress(rows.encode(), mtime=0))
        for mode in ClusterMode:
            diagnose(run, DiagnoseOptions(split, "seed", mode=mode))
            data = spaced(diagnosis_path(run, split, "seed", mode).read_bytes())
            (HERE / f"retail_{split}_{mode.value}.json.gz").write_bytes(gzip.compress(
                data.replace(str(run.root).encode(), b"<RUN>"), mtime=0))
        folder = trajectories.folder(run.layout.diagnoses, split, "seed")
        (HERE / f"retail_{split}_trajectories.sha256").write_text(
            trajectory_digest(folder) + "\n")


def bench_digests(tmp: Path) -> dict[str, str]:
    import bench_diagnose

    run, targets = bench_diagnose.build_run(tmp, 2000)
    out = {}
    for name, context in (("files", AdapterContext(targets=targets)),
                          ("store", AdapterContext(targets=targets,
                                                   trajectory=str(tmp / "traces")))):
        diagnose(run, DiagnoseOptions("val", "seed"), context)
        data = spaced(diagnosis_path(run, "val", "seed").read_bytes())
        data = data.replace(str(tmp).encode(), b"<TMP>")
        out[name] = hashlib.sha256(data).hexdigest()
    out["trajectories"] = trajectory_digest(trajectories.folder(run.layout.diagnoses,
                                                                "val", "seed"))
    return out


def main() -> None:
    write_corpus()
    with tempfile.TemporaryDirectory() as tmp:
        write_retail(Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        digests = bench_digests(Path(tmp))
    (HERE / "bench_2000.sha256").write_text(json.dumps(digests, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
