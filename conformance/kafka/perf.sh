#!/usr/bin/env bash
# Performance side by side with Apache Kafka's controllers (issue #17): builds the release `kraft`, resolves the
# pinned Kafka jars (as run.sh does; cached in ~/.m2), compiles the Java driver and runs PerfMain, which starts
# three Kafka controllers and three `kraft node`s (plus an observer each) on loopback and prints a Markdown table
# (kraft, Kafka, kraft / Kafka). Not part of CI: it takes ~12 min (full) or ~4 min (--quick) and its figures
# depend on the machine's load. Usage: conformance/kafka/perf.sh [--quick]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
for tool in java mvn cargo; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "kafka perf: cannot run: '$tool' is not installed (needs Java 17+, Maven 3.8+, cargo)" >&2
        exit 3
    fi
done
cd "$root"
cargo build -q --release -p kraft --bin kraft
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
kraft_bin="$target_dir/release/kraft"
cd "$here"
rm -rf target/lib target/classpath.txt
mvn -B -q compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt 2>&1 | sed "s/\x1b\[[0-9;]*m//g"
work="$(mktemp -d "${TMPDIR:-/tmp}/kafka-perf.XXXXXX")"
exec java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "target/classes:$(cat target/classpath.txt)" \
    kraft.interop.PerfMain --kraft "$kraft_bin" --work "$work" "$@"
