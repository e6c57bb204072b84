#!/usr/bin/env bash
# Apache Kafka as the oracle (issue #12): builds `kraft`, resolves the pinned Kafka jars with Maven (cached in
# ~/.m2, so later runs are offline), compiles the Java driver and runs every scenario. The last line is
#   kafka interop: S scenarios, C checks, D divergences (Apache Kafka <version>)
# and the exit status is non-zero iff D > 0 (or the harness could not run at all).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
for tool in java mvn cargo; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "kafka interop: cannot run: '$tool' is not installed (needs Java 17+, Maven 3.8+, cargo)" >&2
        exit 3
    fi
done
java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
if [ "${java_major%%.*}" -lt 17 ] 2>/dev/null; then
    echo "kafka interop: cannot run: Java $java_major found, Apache Kafka 4.x needs Java 17+" >&2
    exit 3
fi
cd "$root"
cargo build -q -p kraft --bin kraft
target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
kraft_bin="$target_dir/debug/kraft"
cd "$here"
# The jars stay in ~/.m2: build-classpath lists them instead of copying ~100 MB into target/ (a CI run once ran
# out of disk on the copy).
rm -rf target/lib target/classpath.txt
mvn -B -q compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt 2>&1 | sed "s/\x1b\[[0-9;]*m//g"
work="$(mktemp -d "${TMPDIR:-/tmp}/kafka-interop.XXXXXX")"
exec java -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "target/classes:$(cat target/classpath.txt)" kraft.interop.Main --kraft "$kraft_bin" --work "$work"
