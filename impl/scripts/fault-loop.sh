#!/usr/bin/env bash
# Long-running fault loop: many runs of "SIGKILL the leader while a VotersRecord is uncommitted, restart
# it, check on disk that no committed voter set or committed entry was lost" (tests/cluster_faults.rs).
#
# Usage: impl/scripts/fault-loop.sh [RUNS] [FIRST_SEED]      (defaults: 100 runs from seed 1000)
# Every run starts 4 real `kraft` processes on 127.0.0.1 ephemeral ports; all are killed at the end of
# each run, also on failure. A failing run stops the loop and prints its seed (re-run it with RUNS=1).
set -euo pipefail
runs="${1:-100}"
seed="${2:-1000}"
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
KRAFT_FAULT_RUNS="$runs" KRAFT_FAULT_SEED="$seed" \
  cargo test --release -p kraft --test cluster_faults leader_sigkill -- --nocapture 2>&1 |
  grep -E "fault run|panicked|test result|timed out|assert" 
