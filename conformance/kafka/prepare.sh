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
