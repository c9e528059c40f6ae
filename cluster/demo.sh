#!/usr/bin/env bash
# The demo loop as one job entrypoint: run -> evaluate improved -> gate -> accept ->
# finalize -> report. Usage: bash demo.sh RUN_DIR [PROJECT_DIR]
# RUN_DIR must be an absolute path on the head's disk or a mounted volume: the job's
# working dir is a temporary copy that Ray deletes, so a run dir inside it would be lost.
set -euo pipefail
RUN_DIR=${1:?usage: demo.sh RUN_DIR [PROJECT_DIR]}
PROJECT=${2:-benchmarks/toy}
capevolve run --project "$PROJECT" --run-dir "$RUN_DIR"
capevolve evaluate --run-dir "$RUN_DIR" --candidate "$PROJECT/improved_capability" --split val
capevolve gate --run-dir "$RUN_DIR" --candidate cand_001
capevolve accept --run-dir "$RUN_DIR" --candidate cand_001 --note "adds the missing rules"
capevolve finalize --run-dir "$RUN_DIR"
capevolve report --run-dir "$RUN_DIR"
