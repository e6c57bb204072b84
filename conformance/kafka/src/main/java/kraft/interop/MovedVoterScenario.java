package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.common.Uuid;

/**
 * (s) A voter that moves (KIP-853's UpdateRaftVoter) in one mixed quorum: Apache Kafka controllers 1 and 2 and a
 * {@code kraft} node 5, every directory written by {@code kraft format --initial-controllers}. With the {@code kraft}
 * node leading, Kafka controller 1 is killed and restarted on a new port: it sends UpdateRaftVoter to our leader,
 * and {@code kraft describe --status} (and Kafka's {@code kafka-metadata-quorum describe --status} against our
 * leader) lists it at the new endpoint, current and committed. Then kill -9 of the {@code kraft} leader leaves the
 * two Kafka controllers, which elect one of theirs; the {@code kraft} node restarts on a new port, sends
 * UpdateRaftVoter to the Kafka leader, and Kafka's {@code describe --status}, its Admin
 * {@code describeMetadataQuorum} (the voters' endpoints) and {@code describe --replication} show it there; the end
 * checks. The update period is one fetch timeout on both sides (Kafka 4.4's {@code updateVoterPeriodMs}: 3 s;
 * ours 2 s).
 */
record MovedVoterScenario(Report report, Tools tools, Path work, String kraft) {
    private static final List<Integer> KAFKA = List.of(1, 2);
    private static final int OURS = 5;

    void run() throws Exception {
        MixedQuorum.runScenario(report, tools, work, kraft, "s", m -> steps(m));
    }

    private void steps(MixedQuorum m) throws Exception {
        String clusterId = Uuid.randomUuid().toString();
        for (int id : KAFKA) m.kafka.reservePort(id);
        m.ours.reservePort(OURS);
        String initial = KAFKA.stream().map(id -> id + "@" + m.kafka.address(id) + ":" + Uuid.randomUuid())
            .collect(Collectors.joining(",")) + "," + OURS + "@" + m.ours.address(OURS) + ":" + Uuid.randomUuid();
        Files.createDirectories(m.kafka.dir);
        for (int id : KAFKA) {
            Procs.Result f = tools.kraft("format", "--data-dir", m.kafka.logDir(id).toString(), "--cluster-id",
                clusterId, "--node-id", Integer.toString(id), "--initial-controllers", initial);
            if (f.code() != 0) throw new IllegalStateException("kraft format of Kafka controller " + id + ": " + f);
        }
        m.kafka.clusterId = clusterId;
        m.kafka.bootstrapServers = KAFKA.stream().map(m.kafka::address).collect(Collectors.joining(",")) + ","
            + m.ours.address(OURS);
        m.ours.startJoiner(OURS, clusterId, initial, KafkaJoinsScenario.KRAFT_TIMEOUTS);
        for (int id : KAFKA) m.kafka.startPreformatted(id);

        // 1. A kraft leader; a Kafka voter moves.
        int[] led = m.steer(true, 4, "s");
        if (!m.isKraft(led[0])) {
            report.check("the kraft node leads (steered by kill -9)", false, "leader " + led[0]);
            return;
        }
        m.awaitAllCaughtUp(m.address(OURS), 2, "every replica at the kraft leader's end offset; HW = end offset");
        m.sample("s: kraft leader", OURS);
        int moved = KAFKA.get(0);
        String oldEndpoint = "CONTROLLER://" + m.kafka.address(moved);
        m.kafka.kill(moved);
        long t0 = System.currentTimeMillis();
        m.kafka.restartOnNewPort(moved);
        String newEndpoint = "CONTROLLER://" + m.kafka.address(moved);
        Map<String, String> ours = awaitListed(() -> m.status(m.address(OURS)), moved, newEndpoint, true);
        double seconds = (System.currentTimeMillis() - t0) / 1000.0;
        report.check(String.format("kraft describe --status lists Kafka voter %d at its new endpoint %s, current"
            + " and committed, %.1f s after its restart", moved, newEndpoint, seconds),
            ours != null && !ours.get("CurrentVoters").contains(oldEndpoint + "\""), "last: " + lastSeen);
        Procs.Result kafkaTool = Tools.kafka("--bootstrap-controller", m.address(OURS), "describe", "--status");
        report.check("Kafka's describe --status against the kraft leader lists voter " + moved + " at " + newEndpoint,
            voterEntry(Tools.statusFields(kafkaTool.out()).get("CurrentVoters"), moved).contains(newEndpoint + "\""),
            kafkaTool.toString());
        m.awaitAllCaughtUp(m.address(OURS), 2, "the moved Kafka voter follows the kraft leader; HW = end offset");
        m.sample("s: Kafka voter moved", OURS);

        // 2. kill -9 of the kraft leader: the two Kafka controllers elect one of theirs; the kraft voter moves.
        String oursOld = "CONTROLLER://" + m.ours.address(OURS);
        m.ours.kill(OURS);
        int[] kafkaLed = m.awaitLeader(led[1], "after kill -9 of the kraft leader: a Kafka leader");
        t0 = System.currentTimeMillis();
        m.ours.restartOnNewPort(OURS);
        String oursNew = "CONTROLLER://" + m.ours.address(OURS);
        String leaderAddr = m.kafka.address(kafkaLed[0]);
        Map<String, String> kafka = awaitListed(() -> {
            Procs.Result r = Tools.kafka("--bootstrap-controller", leaderAddr, "describe", "--status");
            return r.code() == 0 ? Tools.statusFields(r.out()) : Map.of();
        }, OURS, oursNew, false);
        seconds = (System.currentTimeMillis() - t0) / 1000.0;
        report.check(String.format("Kafka's describe --status lists the kraft voter at its new endpoint %s %.1f s"
            + " after its restart", oursNew, seconds), kafka != null
            && !kafka.get("CurrentVoters").contains(oursOld + "\""), "last: " + lastSeen);
        QuorumInfo q = Scenarios.quorum(leaderAddr);
        QuorumInfo.Node node = q.nodes().get(OURS);
        List<String> endpoints = node == null ? List.of() : node.endpoints().stream()
            .map(e -> e.name() + "://" + e.host() + ":" + e.port()).toList();
        report.equal("Kafka's Admin describeMetadataQuorum: the kraft voter's endpoints", List.of(oursNew), endpoints);
        report.check("Kafka's Admin: the kraft node is a voter", q.voters().stream().anyMatch(v -> v.replicaId() == OURS),
            q.toString());
        m.awaitCaughtUp(leaderAddr, OURS, "Kafka's describe --replication: the moved kraft voter at the Kafka"
            + " leader's end offset");
        Procs.Result rep = Tools.kafka("--bootstrap-controller", leaderAddr, "describe", "--replication");
        report.check("Kafka's describe --replication lists the moved kraft node as a Follower",
            Tools.table(rep.out()).stream().anyMatch(r -> r.size() == 7 && r.get(0).equals(Integer.toString(OURS))
                && r.get(6).equals("Follower")), rep.toString());
        String log = Files.readString(m.ours.nodeLog(OURS));
        report.check("the kraft node logged that it sent UpdateRaftVoter", log.contains("sending UpdateRaftVoter"),
            "see " + m.ours.nodeLog(OURS));
        m.sample("s: kraft voter moved", kafkaLed[0]);
    }

    /** The last status seen by {@link #awaitListed}, for a failed check's detail. */
    private static String lastSeen = "";

    interface Status {
        Map<String, String> get() throws Exception;
    }

    /**
     * Waits (30 s) until {@code status} lists voter {@code id} at {@code endpoint} on its CurrentVoters line (and on
     * CommittedVoters too if {@code committed}); returns the fields, or null.
     */
    private static Map<String, String> awaitListed(Status status, int id, String endpoint, boolean committed)
            throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            Map<String, String> f = status.get();
            lastSeen = f.toString();
            if (voterEntry(f.get("CurrentVoters"), id).contains(endpoint + "\"")
                    && (!committed || voterEntry(f.get("CommittedVoters"), id).contains(endpoint + "\""))) return f;
            Thread.sleep(300);
        }
        return null;
    }

    /** The {@code {"id": N, ...}} entry of voter {@code id} in a printed voter list, or "". */
    static String voterEntry(String list, int id) {
        if (list == null) return "";
        Matcher m = Pattern.compile("\\{\"id\": " + id + ",[^}]*\\}").matcher(list);
        return m.find() ? m.group() : "";
    }
}
