#!/usr/bin/env bash
# Instructions per DescribeQuorum decode, ours against kafka-protocol, on the `dq_decode_v*` bench inputs,
# counted by valgrind (deterministic: the same on a loaded machine as on an idle one). Builds
# `decode-count` (bench profile) and runs it under callgrind at two iteration counts per case; the
# difference divided by the iterations cancels start-up and fixture building.
# Usage: benches/decode-count.sh [iterations]   (default 2000; needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
iterations="${1:-2000}"
cargo build --quiet --profile bench -p benches --bin decode-count
bin="${CARGO_TARGET_DIR:-target}/release/decode-count"
count() { # decoder version replicas iterations -> instructions executed by the whole process
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" "$@" 2>&1 |
        sed -n 's/.*I *refs: *//p' | tr -d ,
}
per_decode() {
    local base full
    base=$(count "$1" "$2" "$3" 0)
    full=$(count "$1" "$2" "$3" "$iterations")
    echo $(((full - base) / iterations))
}
echo "| version | replicas | kraft (decode_bytes) | kraft_copy (decode) | kafka-protocol | kraft / kafka-protocol | kraft_copy / kafka-protocol |"
echo "|---|---|---|---|---|---|---|"
for version in 0 1 2 3; do
    for n in 3 5 9 100; do
        ours=$(per_decode kraft "$version" "$n")
        copy=$(per_decode kraft_copy "$version" "$n")
        if [ "$version" -le 2 ]; then
            theirs=$(per_decode kafka-protocol "$version" "$n")
            ratio() { awk -v a="$1" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }'; }
            echo "| v$version | $n | $ours | $copy | $theirs | $(ratio "$ours") | $(ratio "$copy") |"
        else
            echo "| v$version | $n | $ours | $copy | — | — | — |"
        fi
    done
done
