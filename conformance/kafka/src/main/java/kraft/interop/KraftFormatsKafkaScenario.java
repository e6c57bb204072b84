package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.kafka.common.Uuid;

/**
 * (m) {@code kraft format} formats an Apache Kafka controller's directory: one quorum of a Kafka
 * controller (1) and two {@code kraft node}s (5, 6), every directory written by {@code kraft format
 * --initial-controllers} with the same three voters (our meta.properties and our bootstrap snapshot
 * {@code 00000000000000000000-0000000000.checkpoint}: header, KRaftVersion(1), Voters, footer; no metadata
 * records). The three elect a leader and replicate; the leader's seat is steered to the Kafka controller (on
 * activation it appends its own bootstrap {@code metadata.version}, which our snapshot does not carry) and back to
 * a {@code kraft} node; the end checks.
 */
record KraftFormatsKafkaScenario(Report report, Tools tools, Path work, String kraft) {
    private static final int KAFKA = 1;
    private static final List<Integer> KRAFT = List.of(5, 6);

    void run() throws Exception {
        MixedQuorum.runScenario(report, tools, work, kraft, "m", m -> steps(m));
    }

    private void steps(MixedQuorum m) throws Exception {
        String clusterId = Uuid.randomUuid().toString();
        m.kafka.reservePort(KAFKA);
        for (int id : KRAFT) m.ours.reservePort(id);
        String initial = KAFKA + "@" + m.kafka.address(KAFKA) + ":" + Uuid.randomUuid() + "," + KRAFT.stream()
            .map(id -> id + "@" + m.ours.address(id) + ":" + Uuid.randomUuid()).collect(Collectors.joining(","));

        // 1. kraft format writes the Kafka controller's directory; Kafka starts on it.
        Files.createDirectories(m.kafka.dir);
        Procs.Result f = tools.kraft("format", "--data-dir", m.kafka.logDir(KAFKA).toString(), "--cluster-id",
            clusterId, "--node-id", Integer.toString(KAFKA), "--initial-controllers", initial);
        report.check("kraft format writes the Kafka controller's directory (exit 0)", f.code() == 0, f.toString());
        m.kafka.clusterId = clusterId;
        m.kafka.bootstrapServers = m.kafka.address(KAFKA) + ","
            + KRAFT.stream().map(m.ours::address).collect(Collectors.joining(","));
        m.kafka.startPreformatted(KAFKA);
        for (int id : KRAFT) m.ours.startJoiner(id, clusterId, initial, KafkaJoinsScenario.KRAFT_TIMEOUTS);

        // 2. The three elect a leader and replicate.
        int[] first = m.awaitLeader(-1, "a Kafka controller and two kraft nodes, all formatted by kraft format,"
            + " elect a leader");
        m.awaitAllCaughtUp(m.address(first[0]), 2, "every replica at leader " + first[0] + "'s end offset; HW = end"
            + " offset");
        report.equal("voters (current) as kraft format wrote them", List.of(KAFKA, 5, 6),
            m.currentVoters(m.address(first[0])));
        m.sample("m: first leader", first[0]);

        // 3. The Kafka controller leads: it writes its own bootstrap metadata.version; the kraft nodes follow it.
        int[] kafkaLed = m.steer(false, 6, "m");
        if (m.isKraft(kafkaLed[0])) {
            report.check("the Kafka controller leads once (steered by kill -9)", false, "leader " + kafkaLed[0]);
        } else {
            m.awaitAllCaughtUp(m.address(KAFKA), 2, "the kraft nodes follow the Kafka leader; HW = end offset");
            String log = Files.readString(m.kafka.log(KAFKA));
            report.check("the Kafka leader appends its bootstrap metadata.version to the kraft-formatted log",
                log.contains("bootstrap record"), "no 'bootstrap record' line in " + m.kafka.log(KAFKA));
            m.sample("m: Kafka leader", KAFKA);
            long hw = m.highWatermark(m.address(KAFKA));
            for (int id : KRAFT) m.compareLogs("Kafka leader and kraft follower " + id, m.segment(KAFKA),
                m.segment(id), hw);
        }

        // 4. A kraft node leads again and replicates to the Kafka follower.
        int[] kraftLed = m.steer(true, 6, "m");
        report.check("a kraft node leads again (steered by kill -9)", m.isKraft(kraftLed[0]), "leader " + kraftLed[0]);
        m.awaitAllCaughtUp(m.address(kraftLed[0]), 2, "the Kafka follower replicates the kraft leader; HW = end offset");
        m.sample("m: kraft leader", kraftLed[0]);
    }
}
