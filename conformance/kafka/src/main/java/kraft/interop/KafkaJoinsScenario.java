package kraft.interop;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.kafka.common.Uuid;

/**
 * (h) A Kafka controller joins a {@code kraft}-led quorum: three {@code kraft node}
 * processes, formatted by {@code kraft format} as the initial voters, elect a leader; an Apache Kafka controller
 * formatted by Kafka's {@code kafka-storage format --no-initial-controllers} with
 * {@code controller.quorum.bootstrap.servers} = the {@code kraft} nodes starts as an observer and fetches their
 * log; {@code kraft add-voter} makes it a voter; kill -9 of the {@code kraft} leader leaves 3 of 4 voters, so the
 * next leader needs the Kafka controller's pre-vote and vote; the killed node restarts and catches up;
 * {@code kraft remove-voter} removes the Kafka controller (a self-removal if it leads by then); the end checks.
 */
record KafkaJoinsScenario(Report report, Tools tools, Path work, String kraft) {
    private static final int KAFKA = 1;
    private static final List<Integer> KRAFT = List.of(5, 6, 7);

    /** The kraft nodes' timeouts: short, so a kraft node normally wins; Kafka's are the (g) ones. */
    static final String[] KRAFT_TIMEOUTS = {"--election-timeout-ms", "1000", "--fetch-timeout-ms", "2000"};
    static final Map<String, String> KAFKA_TIMEOUTS = Map.of("controller.quorum.election.timeout.ms", "6000",
        "controller.quorum.fetch.timeout.ms", "3000");

    /** Formats {@code ids} with {@code kraft format} as the initial voters of {@code clusterId} and starts them. */
    static void startKraftVoters(KraftQuorum ours, String clusterId, List<Integer> ids) throws Exception {
        for (int id : ids) ours.reservePort(id);
        String initial = ids.stream().map(id -> id + "@" + ours.address(id) + ":" + Uuid.randomUuid())
            .collect(Collectors.joining(","));
        for (int id : ids) ours.startJoiner(id, clusterId, initial, KRAFT_TIMEOUTS);
    }

    void run() throws Exception {
        MixedQuorum.runScenario(report, tools, work, kraft, "h", m -> steps(m));
    }

    private void steps(MixedQuorum m) throws Exception {
        String clusterId = Uuid.randomUuid().toString();
        startKraftVoters(m.ours, clusterId, KRAFT);
        int[] first = m.awaitLeader(-1, "the kraft nodes elect a leader");
        m.sample("h: kraft leader, kraft voters", first[0]);

        // 1. A Kafka controller formatted as Kafka formats a joiner, pointing at the kraft quorum.
        m.kafka.clusterId = clusterId;
        m.kafka.bootstrapServers = KRAFT.stream().map(m.ours::address).collect(Collectors.joining(","));
        m.kafka.startObserver(KAFKA);
        Uuid dir = m.kafka.directoryIds.get(KAFKA);
        m.awaitCaughtUp(m.address(first[0]), KAFKA, "the Kafka controller fetches the kraft leader's log as an"
            + " observer to its end offset");

        // 2. kraft add-voter makes it a voter (sent to any kraft node; the CLI finds the leader).
        Procs.Result add = tools.kraft("add-voter", "--bootstrap-controller", m.ours.address(KRAFT.get(1)),
            "--node-id", Integer.toString(KAFKA), "--directory-id=" + dir, "--endpoint",
            m.kafka.address(KAFKA), "--timeout-ms", "30000");
        report.check("kraft add-voter adds the Kafka controller (exit 0)", add.code() == 0, add.toString());
        int[] now = m.awaitLeader(-1, "a leader after add-voter");
        report.equal("voters after add-voter (current)", List.of(KAFKA, 5, 6, 7), m.currentVoters(m.address(now[0])));
        m.awaitAllCaughtUp(m.address(now[0]), 3, "the Kafka voter and the kraft followers replicate; HW = end offset");
        m.sample("h: Kafka controller added", now[0]);
        m.compareLogs("kraft leader and the Kafka voter", m.segment(now[0]), m.segment(KAFKA),
            m.highWatermark(m.address(now[0])));

        // 3. kill -9 of the leader: 3 of 4 voters alive, so the Kafka controller's vote is needed.
        int killed = now[0];
        m.kill(killed);
        int[] next = m.awaitLeader(now[1], "after kill -9 of leader " + killed + ": a new leader with 3 of 4 voters"
            + " alive (so the Kafka controller voted)");
        m.restart(killed);
        m.awaitAllCaughtUp(m.address(next[0]), 3, "the restarted node " + killed + " and every voter reach leader "
            + next[0] + "'s end offset; HW = end offset");
        m.sample("h: after the election", next[0]);

        // 4. kraft remove-voter removes the Kafka controller.
        Procs.Result remove = tools.kraft("remove-voter", "--bootstrap-controller", m.ours.address(KRAFT.get(2)),
            "--node-id", Integer.toString(KAFKA), "--timeout-ms", "30000");
        report.check("kraft remove-voter removes the Kafka controller (exit 0)", remove.code() == 0, remove.toString());
        int[] last = m.awaitLeader(-1, "a leader after remove-voter");
        report.equal("voters after remove-voter (current)", KRAFT, m.currentVoters(m.address(last[0])));
        m.sample("h: Kafka controller removed", last[0]);
    }
}
