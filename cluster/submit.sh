#!/usr/bin/env bash
# Submit a capevolve command (or a script of commands) to a Ray cluster with `ray job submit`.
#
#   cluster/submit.sh run --project benchmarks/toy --run-dir /mnt/runs/toy-1
#   cluster/submit.sh --script cluster/demo.sh /mnt/runs/toy-1 benchmarks/toy
#
# The first form runs `capevolve ARGS` as the job's entrypoint on the head node; the second
# runs `bash SCRIPT ARGS` (one job for a whole loop). Paths in ARGS are relative to the
# working dir (as unpacked on the head), except the run dir: give an absolute path on the
# head's disk or a mounted volume, the working dir copy is temporary.
#
# CHANGE-ME (environment variables):
#   RAY_JOB_ADDRESS   job server, default http://127.0.0.1:8265 (on a `ray up` cluster run
#                     `ray dashboard cluster/ray-up.yaml` first, it forwards that port)
#   CAPEVOLVE_WORKING_DIR  what every node gets, default . (must contain the project)
#   CAPEVOLVE_RUNTIME_ENV  default cluster/runtime_env.yaml
#   RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or ~/.ray/auth_token): the cluster's token
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ADDRESS=${RAY_JOB_ADDRESS:-http://127.0.0.1:8265}
WORKING_DIR=${CAPEVOLVE_WORKING_DIR:-.}
RUNTIME_ENV=${CAPEVOLVE_RUNTIME_ENV:-$HERE/runtime_env.yaml}
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-token}

if [[ $# -eq 0 ]]; then
  sed -n '2,20p' "$0"; exit 2
fi
if [[ $1 == --script ]]; then
  shift; ENTRYPOINT=(bash "$@")
else
  ENTRYPOINT=(capevolve "$@")
fi
exec ray job submit --address "$ADDRESS" --working-dir "$WORKING_DIR" \
  --runtime-env "$RUNTIME_ENV" ${CAPEVOLVE_JOB_ID:+--submission-id "$CAPEVOLVE_JOB_ID"} \
  -- "${ENTRYPOINT[@]}"
