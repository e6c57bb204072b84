#!/usr/bin/env bash
# Runs the READMEs' quick examples as written (the fast ones; the long runs, Kafka distributions and
# browsers are left to their own scripts) and checks their exit codes and key output. Uses the debug
# `kraft` that `cargo test --workspace` built; the README's release binary takes the same arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

step() { echo "== readme example: $*"; }
# expect CODE CMD...: runs CMD, fails unless it exits with CODE; its output goes to $tmp/out.
expect() {
  local want=$1 got=0
  shift
  "$@" >"$tmp/out" 2>&1 || got=$?
  if [ "$got" != "$want" ]; then
    tail -20 "$tmp/out"
    echo "readme example failed: \`$*\` exited $got, expected $want"
    exit 1
  fi
}
# has TEXT: the last example's output contains TEXT.
has() {
  grep -q -- "$1" "$tmp/out" || {
    tail -20 "$tmp/out"
    echo "readme example failed: output lacks '$1'"
    exit 1
  }
}

cargo build -q -p model -p conformance -p kraft --bins
K=target/debug/kraft

# README.md, protocol designers; model/README.md.
step "model check --bug swap-voter (exit 1, a counterexample)"
expect 1 cargo run -q -p model -- check --bug swap-voter
has "VIOLATED"
step "model check --bug swap-voter --harm (exit 1, a rolled-back voter set)"
expect 1 cargo run -q -p model -- check --bug swap-voter --harm
has "CommittedVoterSetDurable"
step "model traces --depth 6"
expect 0 cargo run -q -p model -- traces --depth 6 --out "$tmp/traces.jsonl"
test -s "$tmp/traces.jsonl"
step "model traces --depth 40 --random 1000 --seed 7"
expect 0 cargo run -q -p model -- traces --depth 40 --random 1000 --seed 7 --out "$tmp/walks.jsonl"
test -s "$tmp/walks.jsonl"
step "model simulate --seed 1 --runs 10000 --depth 60 --max-log 8 --max-epoch 4"
expect 0 cargo run -q -p model -- simulate --seed 1 --runs 10000 --depth 60 --max-log 8 --max-epoch 4

# README.md, CI pipelines; conformance/README.md.
step "conformance --only random --walks 20"
expect 0 cargo run -q -p conformance -- --only random --walks 20
has "0 divergences"
step "conformance --only random --seed 7 --walks 1"
expect 0 cargo run -q -p conformance -- --only random --seed 7 --walks 1

# README.md, implementers: the black-box kit against kraft.
step "conformance node --report kit.jsonl"
expect 0 cargo run -q -p conformance -- node --report "$tmp/kit.jsonl"
has "0 divergences"
test -s "$tmp/kit.jsonl"

# README.md, operators; impl/README.md.
step "kraft --help"
expect 0 "$K" --help
has "add-voter"
step "kraft format, then kraft decode snapshot of the bootstrap checkpoint"
IC="1@127.0.0.1:9091:ILZ5MPTeRWakmJu99uBJCA,2@127.0.0.1:9092:Z3aMqVyJQdCKqa5TLPiUqw,3@127.0.0.1:9093:o3B7Ip1bSHmXDtHdoSmh9g"
expect 0 "$K" format --data-dir "$tmp/d1" --cluster-id demo --node-id 1 --initial-controllers "$IC"
expect 0 "$K" decode snapshot "$tmp/d1/__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
has "ILZ5MPTeRWakmJu99uBJCA"
step "kraft format refuses a formatted directory (exit 6)"
expect 6 "$K" format --data-dir "$tmp/d1" --cluster-id demo --node-id 1 --initial-controllers "$IC"
step "kraft format --config controller.properties --standalone (Kafka's file and options)"
printf '%s\n' process.roles=controller node.id=1 controller.listener.names=CONTROLLER \
  'listeners=CONTROLLER://127.0.0.1:9095' 'controller.quorum.bootstrap.servers=127.0.0.1:9095' \
  "log.dirs=$tmp/c1" >"$tmp/c1.properties"
expect 0 "$K" format --config "$tmp/c1.properties" --cluster-id demo --standalone
has "as node 1 (initial voter)"
step "a quorum from three controller.properties files: --standalone, --no-initial-controllers, auto-join"
for i in 1 2 3; do
  printf '%s\n' process.roles=controller node.id=$i controller.listener.names=CONTROLLER \
    "listeners=CONTROLLER://127.0.0.1:2909$((4 + i))" controller.quorum.bootstrap.servers=127.0.0.1:29095 \
    controller.quorum.auto.join.enable=true "log.dirs=$tmp/q$i" >"$tmp/q$i.properties"
done
expect 0 "$K" format --config "$tmp/q1.properties" --cluster-id demo --standalone
for i in 2 3; do
  expect 0 "$K" format --config "$tmp/q$i.properties" --cluster-id demo --no-initial-controllers
done
for i in 1 2 3; do
  "$K" node --config "$tmp/q$i.properties" >"$tmp/q$i.log" 2>&1 &
  pids+=($!)
done
ok=0
for _ in $(seq 1 40); do
  sleep 1
  "$K" describe --bootstrap-controller 127.0.0.1:29096 --status >"$tmp/out" 2>&1 || true
  line=$(grep '^CommittedVoters:' "$tmp/out" || true)
  case "$line" in *'"id": 1,'*) ;; *) continue ;; esac
  case "$line" in *'"id": 2,'*) ;; *) continue ;; esac
  case "$line" in *'"id": 3,'*) ok=1; break ;; esac
done
if [ "$ok" != 1 ]; then
  cat "$tmp/out" "$tmp/q2.log" | tail -20
  echo "readme example failed: nodes 2 and 3 did not auto-join within 40 s"
  exit 1
fi
step "kraft certs"
expect 0 "$K" certs --dir "$tmp/certs" --node-ids 1,2,3
test -s "$tmp/certs/admin.properties"
step "kraft describe with nothing listening (exit 3)"
expect 3 "$K" describe --bootstrap-controller 127.0.0.1:1 --status

# The README's local quorum (other ports than the README's 9091, so a developer's demo does not clash).
step "kraft cluster --nodes 3, then describe --status"
"$K" cluster --nodes 3 --dir "$tmp/kraft-demo" --base-port 29091 >"$tmp/cluster.log" 2>&1 &
pids+=($!)
ok=0
for _ in $(seq 1 30); do
  sleep 1
  if "$K" describe --bootstrap-controller 127.0.0.1:29091 --status >"$tmp/out" 2>&1; then ok=1; break; fi
done
if [ "$ok" != 1 ]; then
  cat "$tmp/out" "$tmp/cluster.log" | tail -20
  echo "readme example failed: the local quorum did not answer describe --status within 30 s"
  exit 1
fi
has "CommittedVoters:"
has "CurrentVoters:"
step "kraft describe --replication"
expect 0 "$K" describe --bootstrap-controller 127.0.0.1:29091,127.0.0.1:29092,127.0.0.1:29093 --replication
has "LogEndOffset"

echo "readme examples: ok"
