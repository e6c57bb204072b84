#!/usr/bin/env bash
# Apache Kafka as the oracle: builds `kraft`, resolves the pinned Kafka jars with Maven (cached in
# ~/.m2, so later runs are offline), compiles the Java driver and runs every scenario. The last line is
#   kafka interop: S scenarios, C checks, D divergences (Apache Kafka <version>)
# and the exit status is non-zero iff D > 0 (or the harness could not run at all).
# --controller-version V runs the Kafka controllers (and the storage tool formatting their directories) of
# release V, e.g. 4.0.1, while the driver and Kafka's client tools stay on pom.xml's release; the other
# arguments go to the driver (--only g,h ...).
set -euo pipefail
. "$(dirname "$0")/prepare.sh"
controller_version=""
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --controller-version) controller_version="$2"; shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
prepare_harness "kafka interop" debug
prepare_prometheus
args+=(--python "$(prepare_python)")
if [ -n "$controller_version" ]; then
    args+=(--controller-classpath "$(controller_classpath "$controller_version")")
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/kafka-interop.XXXXXX")"
exec java -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$classpath" kraft.interop.Main --kraft "$kraft_bin" --work "$work" ${args[@]+"${args[@]}"}
