package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * (sm) A mixed quorum over SASL_PLAINTEXT with PLAIN: an Apache Kafka controller whose controller listener requires
 * it ({@code listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT}, {@code sasl.mechanism.controller.protocol=PLAIN},
 * {@code listener.name.controller.plain.sasl.jaas.config} with the controllers' and the admin's {@code user_}
 * entries), and a {@code kraft node} started from the same kind of properties file (Kafka's storage tool formatted
 * its directory from it). The node authenticates to Kafka's listener as an observer and fetches; Kafka's
 * {@code add-controller} (SASL admin) makes it a voter, which needs Kafka's raft client to authenticate to the node's
 * listener (the leader's ApiVersions check); its log equals Kafka's byte for byte. Kafka's own tool authenticates to
 * the node; a wrong password gets the same refusal from the node as from Kafka's controller (Kafka's tool and
 * {@code kraft describe}, exit 9), and the node logs it.
 */
record SaslMixedScenario(Report report, Tools tools, Path work, String kraft) {
    private static final int OURS = 5;
    private static final String PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule";
    private static final String REFUSAL = "Authentication failed: Invalid username or password";

    void run() throws Exception {
        Map<String, String> slow = Map.of("controller.quorum.election.timeout.ms", "6000",
            "controller.quorum.fetch.timeout.ms", "3000");
        try (MixedQuorum m = new MixedQuorum(report, tools, work, kraft, slow)) {
            try {
                steps(m, m.kafka, m.ours);
            } finally {
                report.check("sm: the Kafka controller still running at the end", m.kafka.allAlive(),
                    "see " + m.kafka.dir);
                report.check("sm: the kraft node still running at the end", m.ours.allAlive(), "see " + m.ours.dir);
            }
        }
    }

    /** The SASL keys of a Kafka controller's properties (and of our node's, from the same writer). */
    private static Map<String, String> sasl() {
        return Map.of(
            "listener.security.protocol.map", "CONTROLLER:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms", "PLAIN",
            "sasl.mechanism.controller.protocol", "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config", PLAIN + " required username=\"controller\""
                + " password=\"controller-secret\" user_controller=\"controller-secret\" user_admin=\"admin-secret\";");
    }

    private static String client(String user, String password) {
        return "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=" + PLAIN
            + " required username=\"" + user + "\" password=\"" + password + "\";\n";
    }

    private void steps(MixedQuorum m, KafkaQuorum kafka, KraftQuorum ours) throws Exception {
        Files.createDirectories(work);
        Path admin = work.resolve("admin.properties");
        Files.writeString(admin, client("admin", "admin-secret"));
        Path wrong = work.resolve("wrong.properties");
        Files.writeString(wrong, client("admin", "not-the-password"));
        m.commandConfig = admin;
        kafka.extraConfig = id -> sasl();
        kafka.startInitial(1);
        int[] first = m.awaitLeader(-1, "sm: the SASL Kafka controller leads");
        String leader = kafka.address(first[0]);

        // 1. Our node from a Kafka controller's properties with the SASL keys: an observer that authenticates to
        //    Kafka's listener (PLAIN, the JAAS entry's username/password) and fetches.
        Path config = ours.dir.resolve("kafka-controller-" + OURS + ".properties");
        kafka.writeConfig(OURS, ours.reservePort(OURS), ours.dataDir(OURS), config);
        ours.startFromKafkaConfig(OURS, config, kafka.clusterId, kafka.initialControllers(), "--election-timeout-ms",
            "1000", "--fetch-timeout-ms", "5000");
        m.awaitCaughtUp(leader, OURS, "sm: the kraft observer fetches the SASL Kafka leader's log");

        // 2. Kafka's add-controller (the admin over SASL): Kafka's leader first asks our node ApiVersions over its
        //    own SASL connection, so the add succeeds only if our listener authenticates Kafka's raft client.
        Path add = ours.dir.resolve("add-controller-" + OURS + ".properties");
        Files.writeString(add, String.join("\n", "process.roles=controller", "node.id=" + OURS,
            "controller.listener.names=CONTROLLER", "listeners=CONTROLLER://" + ours.address(OURS),
            "listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT", "metadata.log.dir=" + ours.dataDir(OURS),
            client("admin", "admin-secret")));
        Procs.Result added = Tools.kafka("--bootstrap-controller", leader, "--command-config", add.toString(),
            "add-controller");
        report.check("sm: Kafka's add-controller over SASL adds the kraft node (exit 0)", added.code() == 0,
            added.toString());
        report.equal("sm: add-controller output", "Added controller " + OURS + " with directory id "
            + ours.directoryId(OURS) + " and endpoints: CONTROLLER://" + ours.address(OURS), added.out().trim());
        awaitFollower(m, leader);
        long hw = m.highWatermark(leader);
        List<String> a = MixedQuorum.batchesBelow(ours.segment(OURS), hw);
        List<String> b = MixedQuorum.batchesBelow(kafka.segment(first[0]), hw);
        report.check("sm: kraft voter and Kafka leader: the same batches below HW " + hw + " (" + a.size()
            + " batches)", !a.isEmpty() && a.equals(b), "first difference: " + MixedQuorum.firstDifference(a, b));

        // 3. Kafka's tool authenticates to our node (which sends DescribeQuorum on to the leader, over SASL too).
        Procs.Result viaOurs = Tools.kafka("--bootstrap-controller", ours.address(OURS), "--command-config",
            admin.toString(), "describe", "--status");
        Map<String, String> f = Tools.statusFields(viaOurs.out());
        report.check("sm: Kafka's kafka-metadata-quorum over SASL to the kraft node: exit 0, leader " + first[0]
            + ", voters [1, " + OURS + "]", viaOurs.code() == 0 && Integer.toString(first[0]).equals(f.get("LeaderId"))
            && Scenarios.ids(f.get("CurrentVoters")).stream().sorted().toList().equals(List.of(1, OURS)),
            viaOurs.toString());

        // 4. A wrong password: the same refusal from our node as from Kafka's controller.
        for (String addr : List.of(leader, ours.address(OURS))) {
            Procs.Result k = Tools.kafka("--bootstrap-controller", addr, "--command-config", wrong.toString(),
                "describe", "--status");
            report.check("sm: Kafka's tool with a wrong password to " + (addr.equals(leader) ? "Kafka" : "kraft")
                + ": refused with SaslAuthenticationException: " + REFUSAL, k.code() != 0
                && refusal(k.err()).equals("org.apache.kafka.common.errors.SaslAuthenticationException: " + REFUSAL),
                k.toString());
            Procs.Result o = tools.kraft("describe", "--bootstrap-controller", addr, "--status", "--command-config",
                wrong.toString(), "--timeout-ms", "5000");
            report.check("sm: kraft describe with a wrong password to " + (addr.equals(leader) ? "Kafka" : "kraft")
                + ": exit 9, Kafka's message", o.code() == 9 && o.err().contains(REFUSAL), o.toString());
        }
        String log = Files.readString(ours.nodeLog(OURS));
        report.check("sm: the kraft node logs the refused authentication", log.contains("SASL: closing connection: "
            + "authentication failed: " + REFUSAL), "log: " + ours.nodeLog(OURS));
    }

    /** The first line of {@code err} that is the exception Kafka's tool reports (among its log and stack lines). */
    private static String refusal(String err) {
        return err.lines().map(String::strip).filter(l -> l.startsWith("org.apache.kafka.common.errors."))
            .findFirst().orElse("");
    }

    /** Waits (60 s) until our node is a Follower at the leader's end offset and the HW equals it. */
    private void awaitFollower(MixedQuorum m, String leader) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        List<List<String>> rows = List.of();
        while (System.currentTimeMillis() < deadline) {
            rows = m.replication(leader);
            long end = MixedQuorum.leo(rows, "Leader", -1);
            boolean follower = rows.stream().anyMatch(r -> r.size() == 7 && r.get(0).equals(Integer.toString(OURS))
                && r.get(6).equals("Follower") && Long.parseLong(r.get(2)) == end);
            if (end > 0 && follower && Long.toString(end).equals(m.status(leader).get("HighWatermark"))) {
                report.check("sm: the kraft node is a voter at the Kafka leader's end offset, HW = " + end, true, "");
                return;
            }
            Thread.sleep(300);
        }
        report.check("sm: the kraft node is a voter at the Kafka leader's end offset", false,
            rows.stream().map(Object::toString).collect(Collectors.joining("; ")));
    }
}
