package kraft.interop;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;


/**
 * (n) A {@code kraft} node from a {@code --no-initial-controllers} directory joins a Kafka quorum:
 * three Apache Kafka controllers elect a leader; Kafka's {@code kafka-storage format --no-initial-controllers}
 * formats the {@code kraft} node's directory (a bootstrap snapshot with KRaftVersion 1 and no voter set);
 * {@code kraft node --bootstrap-servers} (Kafka's {@code controller.quorum.bootstrap.servers}) starts it as an
 * observer that asks the bootstrap servers, follows the leader they name, fetches Kafka's log and learns the voter
 * set from the replicated VotersRecord (its DescribeCluster then lists the voters); Kafka's {@code add-controller}
 * makes it a voter; kill -9 of the Kafka leader leaves 3 of 4 voters, so the next leader needs its vote; kill -9
 * and restart of the {@code kraft} node (it starts from its log, voters known); the end checks.
 */
record NoInitialControllersScenario(Report report, Tools tools, Path work, String kraft) {
    private static final int OURS = 5;

    void run() throws Exception {
        MixedQuorum.runScenario(report, tools, work, kraft, "n", m -> steps(m, m.kafka, m.ours));
    }

    private void steps(MixedQuorum m, KafkaQuorum kafka, KraftQuorum ours) throws Exception {
        kafka.startInitial(1, 2, 3);
        int[] first = m.awaitLeader(-1, "the Kafka controllers elect a leader");

        // 1. The kraft node starts on a --no-initial-controllers directory and finds the quorum.
        String bootstrap = kafka.ports.keySet().stream().map(kafka::address).collect(Collectors.joining(","));
        ours.startNoInitialControllers(OURS, kafka.clusterId, bootstrap, "--election-timeout-ms", "1000",
            "--fetch-timeout-ms", "5000");
        m.awaitCaughtUp(kafka.address(first[0]), OURS, "the kraft observer (no initial voters) fetches Kafka's log"
            + " to the leader's end offset");
        report.equal("the kraft observer learned the voters from the replicated VotersRecord (its DescribeCluster)",
            List.of(1, 2, 3, OURS), describeClusterIds(ours.address(OURS)));

        // 2. Kafka's add-controller makes it a voter.
        ours.addWithKafkaTool(report, OURS, kafka.address(first[0]), "Kafka's add-controller adds the kraft node");
        int[] now = m.awaitLeader(-1, "a leader after add-controller");
        report.equal("voters after add-controller (current)", List.of(1, 2, 3, OURS), m.currentVoters(m.address(now[0])));
        m.awaitAllCaughtUp(m.address(now[0]), 3, "the kraft voter and the Kafka followers replicate; HW = end offset");
        m.sample("n: kraft node added", now[0]);

        // 3. kill -9 of the leader: 3 of 4 voters alive, so the kraft node takes part in the election.
        int killed = now[0];
        m.kill(killed);
        int[] next = m.awaitLeader(now[1], "after kill -9 of leader " + killed + ": a new leader with 3 of 4 voters"
            + " alive (so the kraft node voted)");
        m.restart(killed);
        m.awaitAllCaughtUp(m.address(next[0]), 3, "the restarted controller " + killed + " and every voter reach"
            + " leader " + next[0] + "'s end offset");
        m.sample("n: after the election", next[0]);

        // 4. kill -9 and restart of the kraft node: it starts from its own log (voters known) and catches up.
        ours.kill(OURS);
        int[] last = next[0] == OURS ? m.awaitLeader(next[1], "after kill -9 of the kraft leader: a Kafka leader")
            : next;
        ours.restart(OURS);
        m.awaitCaughtUp(m.address(last[0]), OURS, "the restarted kraft node catches up from leader " + last[0]);
    }

    /**
     * The node ids in one DescribeCluster v1 answer (controller endpoints) of the node at {@code address}
     * itself: a {@code kraft} node lists the voters of its latest voter set and itself.
     */
    private static List<Integer> describeClusterIds(String address) throws Exception {
        String[] hostPort = address.split(":");
        var request = new org.apache.kafka.common.requests.DescribeClusterRequest.Builder(
            new org.apache.kafka.common.message.DescribeClusterRequestData().setEndpointType((byte) 2))
            .build((short) 1);
        var frame = request.serializeWithHeader(new org.apache.kafka.common.requests.RequestHeader(
            org.apache.kafka.common.protocol.ApiKeys.DESCRIBE_CLUSTER, (short) 1, "kraft-interop", 1));
        try (java.net.Socket sock = new java.net.Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            sock.setSoTimeout(5000);
            var out = new java.io.DataOutputStream(sock.getOutputStream());
            out.writeInt(frame.remaining());
            out.write(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
            out.flush();
            var in = new java.io.DataInputStream(sock.getInputStream());
            byte[] payload = new byte[in.readInt()];
            in.readFully(payload);
            var buf = java.nio.ByteBuffer.wrap(payload);
            org.apache.kafka.common.requests.ResponseHeader.parse(buf,
                org.apache.kafka.common.protocol.ApiKeys.DESCRIBE_CLUSTER.responseHeaderVersion((short) 1));
            var d = new org.apache.kafka.common.message.DescribeClusterResponseData(
                new org.apache.kafka.common.protocol.ByteBufferAccessor(buf), (short) 1);
            return d.brokers().stream().map(b -> b.brokerId()).sorted().toList();
        }
    }

}
