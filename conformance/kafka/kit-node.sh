#!/usr/bin/env bash
# The kit's node launcher for Apache Kafka 4.4.0 (`conformance node --node-script kit-node.sh`, used by
# kit.sh for its scenarios and tours): one KRaft controller, node 0, in directory DIR.
#   kit-node.sh format DIR PORT INITIAL_CONTROLLERS CLUSTER_ID   formats it with Kafka's StorageTool
#   kit-node.sh format DIR PORT - CLUSTER_ID DIRECTORY_ID        the same with --no-initial-controllers, under
#                                                                that directory id (the kit's auto-join node)
#   kit-node.sh start DIR PORT ELECTION_MS FETCH_MS              runs kafka.Kafka in the foreground (exec)
# Needs KIT_CLASSPATH (the harness classpath, set by kit.sh); KIT_FORMAT_ARGS as in kit.sh; KIT_NODE_PROPS
# (set by the kit for a scenario that needs them, e.g. leader-snapshot): extra controller properties.
set -euo pipefail
cmd="$1" dir="$2" port="$3"
: "${KIT_CLASSPATH:?set by kit.sh}"
# The request timeout is beyond any run, like the timers the kit does not wait for: the kit holds the
# controller's requests while a path goes on, and at Kafka's request timeout its network client drops
# the connection and sends the request again (README findings, 7), a timer the model does not have.
props() { # $1 = election timeout ms, $2 = fetch timeout ms
    mkdir -p "$dir/logs"
    cat > "$dir/controller.properties" <<PROPS
process.roles=controller
node.id=0
controller.listener.names=CONTROLLER
listeners=CONTROLLER://127.0.0.1:$port
listener.security.protocol.map=CONTROLLER:PLAINTEXT
controller.quorum.bootstrap.servers=127.0.0.1:$port
log.dirs=$dir/logs
metadata.max.idle.interval.ms=0
controller.quorum.election.timeout.ms=$1
controller.quorum.fetch.timeout.ms=$2
controller.quorum.request.timeout.ms=60000
PROPS
    # Properties of the scenario (the kit's scenarios::node_properties), one key=value a line.
    if [ -n "${KIT_NODE_PROPS:-}" ]; then printf '%s\n' "$KIT_NODE_PROPS" >> "$dir/controller.properties"; fi
}
case "$cmd" in
format)
    props 60000 60000
    if [ "$4" = - ]; then
        # StorageTool draws a random directory id; the kit names the node's key, so meta.properties
        # gets the one it was given.
        java -Xshare:auto -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
            -cp "$KIT_CLASSPATH" kafka.tools.StorageTool format \
            --cluster-id "$5" --config "$dir/controller.properties" --no-initial-controllers
        sed -i "s/^directory.id=.*/directory.id=$6/" "$dir/logs/meta.properties"
        grep -q "^directory.id=$6\$" "$dir/logs/meta.properties"
        exit 0
    fi
    # shellcheck disable=SC2086 # KIT_FORMAT_ARGS is a list of arguments
    exec java -Xshare:auto -XX:TieredStopAtLevel=1 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$KIT_CLASSPATH" kafka.tools.StorageTool format \
        --cluster-id "$5" --config "$dir/controller.properties" --initial-controllers "$4" \
        ${KIT_FORMAT_ARGS:-} ;;
start)
    props "$4" "$5"
    exec java -Xms64m -Xmx384m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=info -Dorg.slf4j.simpleLogger.showDateTime=true \
        -cp "$KIT_CLASSPATH" kafka.Kafka "$dir/controller.properties" ;;
*) echo "usage: $0 format DIR PORT INITIAL_CONTROLLERS|- CLUSTER_ID [DIRECTORY_ID] | start DIR PORT ELECTION_MS FETCH_MS" >&2; exit 2 ;;
esac
