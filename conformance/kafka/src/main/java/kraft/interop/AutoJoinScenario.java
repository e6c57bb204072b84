package kraft.interop;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.kafka.common.Uuid;

/**
 * Auto-join (KIP-1186, {@code controller.quorum.auto.join.enable}) both ways, with Kafka's (g) timeouts.
 * (w) Three {@code kraft node}s formatted by {@code kraft format} elect a leader; an Apache Kafka controller
 * formatted with {@code --no-initial-controllers} and started with auto-join on adds itself: Kafka's
 * {@code kafka-metadata-quorum describe --status} and {@code kraft describe --status} list it among the voters,
 * CurrentVoters and CommittedVoters. (x) Three Kafka controllers elect a leader; a {@code kraft node --auto-join} on
 * a {@code --no-initial-controllers} directory adds itself: Kafka's tool and ours list it as a voter; kill -9 of the
 * leader leaves 3 of 4 voters, so the next leader needs its vote. Both end with the end checks.
 */
record AutoJoinScenario(Report report, Tools tools, Path work, String kraft) {
    private static final int KAFKA = 1;
    private static final List<Integer> KRAFT = List.of(5, 6, 7);
    private static final int OURS = 5;
    /** Auto-join waits one fetch timeout (3 s with (g)'s Kafka timeouts) after it follows, then asks. */
    private static final long JOIN_WITHIN_MS = 45_000;

    void runKafkaJoins() throws Exception {
        MixedQuorum.runScenario(report, tools, work.resolve("kafka-joins"), kraft, "w", m -> kafkaJoins(m));
    }

    void runKraftJoins() throws Exception {
        MixedQuorum.runScenario(report, tools, work.resolve("kraft-joins"), kraft, "x", m -> kraftJoins(m));
    }

    private void kafkaJoins(MixedQuorum m) throws Exception {
        String clusterId = Uuid.randomUuid().toString();
        KafkaJoinsScenario.startKraftVoters(m.ours, clusterId, KRAFT);
        int[] first = m.awaitLeader(-1, "u: the kraft nodes elect a leader");
        m.sample("u: kraft leader, kraft voters", first[0]);
        m.kafka.clusterId = clusterId;
        m.kafka.bootstrapServers = KRAFT.stream().map(m.ours::address).collect(Collectors.joining(","));
        m.kafka.extraConfig = id -> Map.of("controller.quorum.auto.join.enable", "true");
        long started = System.currentTimeMillis();
        m.kafka.startObserver(KAFKA);
        // Kafka's tool asks our nodes: a Kafka controller in a kraft-led quorum has no controller registrations
        // to name the active controller by (DescribeCluster).
        awaitVoter(m, KAFKA, List.of(KAFKA, 5, 6, 7), started, "u: the Kafka controller with auto-join",
            m.kafka.bootstrapServers);
        int[] now = m.awaitLeader(-1, "u: a leader after the auto-join");
        m.awaitAllCaughtUp(m.address(now[0]), 3, "u: the Kafka voter and the kraft followers replicate; HW = end offset");
        m.sample("u: Kafka controller joined", now[0]);
    }

    private void kraftJoins(MixedQuorum m) throws Exception {
        m.kafka.startInitial(1, 2, 3);
        int[] first = m.awaitLeader(-1, "v: the Kafka controllers elect a leader");
        String bootstrap = m.kafka.ports.keySet().stream().map(m.kafka::address).collect(Collectors.joining(","));
        long started = System.currentTimeMillis();
        m.ours.startNoInitialControllers(OURS, m.kafka.clusterId, bootstrap, "--auto-join", "--election-timeout-ms",
            "1000", "--fetch-timeout-ms", "3000");
        awaitVoter(m, OURS, List.of(1, 2, 3, OURS), started, "v: the kraft node with --auto-join", bootstrap);
        int[] now = m.awaitLeader(-1, "v: a leader after the auto-join");
        m.awaitAllCaughtUp(m.address(now[0]), 3, "v: the kraft voter and the Kafka followers replicate; HW = end offset");
        m.sample("v: kraft node joined", now[0]);
        // kill -9 of the leader: 3 of 4 voters alive, so the kraft node's vote counts.
        int killed = now[0];
        m.kill(killed);
        int[] next = m.awaitLeader(now[1], "v: after kill -9 of leader " + killed + ": a new leader with 3 of 4"
            + " voters alive (so the auto-joined kraft node voted)");
        m.restart(killed);
        m.awaitAllCaughtUp(m.address(next[0]), 3, "v: the restarted controller " + killed + " and every voter reach"
            + " leader " + next[0] + "'s end offset");
        m.sample("v: after the election", next[0]);
    }

    /**
     * Waits until Kafka's {@code describe --status} via {@code kafkaBootstrap} and ours via every node list {@code voters} as
     * CurrentVoters, and ours as CommittedVoters too; then checks each.
     */
    private void awaitVoter(MixedQuorum m, int joiner, List<Integer> voters, long started, String what,
            String kafkaBootstrap) throws Exception {
        long deadline = System.currentTimeMillis() + JOIN_WITHIN_MS;
        String bootstrap = m.addresses().stream().collect(Collectors.joining(","));
        Map<String, String> ours = Map.of();
        Map<String, String> kafka = Map.of();
        while (System.currentTimeMillis() < deadline) {
            Procs.Result o = tools.kraft("describe", "--bootstrap-controller", bootstrap, "--status");
            Procs.Result k = Tools.kafka("--bootstrap-controller", kafkaBootstrap, "describe", "--status");
            ours = Tools.statusFields(o.out());
            kafka = Tools.statusFields(k.out());
            if (sorted(ours.get("CurrentVoters")).equals(voters) && sorted(ours.get("CommittedVoters")).equals(voters)
                    && sorted(kafka.get("CurrentVoters")).equals(voters)) {
                break;
            }
            Thread.sleep(500);
        }
        long took = System.currentTimeMillis() - started;
        report.equal(what + " is a voter in kraft describe --status: CurrentVoters (" + took + " ms after its start)",
            voters, sorted(ours.get("CurrentVoters")));
        report.equal(what + " is a voter in kraft describe --status: CommittedVoters", voters,
            sorted(ours.get("CommittedVoters")));
        report.equal(what + " is a voter in Kafka's kafka-metadata-quorum describe --status: CurrentVoters", voters,
            sorted(kafka.get("CurrentVoters")));
        report.check(what + ": no observer left with its id", !Scenarios.ids(ours.get("CurrentObservers"))
            .contains(joiner), "CurrentObservers " + ours.get("CurrentObservers"));
    }

    private static List<Integer> sorted(String list) {
        return Scenarios.ids(list).stream().sorted().toList();
    }
}
