#!/usr/bin/env bash
# The dataset demo (experiment mode, no adapter code): starts the scripted judge server on
# 127.0.0.1:8931 (judge_server.py; killed on exit), then `capevolve check` (metric kinds),
# `capevolve run` (splits, the seed's baseline on val: the datapoints without an expected
# answer are excluded, never scored 0), evaluates improved_capability/ on val, gates and
# accepts or rejects it, exports its per-datapoint results as JSONL, seals test once and
# writes report.md. Offline and deterministic.
#
# usage: benchmarks/dataset_qa/demo.sh CAPEVOLVE_BIN RUN_DIR
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 CAPEVOLVE_BIN RUN_DIR" >&2
  exit 2
fi
CAPEVOLVE=$1
RUN=$2
HERE=$(cd "$(dirname "$0")" && pwd)
PY=$(dirname "$CAPEVOLVE")/python
PORT=8931

if "$PY" -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $PORT)) != 0)"; then
  echo "error: 127.0.0.1:$PORT is in use; the demo's judge needs it (capevolve.yaml base_url)" >&2
  exit 2
fi
"$PY" "$HERE/judge_server.py" "$PORT" &
JUDGE=$!
trap 'kill $JUDGE 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  "$PY" -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $PORT)))" \
    && break
  sleep 0.1
done

rm -rf "$RUN"
"$CAPEVOLVE" check --project "$HERE"
"$CAPEVOLVE" run --project "$HERE" --run-dir "$RUN"
"$CAPEVOLVE" evaluate --run-dir "$RUN" --candidate "$HERE/improved_capability" --split val
if "$CAPEVOLVE" gate --run-dir "$RUN" --candidate cand_001 --json | "$PY" -c \
    "import json,sys; sys.exit(json.load(sys.stdin)['decision'] != 'accept')"; then
  "$CAPEVOLVE" accept --run-dir "$RUN" --candidate cand_001 --note "adds twenty capitals"
else
  "$CAPEVOLVE" reject --run-dir "$RUN" --candidate cand_001 --note "the gate did not accept"
fi
"$CAPEVOLVE" export jsonl --run-dir "$RUN" --eval val__cand_001__k2
"$CAPEVOLVE" status --run-dir "$RUN"
"$CAPEVOLVE" finalize --run-dir "$RUN"
"$CAPEVOLVE" report --run-dir "$RUN"
