#!/usr/bin/env bash
# The retail demo: run -> (edit a copy of the best -> evaluate -> gate -> accept|reject) x N
# -> status -> finalize -> report. Each scripted edit in edits/ (a general rule or a tool
# fix, applied in file-name order) is applied to a writable copy of the current best.
#
# usage: benchmarks/retail/demo.sh CAPEVOLVE_BIN RUN_DIR [extra args for run/evaluate]
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
PYTHON=${PYTHON:-$(dirname "$CAPEVOLVE")/python}
[ -x "$PYTHON" ] || PYTHON=python3
json_field() { "$PYTHON" -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }

rm -rf "$RUN"
"$CAPEVOLVE" run --project "$HERE" --run-dir "$RUN" "$@"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

best=seed
for edit in "$HERE"/edits/[0-9]*.json; do
  name=$(basename "$edit" .json)
  cand="$WORK/$name"
  cp -r "$RUN/candidates/$best/files" "$cand"
  chmod -R u+w "$cand"
  title=$("$PYTHON" "$HERE/edits/apply_edit.py" "$edit" "$cand")
  echo "== edit $name on top of $best: $title" >&2
  result=$("$CAPEVOLVE" evaluate --run-dir "$RUN" --candidate "$cand" --split val --json "$@")
  id=$(echo "$result" | json_field candidate_id)
  decision=$("$CAPEVOLVE" gate --run-dir "$RUN" --candidate "$id" --json | json_field decision)
  echo "== $id ($name): gate says $decision" >&2
  if [ "$decision" = "accept" ]; then
    "$CAPEVOLVE" accept --run-dir "$RUN" --candidate "$id" --note "$title"
    best=$id
  else
    "$CAPEVOLVE" reject --run-dir "$RUN" --candidate "$id" --note "$title (gate: $decision)"
  fi
done

"$CAPEVOLVE" status --run-dir "$RUN"
"$CAPEVOLVE" finalize --run-dir "$RUN" "$@"
"$CAPEVOLVE" report --run-dir "$RUN"
