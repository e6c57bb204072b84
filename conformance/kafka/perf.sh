#!/usr/bin/env bash
# Performance side by side with Apache Kafka's controllers: builds the release `kraft`, resolves the
# pinned Kafka jars (as run.sh does; cached in ~/.m2), compiles the Java driver and runs PerfMain, which starts
# three Kafka controllers and three `kraft node`s (plus an observer each) on loopback and prints a Markdown table
# (kraft, Kafka, kraft / Kafka). Not part of CI: it takes ~12 min (full) or ~4 min (--quick) and its figures
# depend on the machine's load. Usage: conformance/kafka/perf.sh [--quick] [--snapshots] [--rows 1,2,3,4,5]
# (--rows: measure only the listed rows of the table, e.g. `--rows 2` for failover; the quorums start as in a full
# run either way. --snapshots: both quorums with interop scenario p's snapshot settings. Row 5, a new voter
# catching up from a leader's snapshot of at least 64 MiB, builds its own quorums (PerfSnapshot.java) and is not
# in the default set: `--rows 5`, about 10 min).
set -euo pipefail
. "$(dirname "$0")/prepare.sh"
prepare_harness "kafka perf" release
work="$(mktemp -d "${TMPDIR:-/tmp}/kafka-perf.XXXXXX")"
exec java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$classpath" \
    kraft.interop.PerfMain --kraft "$kraft_bin" --work "$work" "$@"
