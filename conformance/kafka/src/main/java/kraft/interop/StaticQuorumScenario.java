package kraft.interop;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.kafka.common.Uuid;

/**
 * A static quorum (KIP-853's upgrade path): voters configured with {@code controller.quorum.voters}
 * (kraft.version 0), every node started from a Kafka controller's properties file, upgraded with Kafka's
 * {@code kafka-features --bootstrap-controller ... upgrade --feature kraft.version=1}, then reconfigured with
 * Kafka's {@code kafka-metadata-quorum add-controller}. (y) three {@code kraft} nodes ({@code kraft format
 * --config}, {@code kraft node --config}) and a fourth {@code kraft} node added. (z) one quorum of both kinds: an
 * Apache Kafka controller formatted by {@code kafka-storage format} with the same {@code controller.quorum.voters}
 * and two {@code kraft} nodes, which start first and elect one of theirs (a Kafka 4.4 leader refuses the upgrade
 * while a voter has not sent ControllerRegistration, which {@code kraft} does not send: {@code
 * conformance/kafka-findings.md}); a second Kafka controller is added. Both end with the end checks.
 */
record StaticQuorumScenario(Report report, Tools tools, Path work, String kraft) {
    private static final String[] KRAFT_TIMEOUTS = {"--election-timeout-ms", "1000", "--fetch-timeout-ms", "3000"};
    /** The followers report themselves (UpdateRaftVoter) within a fetch timeout of the leader's election. */
    private static final long UPGRADE_WITHIN_MS = 45_000;
    private static final Pattern FINALIZED = Pattern.compile(
        "Feature: kraft\\.version\\s+SupportedMinVersion: 0\\s+SupportedMaxVersion: 1\\s+FinalizedVersionLevel: (\\d+)");

    void runKraft() throws Exception {
        MixedQuorum.runScenario(report, tools, work.resolve("kraft"), kraft, "y", this::allKraft);
    }

    void runMixed() throws Exception {
        MixedQuorum.runScenario(report, tools, work.resolve("mixed"), kraft, "z", this::mixed);
    }

    private void allKraft(MixedQuorum m) throws Exception {
        List<Integer> ids = List.of(5, 6, 7);
        String clusterId = Uuid.randomUuid().toString();
        m.kafka.staticVoters = staticVoters(m, ids);
        m.staticVoters = ids;
        for (int id : ids) formatKraft(m, id, clusterId, List.of());
        for (int id : ids) m.ours.restart(id);
        int[] leader = m.awaitLeader(-1, "y: the static kraft voters elect a leader");
        m.awaitAllCaughtUp(m.address(leader[0]), 2, "y: every static voter replicates; HW = end offset");
        m.kafka.staticVoters = null;
        m.kafka.bootstrapServers = ids.stream().map(m.ours::address).collect(Collectors.joining(","));
        Path joiner = formatKraft(m, 8, clusterId, List.of("--no-initial-controllers"));
        upgradeAndAdd(m, "y", leader, ids, 8, joiner, () -> m.ours.restart(8));
    }

    private void mixed(MixedQuorum m) throws Exception {
        List<Integer> ids = List.of(1, 5, 6);
        m.kafka.reservePort(1);
        m.kafka.staticVoters = staticVoters(m, ids);
        m.staticVoters = ids;
        m.kafka.formatStatic(1);
        for (int id : List.of(5, 6)) formatKraft(m, id, m.kafka.clusterId, List.of());
        for (int id : List.of(5, 6)) m.ours.restart(id);
        int[] leader = m.awaitLeader(-1, "z: the two kraft voters elect a leader before the Kafka controller starts");
        report.check("z: the leader is a kraft node", m.isKraft(leader[0]), "leader " + leader[0]);
        m.kafka.restart(1);
        m.awaitAllCaughtUp(m.address(leader[0]), 2, "z: the Kafka voter and the kraft follower replicate; HW = end"
            + " offset");
        m.kafka.staticVoters = null;
        m.kafka.bootstrapServers = ids.stream().map(m::address).collect(Collectors.joining(","));
        upgradeAndAdd(m, "z", leader, ids, 2, m.kafka.config(2), () -> m.kafka.startObserver(2));
    }

    /** {@code ID@HOST:PORT,...} of {@code ids} (ports reserved). */
    private static String staticVoters(MixedQuorum m, List<Integer> ids) throws Exception {
        for (int id : ids) if (!m.kafka.ports.containsKey(id)) m.ours.reservePort(id);
        return ids.stream().map(id -> id + "@" + m.address(id)).collect(Collectors.joining(","));
    }

    /**
     * Writes the properties a Kafka controller {@code id} would take ({@link KafkaQuorum#writeConfig}: static voters
     * or bootstrap servers as set there), formats {@code kraft} node {@code id} with {@code kraft format --config} and
     * sets its command to {@code kraft node --config} with (g)'s {@code kraft} timeouts; returns the file.
     */
    private static Path formatKraft(MixedQuorum m, int id, String clusterId, List<String> formatArgs) throws Exception {
        Path config = m.ours.dir.resolve("static-" + id + ".properties");
        m.kafka.writeConfig(id, m.ours.reservePort(id), m.ours.dataDir(id), config);
        m.ours.formatFromConfig(id, config, clusterId, formatArgs, KRAFT_TIMEOUTS);
        return config;
    }

    interface Start {
        void run() throws Exception;
    }

    /**
     * On the static quorum {@code ids} led by {@code leader}: Kafka's tools describe it (kraft.version 0, no
     * directory ids); Kafka's {@code kafka-features} upgrades it; CommittedVoters (DescribeQuorum v3 from our
     * {@code kraft describe}) right before and after, then with directory ids; {@code joinerId} (its properties file
     * {@code joinerConfig}) starts as an observer and Kafka's {@code add-controller} adds it, CommittedVoters
     * right before and after.
     */
    private void upgradeAndAdd(MixedQuorum m, String label, int[] leader, List<Integer> ids, int joinerId,
            Path joinerConfig, Start startJoiner) throws Exception {
        // Kafka's tools ask the kraft nodes: a Kafka controller following a kraft leader has no finalized
        // metadata.version (no metadata records in the log), and refuses direct-to-controller requests.
        String bootstrap = ids.stream().filter(m::isKraft).map(m::address).collect(Collectors.joining(","));
        Procs.Result kafkaBefore = Tools.kafka("--bootstrap-controller", bootstrap, "describe", "--status");
        Map<String, String> kb = Tools.statusFields(kafkaBefore.out());
        report.equal(label + ": Kafka's describe --status lists the static voters", ids,
            sorted(kb.get("CurrentVoters")));
        report.check(label + ": Kafka's describe --status shows no directory ids (static voters)",
            kb.get("CurrentVoters") != null && !kb.get("CurrentVoters").contains("directoryId"), kafkaBefore.toString());
        report.equal(label + ": kafka-features describe: kraft.version finalized at 0", "0", finalized(bootstrap));
        Map<String, String> before = m.status(m.address(leader[0]));
        report.equal(label + ": CommittedVoters right before the upgrade", ids, sorted(before.get("CommittedVoters")));
        m.sample(label + ": static quorum, kraft.version 0", leader[0]);

        // The leader refuses the upgrade until every voter has reported its directory id and kraft.version range
        // (UpdateRaftVoter); Kafka's tool is run until it succeeds.
        long started = System.currentTimeMillis();
        Procs.Result up = null;
        int attempts = 0;
        while (System.currentTimeMillis() - started < UPGRADE_WITHIN_MS) {
            attempts++;
            up = Tools.features("--bootstrap-controller", bootstrap, "upgrade", "--feature", "kraft.version=1");
            if (up.code() == 0) break;
            Thread.sleep(500);
        }
        long took = System.currentTimeMillis() - started;
        report.check(label + ": kafka-features upgrade --feature kraft.version=1 exits 0 (" + attempts
            + " attempt(s), " + took + " ms)", up.code() == 0, up.toString());
        report.equal(label + ": upgrade output", "kraft.version was upgraded to 1.", up.out().trim());
        Map<String, String> after = m.status(m.address(leader[0]));
        report.equal(label + ": CommittedVoters right after the upgrade", ids, sorted(after.get("CommittedVoters")));
        List<String> missing = new ArrayList<>();
        for (int id : ids) {
            Uuid dir = KafkaQuorum.readDirectoryId(m.isKraft(id) ? m.ours.dataDir(id) : m.kafka.logDir(id));
            if (!String.valueOf(after.get("CommittedVoters")).contains("\"" + dir + "\"")) missing.add(id + ":" + dir);
        }
        report.check(label + ": CommittedVoters after the upgrade carry every voter's directory id (its"
            + " meta.properties)", missing.isEmpty(), "missing " + missing + " in " + after.get("CommittedVoters"));
        report.equal(label + ": kafka-features describe: kraft.version finalized at 1", "1", finalized(bootstrap));
        m.sample(label + ": after the upgrade", leader[0]);

        startJoiner.run();
        m.awaitCaughtUp(m.address(leader[0]), joinerId, label + ": node " + joinerId + " (observer) reaches the leader's"
            + " end offset");
        Map<String, String> beforeAdd = m.status(m.address(leader[0]));
        report.equal(label + ": CommittedVoters right before add-controller", ids,
            sorted(beforeAdd.get("CommittedVoters")));
        Procs.Result add = Tools.kafka("--bootstrap-controller", m.address(leader[0]), "--command-config",
            joinerConfig.toString(), "add-controller");
        report.check(label + ": Kafka's add-controller of node " + joinerId + " exits 0", add.code() == 0,
            add.toString());
        List<Integer> all = new ArrayList<>(ids);
        all.add(joinerId);
        all = all.stream().sorted().toList();
        Map<String, String> afterAdd = Map.of();
        long deadline = System.currentTimeMillis() + 15_000;
        while (System.currentTimeMillis() < deadline) {
            afterAdd = m.status(m.address(leader[0]));
            if (sorted(afterAdd.get("CommittedVoters")).equals(all)) break;
            Thread.sleep(200);
        }
        report.equal(label + ": CommittedVoters right after add-controller", all, sorted(afterAdd.get("CommittedVoters")));
        Procs.Result kafkaAfter = Tools.kafka("--bootstrap-controller", m.address(leader[0]), "describe", "--status");
        report.equal(label + ": Kafka's describe --status lists the new voter", all,
            sorted(Tools.statusFields(kafkaAfter.out()).get("CurrentVoters")));
        int[] now = m.awaitLeader(-1, label + ": a leader after add-controller");
        m.awaitAllCaughtUp(m.address(now[0]), ids.size(), label + ": every voter replicates; HW = end offset");
        m.sample(label + ": after add-controller", now[0]);
    }

    /** kraft.version's FinalizedVersionLevel in {@code kafka-features describe}, or the tool's output. */
    private static String finalized(String bootstrap) throws Exception {
        Procs.Result d = Tools.features("--bootstrap-controller", bootstrap, "describe");
        var matcher = FINALIZED.matcher(d.out());
        return matcher.find() ? matcher.group(1) : d.toString();
    }

    private static List<Integer> sorted(String list) {
        return Scenarios.ids(list).stream().sorted().toList();
    }
}
