#!/usr/bin/env bash
# The retail demo: `capevolve run` (check -> splits -> the seed's baseline on val), then
# `capevolve optimize` with the scripted proposer: each prepared edit in edits/ (a general
# rule or a tool fix, in file-name order) is applied to a writable copy of the current best
# and taken through evaluate -> gate -> accept|reject; the loop stops when the edits run
# out, seals test once (--finalize) and writes report.md. Offline and deterministic.
#
# usage: benchmarks/retail/demo.sh CAPEVOLVE_BIN RUN_DIR [--engine local|ray]
#   e.g. benchmarks/retail/demo.sh .venv/bin/capevolve demo-run
#        benchmarks/retail/demo.sh .venv/bin/capevolve demo-run --engine local
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 CAPEVOLVE_BIN RUN_DIR [--engine local|ray]" >&2
  exit 2
fi
CAPEVOLVE=$1
RUN=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)

rm -rf "$RUN"
"$CAPEVOLVE" run --project "$HERE" --run-dir "$RUN" "$@"
"$CAPEVOLVE" optimize --run-dir "$RUN" --algorithm hill-climb \
  --proposer "scripted:$HERE/edits" --finalize "$@"
"$CAPEVOLVE" status --run-dir "$RUN"
