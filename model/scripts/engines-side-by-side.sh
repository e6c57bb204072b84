#!/usr/bin/env bash
# The default `check` five ways at once on this machine, loopback only: the DFS (2 threads), the
# timely engine as 1 process x 2 workers, as 2 processes x 1 worker on 127.0.0.1, as 2 processes
# bound to 127.0.0.1 and 127.0.0.2 (a hostfile), and as 2 processes on 127.0.0.1 spilling their
# frontier beyond $FRONTIER_MEMORY (default 8M) each. Prints one table row per run: unique and generated
# states, the checker's seconds, CPU seconds and peak RSS of each process (/usr/bin/time -v).
# Extra arguments go to every run (e.g. `--max-changes 1 --crashes 0` for a quick one).
# Usage: model/scripts/engines-side-by-side.sh [BOUNDS...]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -p model >&2
bin="${CARGO_TARGET_DIR:-target}/release/model"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(port)" "$(port)" >"$out/hosts-lo"
printf '127.0.0.1:%s\n127.0.0.2:%s\n' "$(port)" "$(port)" >"$out/hosts-two"
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(port)" "$(port)" >"$out/hosts-spill"
mkdir "$out/spill"

run() { # NAME ARGS...: one process, timed
    local name=$1
    shift
    /usr/bin/time -v -o "$out/$name.time" "$bin" check --no-first-election --json "$@" \
        >"$out/$name.json" 2>"$out/$name.err"
}
extra=("$@")
echo "commit $(git rev-parse --short HEAD), $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
run dfs --threads 2 "${extra[@]}" &
run t1x2 --engine timely --workers 2 "${extra[@]}" &
for p in 0 1; do
    run "lo$p" --engine timely --workers 1 --processes 2 --process "$p" --hostfile "$out/hosts-lo" "${extra[@]}" &
    run "two$p" --engine timely --workers 1 --processes 2 --process "$p" --hostfile "$out/hosts-two" "${extra[@]}" &
    run "spill$p" --engine timely --workers 1 --processes 2 --process "$p" --hostfile "$out/hosts-spill" \
        --spill-dir "$out/spill" --frontier-memory "${FRONTIER_MEMORY:-8M}" "${extra[@]}" &
done
wait
echo "done $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$out" <<'EOF'
import json, re, sys, pathlib
out = pathlib.Path(sys.argv[1])
def timing(name):
    t = (out / f"{name}.time").read_text()
    get = lambda k: re.search(re.escape(k) + r": (.*)", t).group(1)
    return float(get("User time (seconds)")) + float(get("System time (seconds)")), int(get("Maximum resident set size (kbytes)")) // 1024
def report(name):
    text = (out / f"{name}.json").read_text()
    return json.loads(text[text.find("{"):]) if "{" in text else None
print("| run | unique | generated | checker s | unique/s | CPU-s (all processes) | unique/CPU-s | peak RSS per process (MB) |")
print("|---|---|---|---|---|---|---|---|")
for label, names in [("DFS, 2 threads", ["dfs"]), ("timely 1 x 2 workers", ["t1x2"]),
                     ("timely 2 x 1, 127.0.0.1", ["lo0", "lo1"]), ("timely 2 x 1, 127.0.0.1 + .2", ["two0", "two1"]),
                     ("timely 2 x 1, 127.0.0.1, spilled", ["spill0", "spill1"])]:
    r = report(names[0])
    times = [timing(n) for n in names]
    cpu = sum(c for c, _ in times)
    print(f"| {label} | {r['unique_states']:,} | {r['states']:,} | {r['seconds']:.1f} | "
          f"{r['unique_states_per_second']:,.0f} | {cpu:.1f} | {r['unique_states'] / cpu:,.0f} | "
          f"{' / '.join(str(m) for _, m in times)} |")
EOF
