#!/usr/bin/env bash
# One bounded libFuzzer run of a target: 10^6 executions or $2 seconds, whichever comes first.
# Any single allocation above 64 MiB is a crash (-malloc_limit_mb): a decoder that reserves what a
# length claims fails here. Corpus: corpus/<target>, seeded from seeds/<target> (impl/tests/wire_bounds.rs).
set -euo pipefail
cd "$(dirname "$0")"
target=$1
secs=${2:-120}
mkdir -p "corpus/$target"
cp -n seeds/"$target"/* "corpus/$target/" 2>/dev/null || true
uptime
cargo +nightly fuzz run -O "$target" "corpus/$target" -- \
  -runs=1000000 -max_total_time="$secs" -malloc_limit_mb=64 -rss_limit_mb=2048 -print_final_stats=1
uptime
ls "corpus/$target" | wc -l
