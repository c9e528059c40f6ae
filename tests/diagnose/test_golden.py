"""Diagnosis output is byte-identical to the golden files of ``golden/`` (made by
``golden/make_golden.py`` from the code before the columnar rewrite): the awkward-row
corpus in memory and through real Parquet, the retail benchmark's seed rows through
``diagnose``, and the 2,000-rollout benchmark run."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from diagnose import golden_corpus
from diagnose.golden.make_golden import (
    FOLDER,
    VARIANTS,
    corpus_document,
    spaced,
    trajectory_digest,
)

from capevolve._loop.run import create_run
from capevolve._store.rollouts.schema import COLUMNS, ROLLOUT_SCHEMA
from capevolve._store.rollouts.writer import write_part
from capevolve._store.rundir import RunDir
from capevolve._store.splits import Splits
from capevolve.diagnose import trajectories
from capevolve.diagnose.classify import is_failure
from capevolve.diagnose.context import AdapterContext
from capevolve.diagnose.diagnosis import DiagnoseOptions, diagnose, diagnosis_path
from capevolve.diagnose.kinds import ClusterMode
from capevolve.diagnose.source import Trial

GOLDEN = Path(__file__).resolve().parent / "golden"
ROOT = Path(__file__).resolve().parents[2]


def golden(name: str) -> bytes:
    return gzip.decompress((GOLDEN / name).read_bytes())


def written(data: bytes) -> bytes:
    """A diagnosis file as the goldens hold it (``spaced``), after checking that the file
    is the canonical compact form of its own content."""
    from capevolve.diagnose.diagnosis import canonical_json

    assert data == canonical_json(json.loads(data))
    return spaced(data)


def same(actual: bytes, expected: bytes) -> None:
    """Equal bytes, or an assertion naming the first differing offset and its context."""
    if actual != expected:
        at = next((i for i, (a, b) in enumerate(zip(actual, expected, strict=False))
                   if a != b), min(len(actual), len(expected)))
        raise AssertionError(f"differs at byte {at}: got {actual[at - 80:at + 80]!r}, "
                             f"expected {expected[at - 80:at + 80]!r}")


def store_trials(run: RunDir, trials: list[Trial], split: str = "val") -> None:
    """The trials as rollout rows of ``seed``: two Parquet parts written as a hand-edited
    file would be (values as given, not normalised by the writer), recorded in the run."""
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    rows = [{"schema_version": 1, "run_id": run.run_id, "split": split, "candidate_id": "seed",
             "candidate_hash": "h", "seed": i, "attempts": 1,
             "finished_at": t0 + dt.timedelta(seconds=i), **t._asdict()}
            for i, t in enumerate(trials)]
    eval_id = trials[0].eval_id
    half = len(rows) // 2
    for n, chunk in enumerate((rows[half:], rows[:half])):
        path = run.layout.partition(split, "seed") / f"{eval_id}-golden-{n:05d}.parquet"
        table = pa.Table.from_pydict({c: [r.get(c) for r in chunk] for c in COLUMNS},
                                     schema=ROLLOUT_SCHEMA)
        run.record_part(write_part(table, path), len(chunk))


def corpus_run(tmp_path: Path) -> RunDir:
    ids = tuple(sorted(golden_corpus.TASKS))
    manifest = {"run_id": "golden", "project_dir": str(tmp_path / "none"),
                "config": {"name": "golden", "adapter": "adapter.py:Adapter",
                           "capability_path": "seed"},
                "created_at": "2024-01-01T00:00:00+00:00", "versions": {}, "seed": 0,
                "host": "golden", "n_tasks": len(ids) + 2}
    (tmp_path / "seed").mkdir()
    (tmp_path / "seed" / "prompt.md").write_text("be good")
    splits = Splits(train=("x0",), val=ids, test=("z0",), seed=0)
    return RunDir.create(tmp_path / "run", manifest, splits, tmp_path / "seed")


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(ClusterMode))
@pytest.mark.parametrize("variant", VARIANTS)
def test_corpus_diagnosis_is_byte_identical_to_the_golden(mode, variant):
    """build_diagnosis of the awkward-row corpus: the same bytes as before the rewrite,
    and as ``write_document`` writes it (compact), the same content."""
    from capevolve.diagnose.diagnosis import document_bytes

    expected = golden(f"corpus_{mode.value}_{variant}.json.gz")
    same(corpus_document(golden_corpus.corpus(), mode, variant), expected)
    same(written(corpus_document(golden_corpus.corpus(), mode, variant, document_bytes)),
         expected)


def test_corpus_trajectory_documents_are_byte_identical_to_the_golden():
    """Every trajectory file's text (JSON columns kept, malformed ones as strings)."""
    expected = json.loads(golden("corpus_trajectories.json.gz"))
    trials = [t for t in golden_corpus.corpus() if is_failure(t)]
    assert {trajectories.file_name(t): trajectories.document(t) for t in trials} == expected


@pytest.mark.parametrize("redact", [False, True])
def test_corpus_through_parquet_and_duckdb_gives_the_golden_file(tmp_path, redact):
    """The corpus stored as Parquet parts and read by ``diagnose``: the written file is the
    golden one (trajectory folder aside) and the trajectory files are the golden texts."""
    run = corpus_run(tmp_path)
    store_trials(run, golden_corpus.corpus())
    context = AdapterContext(targets=golden_corpus.targets())
    diagnose(run, DiagnoseOptions("val", "seed", redact_gold=redact), context)
    folder = trajectories.folder(run.layout.diagnoses, "val", "seed")
    data = written(diagnosis_path(run, "val", "seed").read_bytes())
    variant = "redact" if redact else "targets"
    same(data.replace(str(folder).encode(), FOLDER.encode()),
         golden(f"corpus_root-cause_{variant}.json.gz"))
    expected = json.loads(golden("corpus_trajectories.json.gz"))
    own = {trajectories.file_name(t) for t in golden_corpus.corpus() if t.trajectory}
    files = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.json")}
    assert files == {k: v for k, v in expected.items() if k not in own}


@pytest.mark.parametrize("split", ["val", "train"])
def test_retail_rows_give_the_golden_diagnosis_and_trajectory_files(tmp_path, split):
    """The retail benchmark's seed rows (stored from a local-engine evaluation) diagnose,
    in both modes, to the golden files, with the retail adapter's context."""
    run = create_run(ROOT / "benchmarks" / "retail", tmp_path / "retail-run")
    rows = golden(f"retail_{split}_trials.jsonl.gz").decode().splitlines()
    store_trials(run, [Trial(**json.loads(line)) for line in rows], split)
    for mode in ClusterMode:
        diagnose(run, DiagnoseOptions(split, "seed", mode=mode))
        data = written(diagnosis_path(run, split, "seed", mode).read_bytes())
        same(data.replace(str(run.root).encode(), b"<RUN>"),
             golden(f"retail_{split}_{mode.value}.json.gz"))
    folder = trajectories.folder(run.layout.diagnoses, split, "seed")
    assert trajectory_digest(folder) == \
        (GOLDEN / f"retail_{split}_trajectories.sha256").read_text().strip()


@pytest.mark.slow
def test_bench_run_of_2000_failing_rollouts_gives_the_golden_digests(tmp_path):
    """bench_diagnose's generated run: both diagnoses and the trajectory files hash to the
    digests the code before the rewrite gave."""
    sys.path.insert(0, str(ROOT / "benchmarks" / "perf"))
    from diagnose.golden.make_golden import bench_digests

    expected = json.loads((GOLDEN / "bench_2000.sha256").read_text())
    assert bench_digests(tmp_path) == expected


@pytest.mark.parametrize("guess", ["as built", "false", "true"])
def test_traces_left_unread_change_no_byte(tmp_path, monkeypatch, guess):
    """With an adapter trace store, only the traces SQL guesses are needed are read: the
    file is the one a read of every trace gives, whatever the guess -- as built (plain
    rows left unread), none (every needed trace missing: all are read again and the
    diagnosis starts over) or all."""
    from capevolve.diagnose import diagnosis
    from capevolve.diagnose.diagnosis import build_diagnosis, document_bytes
    from capevolve.diagnose.source import load_trials

    run = corpus_run(tmp_path)
    store_trials(run, golden_corpus.corpus())
    context = AdapterContext(targets=golden_corpus.targets(), trajectory="/store/traces")
    options = DiagnoseOptions("val", "seed")
    expected = document_bytes(build_diagnosis(load_trials(run, "val", "seed"), context,
                                              options, "unused"))
    reads = []
    real = diagnosis.read_trials

    def spy(*args):
        rows = real(*args)
        reads.append(len(rows.unread))
        return rows

    monkeypatch.setattr(diagnosis, "read_trials", spy)
    if guess != "as built":
        monkeypatch.setattr(diagnosis, "TRACE_MAY_BE_NEEDED", guess)
    diagnose(run, options, context)
    assert diagnosis_path(run, "val", "seed").read_bytes() == expected
    assert {"as built": reads[:1] != [0] and len(reads) == 1, "false": reads[-1:] == [0]
            and len(reads) == 2, "true": reads == [0]}[guess], reads
