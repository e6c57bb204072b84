# Sourced by run.sh and perf.sh: checks the tools, builds `kraft` in the given cargo profile, compiles the Java
# driver and lists the pinned Kafka jars (resolved by Maven into ~/.m2, so later runs are offline; the jars stay
# there: build-classpath lists them instead of copying ~100 MB into target/, and a CI run once ran out of disk
# on the copy). Usage: prepare_harness <label> <debug|release>; sets kraft_bin and classpath, leaves the shell
# in this directory. controller_classpath <version> prints the class path of that Kafka release's controller
# (controller/pom.xml: kafka.Kafka and its storage tool), resolved the same way.
prepare_harness() {
    local label="$1" profile="$2" here root tool java_major target_dir
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    root="$(cd "$here/../.." && pwd)"
    for tool in java mvn cargo; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "$label: cannot run: '$tool' is not installed (needs Java 17+, Maven 3.8+, cargo)" >&2
            exit 3
        fi
    done
    java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
    if [ "${java_major%%.*}" -lt 17 ] 2>/dev/null; then
        echo "$label: cannot run: Java $java_major found, Apache Kafka 4.x needs Java 17+" >&2
        exit 3
    fi
    cd "$root"
    if [ "$profile" = release ]; then
        cargo build -q --release -p kraft --bin kraft
    else
        cargo build -q -p kraft --bin kraft
    fi
    target_dir="$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
    kraft_bin="$target_dir/$profile/kraft"
    cd "$here"
    rm -rf target/lib target/classpath.txt
    mvn -B -q compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt 2>&1 | sed "s/\x1b\[[0-9;]*m//g"
    classpath="target/classes:$(cat target/classpath.txt)"
}

controller_classpath() {
    local version="$1" out
    out="$(pwd)/target/controller-classpath-$version.txt"
    mkdir -p target
    (cd controller && mvn -B -q dependency:build-classpath -Dkafka.version="$version" -Dmdep.outputFile="$out" 2>&1 \
        | sed "s/\x1b\[[0-9;]*m//g" >&2)
    cat "$out"
}

# kafka-python for scenario t, in a venv under ~/.cache (reused across runs; PyPI is asked only when the pinned
# version is not installed yet). Prints the interpreter's path; prints it even when the install failed, so the
# scenario fails on it, never skips.
KAFKA_PYTHON_VERSION=3.0.12
prepare_python() {
    local venv="${KRAFT_INTEROP_CACHE:-$HOME/.cache/kraft-interop}/kafka-python-$KAFKA_PYTHON_VERSION"
    if ! "$venv/bin/python" -c "import kafka, sys; sys.exit(kafka.__version__ != '$KAFKA_PYTHON_VERSION')" \
            >/dev/null 2>&1; then
        if ! command -v python3 >/dev/null 2>&1; then
            echo "kafka interop: python3 is not installed: scenario t will fail" >&2
        else
            rm -rf "$venv"
            { python3 -m venv "$venv" && "$venv/bin/pip" install -q "kafka-python==$KAFKA_PYTHON_VERSION"; } >&2 \
                || echo "kafka interop: cannot install kafka-python $KAFKA_PYTHON_VERSION: scenario t will fail" >&2
        fi
    fi
    echo "$venv/bin/python"
}

# Prometheus for scenario pm: Debian's package (2.42), installed when missing and this runs as root with apt-get (as
# CI does). The package's service never starts: policy-rc.d refuses every start during the install (only when
# no policy-rc.d exists, and removed after); the scenario runs /usr/bin/prometheus itself with its own
# configuration, data directory and loopback port. Prints nothing; a missing binary fails scenario pm.
prepare_prometheus() {
    if [ -x "${PROMETHEUS:-/usr/bin/prometheus}" ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        return 0
    fi
    local policy=/usr/sbin/policy-rc.d created=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && created=1
    fi
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; } \
        >&2 || echo "kafka interop: cannot install prometheus: scenario pm will fail" >&2
    if [ -n "$created" ]; then rm -f "$policy"; fi
}
