#!/usr/bin/env bash
# Apache Kafka as the oracle: builds `kraft`, resolves the pinned Kafka jars with Maven (cached in
# ~/.m2, so later runs are offline), compiles the Java driver and runs every scenario. The last line is
#   kafka interop: S scenarios, C checks, D divergences (Apache Kafka <version>)
# and the exit status is non-zero iff D > 0 (or the harness could not run at all).
set -euo pipefail
. "$(dirname "$0")/prepare.sh"
prepare_harness "kafka interop" debug
work="$(mktemp -d "${TMPDIR:-/tmp}/kafka-interop.XXXXXX")"
exec java -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$classpath" kraft.interop.Main --kraft "$kraft_bin" --work "$work" "$@"
