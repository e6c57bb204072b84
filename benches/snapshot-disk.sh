#!/usr/bin/env bash
# Disk use of a `kraft` quorum with snapshots and retention on, under membership churn.
#   benches/snapshot-disk.sh [SECONDS]     (default 600)
# Three voters (nodes 1-3) run with Kafka's snapshot system-test settings (the same as interop scenario p:
# metadata.log.max.record.bytes.between.snapshots=2048, metadata.log.max.snapshot.interval.ms=1000,
# metadata.max.retention.bytes=2048); node 4 is added and removed again and again with `kraft add-voter` /
# `remove-voter` (each change a VotersRecord batch); node 5 is an observer with Kafka's default settings (20 MiB
# between snapshots), so its directory holds the whole log: what the voters would hold without snapshots.
# Every 10 s it prints, per node, the bytes of its metadata log directory (segments, snapshots, index files),
# its log start (the base offset of its first segment) and how many snapshots it holds (`.checkpoint`, the
# bootstrap snapshot included while it lasts); at the end the largest and last size of each node and how far
# each log start moved. Release build; one process per node on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
cargo build -q -j 2 --release -p kraft --bin kraft
K=$PWD/target/release/kraft
dir=$(mktemp -d "${TMPDIR:-/tmp}/snapshot-disk.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

base=$((30000 + RANDOM % 20000))
dirid() { head -c16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'; }
initial="1@127.0.0.1:$((base + 1)):$(dirid),2@127.0.0.1:$((base + 2)):$(dirid),3@127.0.0.1:$((base + 3)):$(dirid)"
snap=(--metadata-log-max-record-bytes-between-snapshots 2048 --metadata-log-max-snapshot-interval-ms 1000
    --metadata-max-retention-bytes 2048 --internal-metadata-log-segment-bytes 4096)
for id in 1 2 3 4 5; do
    "$K" format --data-dir "$dir/n$id" --cluster-id snapshot-disk --node-id "$id" --initial-controllers "$initial" >/dev/null
    args=(--election-timeout-ms 1000 --fetch-timeout-ms 2000)
    [ "$id" != 5 ] && args+=("${snap[@]}")
    "$K" node --data-dir "$dir/n$id" --listener "127.0.0.1:$((base + id))" "${args[@]}" >"$dir/n$id.log" 2>&1 &
    pids+=($!)
done
boot="127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2)),127.0.0.1:$((base + 3))"
# A node that exits (e.g. its random port is taken) or no leader within 60 s ends the run with its log.
deadline=$((SECONDS + 60))
until "$K" describe --bootstrap-controller "$boot" --status --timeout-ms 2000 >/dev/null 2>&1; do
    for i in "${!pids[@]}"; do
        if ! kill -0 "${pids[$i]}" 2>/dev/null; then
            echo "snapshot-disk: node $((i + 1)) exited; the end of $dir/n$((i + 1)).log:" >&2
            tail -n 5 "$dir/n$((i + 1)).log" >&2
            exit 1
        fi
    done
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "snapshot-disk: no leader within 60 s; node logs in $dir" >&2
        exit 1
    fi
    sleep 0.5
done

bytes() { du -sb "$dir/n$1/__cluster_metadata-0" 2>/dev/null | cut -f1; }
snaps() { ls "$dir/n$1/__cluster_metadata-0" 2>/dev/null | grep -c -E '\.checkpoint$' || true; }
logstart() {
    local f
    f=$(ls "$dir/n$1/__cluster_metadata-0" 2>/dev/null | grep -E '^[0-9]{20}\.log$' | sort | head -n1)
    [ -n "$f" ] && echo $((10#${f%.log})) || echo -
}
declare -A max first_start
echo "# $(date -u '+%F %T') UTC, commit $(git rev-parse --short HEAD), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $secs s"
echo "# t_s changes leader_LEO, then per node 1..5 (5: Kafka's default settings): bytes/log_start/snapshots"
start=$(date +%s)
changes=0
next=0
while :; do
    now=$(($(date +%s) - start))
    [ "$now" -ge "$secs" ] && break
    if "$K" add-voter --bootstrap-controller "$boot" --data-dir "$dir/n4" --endpoint "127.0.0.1:$((base + 4))" \
        --timeout-ms 10000 >/dev/null 2>&1; then changes=$((changes + 1)); fi
    if "$K" remove-voter --bootstrap-controller "$boot" --node-id 4 --timeout-ms 10000 >/dev/null 2>&1; then
        changes=$((changes + 1))
    fi
    if [ "$now" -ge "$next" ]; then
        next=$((now + 10))
        leo=$("$K" describe --bootstrap-controller "$boot" --replication --timeout-ms 2000 2>/dev/null \
            | awk -F'\t' '$7 ~ /Leader/ { gsub(/ /, "", $3); print $3 }')
        line="$now $changes ${leo:-?}"
        for id in 1 2 3 4 5; do
            b=$(bytes "$id")
            s=$(logstart "$id")
            line="$line $b/$s/$(snaps "$id")"
            [ "${max[$id]:-0}" -lt "$b" ] && max[$id]=$b
            [ -z "${first_start[$id]:-}" ] && first_start[$id]=$s
        done
        echo "$line"
    fi
done
echo "# end: $(date -u '+%T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg), $changes voter changes"
for id in 1 2 3 4 5; do
    echo "# node $id: largest ${max[$id]} bytes, last $(bytes "$id") bytes, log start ${first_start[$id]} -> $(logstart "$id"), $(snaps "$id") snapshots: $(ls "$dir/n$id/__cluster_metadata-0" | tr '\n' ' ')"
done
rm -rf "$dir"
