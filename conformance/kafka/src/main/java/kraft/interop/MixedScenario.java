package kraft.interop;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;


/**
 * (g) One quorum of both kinds: three Apache Kafka controllers elect a leader; a
 * {@code kraft} node whose directory Kafka's {@code kafka-storage format --initial-controllers} formatted joins as an
 * observer and fetches Kafka's log; Kafka's
 * {@code add-controller} makes it a voter; kill -9 of the Kafka leader: the {@code kraft} node is elected with
 * Kafka's votes (3 of 4 voters alive: every live voter took part) and replicates to the Kafka followers. Which
 * node wins is fixed by KIP-996's rules, not by luck: the Kafka controllers (3 s fetch, 6 s election timeout)
 * time out first and ask for pre-votes, which the {@code kraft} node refuses while its own 5 s fetch timeout runs
 * (it has fetched from the leader); their pre-vote rounds last at least 6 s, so when the {@code kraft} node asks
 * at 5 s both grant. The killed controller
 * restarts and catches up from it; kill -9 of the {@code kraft} leader: the Kafka controllers elect one of theirs;
 * the {@code kraft} node restarts and follows it. Throughout: one leader per epoch, as reported by either kind.
 * While the {@code kraft} node leads, its log and each Kafka follower's log hold the same batches, byte for byte,
 * below the HW (Kafka's batches it fetched as an observer kept their timestamps, keys and headers).
 */
final class MixedScenario {
    private static final int OURS = 5;
    private final Report report;
    private final Tools tools;
    private final Scenarios scenarios;
    private final Path work;
    private final String kraft;

    MixedScenario(Report report, Tools tools, Scenarios scenarios, Path work, String kraft) {
        this.report = report;
        this.tools = tools;
        this.scenarios = scenarios;
        this.work = work;
        this.kraft = kraft;
    }

    void run() throws Exception {
        Map<String, String> slow = Map.of("controller.quorum.election.timeout.ms", "6000",
            "controller.quorum.fetch.timeout.ms", "3000");
        try (MixedQuorum m = new MixedQuorum(report, tools, work, kraft, slow)) {
            try {
                steps(m, m.kafka, m.ours);
                EndChecks.run(m, "g end");
            } finally {
                report.check("Kafka controllers still running at the end", m.kafka.allAlive(), "see " + m.kafka.dir);
                report.check("the kraft node still running at the end", m.ours.allAlive(), "see " + m.ours.dir);
            }
        }
    }

    private void steps(MixedQuorum m, KafkaQuorum kafka, KraftQuorum ours) throws Exception {
        kafka.startInitial(1, 2, 3);
        int[] first = m.awaitLeader(-1, "the Kafka controllers elect a leader");

        // 1. The kraft node, its directory formatted by Kafka's kafka-storage (Kafka's meta.properties and
        //    bootstrap snapshot) from the properties file this harness writes for a Kafka controller, runs from
        //    that same file (its timeouts given as flags, which win), joins as an observer and fetches Kafka's
        //    records.
        Path config = ours.dir.resolve("kafka-controller-" + OURS + ".properties");
        kafka.writeConfig(OURS, ours.reservePort(OURS), ours.dataDir(OURS), config);
        ours.startFromKafkaConfig(OURS, config, kafka.clusterId, kafka.initialControllers(), "--election-timeout-ms",
            "1000", "--fetch-timeout-ms", "5000");
        String unused = java.nio.file.Files.readAllLines(ours.nodeLog(OURS)).stream()
            .filter(l -> l.contains("not used by this node")).collect(Collectors.joining("\n"));
        report.check("kraft node --config <Kafka controller properties>: one start-up line lists the unused keys",
            unused.lines().count() == 1 && unused.contains("metadata.max.idle.interval.ms"), unused);
        m.awaitCaughtUp(kafka.address(first[0]), OURS, "the kraft observer fetches Kafka's log to the leader's end offset");

        // 2. Kafka's add-controller, sent to the Kafka leader, makes it a voter (Kafka's leader checks it with
        //    ApiVersions first).
        ours.addWithKafkaTool(report, OURS, kafka.address(first[0]), "Kafka's add-controller adds the kraft node");
        awaitVoters(kafka.address(first[0]), List.of(1, 2, 3, OURS));
        m.awaitCaughtUp(kafka.address(first[0]), OURS, "the kraft voter is at the Kafka leader's end offset");
        m.sample("g: Kafka leader with a kraft voter", first[0]);
        scenarios.compareStatus("Kafka leader with a kraft voter: describe --status", kafka.address(first[0]),
            kafka.address(first[0]), false);

        // 3. kill -9 of the Kafka leader: an election across implementations.
        kafka.kill(first[0]);
        int[] second = m.awaitLeader(first[1], "after kill -9 of Kafka leader " + first[0]
            + ": a new leader with 3 of 4 voters alive (so every live voter, the kraft node too, took part)");
        report.equal("the kraft node is elected (it asks for pre-votes while Kafka's rounds are open)", OURS,
            second[0]);

        // 4. The kraft leader replicates to the Kafka followers and commits.
        if (second[0] == OURS) {
            m.awaitAllCaughtUp(ours.address(OURS), 2, "Kafka followers replicate the kraft leader's log; HW = its end offset");
            scenarios.compareStatus("kraft leader with Kafka followers: describe --status", ours.address(OURS),
                ours.address(OURS), true);
            m.sample("g: kraft leader with Kafka followers", OURS);
            long hw = m.highWatermark(ours.address(OURS));
            for (int id : kafka.ports.keySet()) {
                if (id != first[0]) m.compareLogs("kraft leader and Kafka follower " + id, ours.segment(OURS),
                    kafka.segment(id), hw);
            }
        }

        // 5. The killed Kafka controller restarts and catches up from whoever leads now.
        kafka.restart(first[0]);
        String leaderAddress = second[0] == OURS ? ours.address(OURS) : kafka.address(second[0]);
        m.awaitCaughtUp(leaderAddress, first[0], "restarted Kafka controller " + first[0] + " catches up from leader "
            + second[0]);
        if (second[0] == OURS) {
            m.compareLogs("kraft leader and restarted Kafka controller " + first[0], ours.segment(OURS),
                kafka.segment(first[0]), m.highWatermark(ours.address(OURS)));
        }

        // 6. kill -9 of the kraft leader: the Kafka controllers elect one of theirs.
        if (second[0] == OURS) {
            ours.kill(OURS);
            int[] third = m.awaitLeader(second[1], "after kill -9 of the kraft leader: a new leader");
            report.check("a Kafka controller leads after the kraft leader is gone", third[0] != OURS && third[0] > 0,
                "leader " + third[0]);
            // 7. The kraft node restarts and follows the Kafka leader again.
            ours.restart(OURS);
            m.awaitCaughtUp(kafka.address(third[0]), OURS, "the restarted kraft node follows Kafka leader " + third[0]
                + " to its end offset");
            scenarios.compareStatus("Kafka leader again: describe --status", kafka.address(third[0]),
                kafka.address(third[0]), false);
        }
    }

    private void awaitVoters(String addr, List<Integer> ids) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        List<Integer> got = List.of();
        while (System.currentTimeMillis() < deadline) {
            got = Scenarios.quorum(addr).voters().stream().map(v -> v.replicaId()).sorted().toList();
            if (got.equals(ids)) break;
            Thread.sleep(300);
        }
        report.equal("Kafka's Admin: voters after add-controller", ids, got);
    }
}
