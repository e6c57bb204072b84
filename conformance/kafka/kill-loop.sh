#!/usr/bin/env bash
# Interop scenario (j) at length: kill -9 of the leader while a VotersRecord is uncommitted,
# RUNS times (default 100) with seeds SEED, SEED+1, ... (default 1), Kafka and kraft leaders in turn, then the
# common end checks. run.sh runs the same scenario with 2 runs. Usage: kill-loop.sh [RUNS [SEED]]
set -euo pipefail
exec "$(dirname "$0")/run.sh" --only j --runs "${1:-100}" --seed "${2:-1}"
