package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.common.Uuid;

/**
 * The scenarios, in value order: (a) Kafka's tool and admin client against our quorum from any one node,
 * (b) Kafka's add-controller / remove-controller against our quorum, (c) our CLI against a Kafka quorum,
 * (d) byte-level agreement ({@link WireScenario}), (e, f) TLS, (g) one quorum of both kinds ({@link MixedScenario}),
 * (h-k) more mixed quorums, (l) mixed quorums over mutual TLS ({@link TlsMixedScenario}), (m) a Kafka controller on a
 * directory {@code kraft format} wrote ({@link KraftFormatsKafkaScenario}), (n) a {@code kraft} node from a
 * {@code --no-initial-controllers} directory joining Kafka's quorum ({@link NoInitialControllersScenario}), (r)
 * CommittedVoters computed for a Kafka quorum ({@link ObserverScenario}), (s) a voter that moves
 * ({@link MovedVoterScenario}), (t) kafka-python and Kafka's Admin asking any one node ({@link AnyNodeScenario}), (u)
 * Kafka's {@code kafka-features} against our quorum, (w, x) auto-join both ways ({@link AutoJoinScenario}), (y, z)
 * static quorums upgraded to kraft.version 1 and reconfigured ({@link StaticQuorumScenario}), (pm) Prometheus
 * scraping the metrics listeners ({@link PrometheusScenario}), (sm) a mixed quorum over SASL
 * ({@link SaslMixedScenario}). One
 * Kafka quorum serves
 * (c) and (d); (g) and later have their own.
 */
final class Scenarios {
    private static final Pattern TIMESTAMP = Pattern.compile("-1|\\d{13}");
    private static final Pattern RELATIVE = Pattern.compile("-1|\\d+ ms ago");
    private final Report report;
    private final Tools tools;
    private final Path work;
    private final String kraft;
    /** Scenario letters to run (empty: all); a-f share quorums and run together. */
    java.util.Set<String> only = java.util.Set.of();
    /** Scenario j: runs and the first seed. */
    int runs = 2;
    long seed = 1;
    /** Scenario t: the Python interpreter with kafka-python installed. */
    String python;

    Scenarios(Report report, Tools tools, Path work, String kraft) {
        this.report = report;
        this.tools = tools;
        this.work = work;
        this.kraft = kraft;
    }

    private boolean wants(String... letters) {
        if (only.isEmpty()) return true;
        for (String l : letters) if (only.contains(l)) return true;
        return false;
    }

    void runAll() throws Exception {
        if (wants("a", "b", "c", "d", "e", "f")) runSharedQuorums();
        if (wants("g")) {
            report.scenario("g: mixed quorum: a kraft node joins Apache Kafka controllers, is added, is elected, leads"
                + " them, and follows a Kafka leader again");
            try {
                new MixedScenario(report, tools, this, work.resolve("mixed"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("h")) {
            report.scenario("h: mixed quorum: an Apache Kafka controller joins a kraft-led quorum, is added with kraft"
                + " add-voter, votes, and is removed with kraft remove-voter");
            try {
                new KafkaJoinsScenario(report, tools, work.resolve("joins"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("i")) {
            report.scenario("i: mixed quorum: leader self-removal both ways (kraft remove-voter and Kafka's"
                + " remove-controller of a Kafka leader, Kafka's remove-controller of a kraft leader)");
            try {
                new SelfRemovalScenario(report, tools, work.resolve("self-removal"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("j")) {
            report.scenario("j: mixed quorum: kill -9 of the leader while a VotersRecord is uncommitted, " + runs
                + " runs from seed " + seed + ", Kafka and kraft leaders in turn");
            try {
                new KillLoopScenario(report, tools, work.resolve("kill-loop"), kraft, runs, seed).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("k")) {
            report.scenario("k: mixed quorum: partitions by SIGSTOP/SIGCONT: pre-vote keeps a returning replica from"
                + " disrupting, a paused leader is replaced and steps down, check-quorum resignation");
            try {
                new PartitionScenario(report, tools, work.resolve("partition"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("m")) {
            report.scenario("m: mixed quorum: kraft format writes every directory, an Apache Kafka controller's too;"
                + " the Kafka controller and kraft nodes elect, lead in turn and replicate");
            try {
                new KraftFormatsKafkaScenario(report, tools, work.resolve("kraft-formats-kafka"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("n")) {
            report.scenario("n: mixed quorum: a kraft node on a kafka-storage format --no-initial-controllers directory"
                + " finds Kafka's quorum through --bootstrap-servers, learns the voters from the log, is added with"
                + " Kafka's add-controller and votes");
            try {
                new NoInitialControllersScenario(report, tools, work.resolve("no-initial"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("s")) {
            report.scenario("s: mixed quorum: a voter that moves (UpdateRaftVoter): a Kafka voter restarted on a new"
                + " port is listed there by the kraft leader, a kraft voter restarted on a new port by the Kafka"
                + " leader (kafka-metadata-quorum describe, Admin describeMetadataQuorum)");
            try {
                new MovedVoterScenario(report, tools, work.resolve("moved-voter"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("t")) {
            report.scenario("t: DescribeQuorum from any one node of a kraft quorum: kafka-python 3.0.12's"
                + " describe_metadata_quorum() and Admin describeMetadataQuorum (bootstrap.servers and"
                + " bootstrap.controllers) via the leader and each follower give the leader's quorum");
            try {
                new AnyNodeScenario(report, tools, work.resolve("any-node"), kraft, python).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("w")) {
            report.scenario("w: auto-join (KIP-1186): an Apache Kafka controller with controller.quorum.auto.join.enable"
                + " joins a kraft-led quorum and becomes a voter (kafka-metadata-quorum and kraft describe,"
                + " CommittedVoters included)");
            try {
                new AutoJoinScenario(report, tools, work.resolve("auto-join"), kraft).runKafkaJoins();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("x")) {
            report.scenario("x: auto-join (KIP-1186): a kraft node with --auto-join joins an Apache Kafka quorum and"
                + " becomes a voter (kafka-metadata-quorum and kraft describe)");
            try {
                new AutoJoinScenario(report, tools, work.resolve("auto-join"), kraft).runKraftJoins();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("y")) {
            report.scenario("y: a static kraft quorum (controller.quorum.voters, kraft.version 0) from properties files,"
                + " upgraded with Kafka's kafka-features to kraft.version 1, then a fourth kraft node added with Kafka's"
                + " add-controller");
            try {
                new StaticQuorumScenario(report, tools, work.resolve("static"), kraft).runKraft();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("z")) {
            report.scenario("z: a static mixed quorum (an Apache Kafka controller formatted by kafka-storage format and"
                + " two kraft nodes, one controller.quorum.voters) led by a kraft node, upgraded with Kafka's"
                + " kafka-features, then a second Kafka controller added with add-controller");
            try {
                new StaticQuorumScenario(report, tools, work.resolve("static"), kraft).runMixed();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("bs")) {
            report.scenario("bs: kraft describe (--watch too), add-voter and remove-voter with --bootstrap-server against"
                + " three Apache Kafka nodes in combined mode (process.roles=broker,controller): requests forwarded by a"
                + " broker, CommittedVoters computed through the controller endpoint the quorum description names");
            try {
                new BrokerScenario(report, tools, work.resolve("brokers-combined")).runCombined();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("bb")) {
            report.scenario("bb: the same through the one broker of three Apache Kafka controllers and a broker, the only"
                + " address the tools are given");
            try {
                new BrokerScenario(report, tools, work.resolve("brokers-in-front")).runBrokerInFront();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("sa")) {
            report.scenario("sa: kraft describe over SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 from --command-config)"
                + " against an Apache Kafka controller with SASL listeners and StandardAuthorizer; refusals by exit code");
            try {
                new SaslScenario(report, tools, work.resolve("sasl")).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("sm")) {
            report.scenario("sm: mixed quorum over SASL_PLAINTEXT PLAIN: a kraft node configured as a Kafka controller"
                + " joins an Apache Kafka controller whose listener requires SASL, is added with add-controller,"
                + " replicates; a wrong password is refused as Kafka refuses it");
            try {
                new SaslMixedScenario(report, tools, work.resolve("sasl-mixed"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("r")) {
            report.scenario("r: CommittedVoters for a Kafka quorum, computed by kraft describe from the log it fetches as"
                + " an observer: an add-controller uncommitted then committed, a remove-controller truncated after"
                + " kill -9 of the leader, --watch throughout, and the same set a kraft leader serves in v3");
            try {
                new ObserverScenario(report, tools, work.resolve("observer"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("pm")) {
            report.scenario("pm: a Prometheus server scrapes kraft node --metrics-listener (joined to Kafka controllers)"
                + " and kraft describe --watch --metrics-listener: Kafka's leader and HW, and the age of an uncommitted"
                + " add-controller, through its query API");
            try {
                new PrometheusScenario(report, tools, work.resolve("prometheus"), kraft).run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        // p's quorum waits for its leader's cleaner (60 s, as Kafka's); that wait overlaps o's.
        KraftSnapshotScenario p = wants("p")
            ? new KraftSnapshotScenario(report, tools, work.resolve("snapshots-kraft"), kraft) : null;
        if (p != null && wants("o", "q")) p.startEarly();
        if (wants("o", "q")) {
            report.scenario("o: mixed quorum whose log start has moved past 0 (KIP-630): a kraft node joins Apache"
                + " Kafka controllers through FetchSnapshot, is added with add-controller, is elected, and serves"
                + " FetchSnapshot to a fresh Kafka controller");
            try {
                new SnapshotScenario(report, tools, this, work.resolve("snapshots-kafka"), kraft).run(wants("o"),
                    wants("q"));
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (p != null) {
            report.scenario("p: mixed quorum: an Apache Kafka controller joins a kraft-led quorum whose log start has"
                + " moved past 0, loads its snapshot and becomes a voter; Kafka's DumpLogSegments reads every"
                + " snapshot file kraft wrote and shows wall-clock times in it");
            try {
                p.run();
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        // ts waits for Kafka's retention (120 s) and cleaner (60 s): run by name only (--only ts), about 5 min.
        if (only.contains("ts")) {
            report.scenario("ts: an Apache Kafka controller keeps the snapshot a kraft leader made ((o)'s quorum, the"
                + " kraft node snapshotting) until metadata.max.retention.ms has passed since its"
                + " LastContainedLogTimestamp, then deletes it");
            try {
                new SnapshotScenario(report, tools, this, work.resolve("snapshots-retention"), kraft,
                    new SnapshotRetention(report)).run(false, false);
            } catch (Exception e) {
                report.aborted(e);
            }
        }
        if (wants("l")) new TlsMixedScenario(report, tools, work.resolve("tls-mixed"), kraft).run();
        if (wants("u")) {
            report.scenario("u: kafka-features --bootstrap-controller against a kraft quorum (kraft.version 1): describe,"
                + " upgrade, dry run, downgrade and an unknown feature refused");
            try (KraftQuorum ours = new KraftQuorum(work.resolve("kraft-features"), kraft)) {
                ours.startCluster(3);
                kafkaFeaturesAgainstKraft(ours);
            } catch (Exception e) {
                report.aborted(e);
            }
        }
    }

    /** Kafka's {@code kafka-features} through each node: ApiVersions' features, UpdateFeatures (API 57). */
    private void kafkaFeaturesAgainstKraft(KraftQuorum ours) throws Exception {
        // Until a leader is elected DescribeCluster names no active controller (ControllerId -1, as a Kafka
        // controller answers), and the admin client waits for its next metadata refresh, past the tool's timeout.
        Procs.Result elected = tools.kraft("describe", "--bootstrap-controller", ours.address(1), "--status");
        report.check("kraft quorum elects a leader", elected.code() == 0, elected.toString());
        for (int id = 1; id <= 3; id++) {
            Procs.Result d = Tools.features("--bootstrap-controller", ours.address(id), "describe");
            report.check("describe via node " + id + " exits 0", d.code() == 0, d.toString());
            report.check("describe via node " + id + " names kraft.version 0-1, finalized 1",
                Pattern.compile("Feature: kraft\\.version\\s+SupportedMinVersion: 0\\s+SupportedMaxVersion: 1\\s+"
                    + "FinalizedVersionLevel: 1\\s+Epoch: \\d+").matcher(d.out()).find(), d.toString());
        }
        Procs.Result up = Tools.features("--bootstrap-controller", ours.address(2), "upgrade",
            "--feature", "kraft.version=1");
        report.check("upgrade kraft.version=1 exits 0", up.code() == 0, up.toString());
        report.equal("upgrade output", "kraft.version was upgraded to 1.", up.out().trim());
        Procs.Result dry = Tools.features("--bootstrap-controller", ours.address(3), "upgrade",
            "--feature", "kraft.version=1", "--dry-run");
        report.equal("dry-run output", "kraft.version can be upgraded to 1.", dry.out().trim());
        Procs.Result down = Tools.features("--bootstrap-controller", ours.address(1), "downgrade",
            "--feature", "kraft.version=0");
        report.check("downgrade kraft.version=0 fails", down.code() != 0, down.toString());
        report.check("downgrade names Kafka's reason", down.out().contains(
            "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."),
            down.toString());
        Procs.Result other = Tools.features("--bootstrap-controller", ours.address(1), "upgrade",
            "--feature", "metadata.version=20");
        report.check("an unknown feature is refused", other.code() != 0
            && other.out().contains("does not support this feature"), other.toString());
    }

    private void runSharedQuorums() throws Exception {
        try (KraftQuorum ours = new KraftQuorum(work.resolve("kraft"), kraft)) {
            report.scenario("a: kafka-metadata-quorum and Admin against a kraft quorum, from any one node");
            try {
                ours.startCluster(3);
                kafkaToolsAgainstKraft(ours);
            } catch (Exception e) {
                report.aborted(e);
            }
            report.scenario("b: kafka-metadata-quorum add-controller / remove-controller against a kraft quorum");
            try {
                kafkaReconfiguresKraft(ours);
            } catch (Exception e) {
                report.aborted(e);
            }
            try (KafkaQuorum kafka = new KafkaQuorum(work.resolve("kafka"))) {
                report.scenario("c: kraft describe / add-voter / remove-voter against an Apache Kafka quorum");
                try {
                    kafka.startInitial(1, 2, 3);
                    kraftAgainstKafka(kafka);
                } catch (Exception e) {
                    report.aborted(e);
                }
                report.scenario("d: DescribeQuorum v0-2, DescribeCluster and record batches, byte for byte");
                try {
                    new WireScenario(report, tools, work.resolve("wire")).run(kafka, ours);
                } catch (Exception e) {
                    report.aborted(e);
                }
                report.check("Kafka controllers still running at the end", kafka.allAlive(), "a controller exited; see " + kafka.dir);
            }
            report.check("kraft nodes still running at the end", ours.allAlive(), "a node exited; see " + ours.dir);
            new TlsScenario(report, tools, work.resolve("tls"), kraft).run();
            String log = Files.readString(ours.log());
            report.check("kraft cluster's log in a file has no ANSI colour codes", !log.isEmpty()
                && !log.contains("\u001b["), ours.log() + " (" + log.length() + " chars)");
        }
    }

    // ----- (a) -------------------------------------------------------------------------------------

    private void kafkaToolsAgainstKraft(KraftQuorum ours) throws Exception {
        Procs.Result up = tools.kraft("describe", "--bootstrap-controller", ours.address(1), "--status");
        report.check("kraft quorum elects a leader", up.code() == 0, up.toString());
        for (int id = 1; id <= 3; id++) {
            String addr = ours.address(id);
            compareStatus("describe --status via node " + id, addr, addr, true);
            compareReplication("describe --replication via node " + id, addr, addr, false);
        }
        compareReplication("describe --replication --human-readable via node 2", ours.address(2), ours.address(2), true);
        for (int id = 1; id <= 3; id++) adminAgrees("Admin via node " + id, ours.address(id), ours.address(1));
    }

    /** Kafka's admin client with {@code bootstrap.controllers} = one node: DescribeCluster and DescribeQuorum. */
    private void adminAgrees(String label, String bootstrap, String kraftBootstrap) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        try (Admin admin = Admin.create(props)) {
            DescribeClusterResult cluster = admin.describeCluster();
            String clusterId = cluster.clusterId().get();
            int controller = cluster.controller().get().id();
            int nodes = cluster.nodes().get().size();
            QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get();
            Procs.Result ours = tools.kraft("describe", "--bootstrap-controller", kraftBootstrap, "--status");
            Map<String, String> fields = Tools.statusFields(ours.out());
            report.equal(label + ": describeCluster clusterId", fields.get("ClusterId"), clusterId);
            report.equal(label + ": describeCluster controller = DescribeQuorum leader", fields.get("LeaderId"),
                Integer.toString(controller));
            report.equal(label + ": describeMetadataQuorum leaderId", fields.get("LeaderId"), Integer.toString(quorum.leaderId()));
            report.equal(label + ": describeMetadataQuorum leaderEpoch", fields.get("LeaderEpoch"), Long.toString(quorum.leaderEpoch()));
            report.equal(label + ": describeCluster lists the voters", (int) quorum.voters().size(), nodes);
        }
    }

    // ----- (b) -------------------------------------------------------------------------------------

    private void kafkaReconfiguresKraft(KraftQuorum ours) throws Exception {
        ours.startObserver(4);
        Uuid dir4 = ours.directoryId(4);
        waitForObserver(ours, 4);
        ours.addWithKafkaTool(report, 4, ours.address(2), "add-controller");
        waitForVoters(ours, List.of(1, 2, 3, 4));
        compareStatus("after add-controller: describe --status via node 4", ours.address(4), ours.address(4), true);
        compareReplication("after add-controller: describe --replication via node 3", ours.address(3), ours.address(3), false);

        // "--opt=value": a directory id may start with '-' (base64url), which both tools' parsers would take
        // for an option (Kafka's argparse4j: "expected one argument"; clap: "unexpected argument").
        Procs.Result remove = Tools.kafka("--bootstrap-controller", ours.address(3), "remove-controller",
            "--controller-id", "4", "--controller-directory-id=" + dir4);
        report.check("remove-controller exits 0", remove.code() == 0, remove.toString());
        report.equal("remove-controller output", "Removed KRaft controller 4 with directory id " + dir4,
            remove.out().trim());
        waitForVoters(ours, List.of(1, 2, 3));
        compareStatus("after remove-controller: describe --status via node 1", ours.address(1), ours.address(1), true);
        compareReplication("after remove-controller: describe --replication via node 2", ours.address(2), ours.address(2), false);
    }

    private void waitForObserver(KraftQuorum ours, int id) throws Exception {
        long deadline = System.currentTimeMillis() + 20_000;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            Procs.Result r = tools.kraft("describe", "--bootstrap-controller", ours.address(1), "--status");
            last = r.out();
            if (Tools.statusFields(r.out()).getOrDefault("CurrentObservers", "").contains("\"id\": " + id + ",")) return;
            Thread.sleep(300);
        }
        throw new IllegalStateException("node " + id + " never showed up as an observer: " + last);
    }

    /** Waits until our describe shows exactly these voters, current and committed. */
    private void waitForVoters(KraftQuorum ours, List<Integer> ids) throws Exception {
        long deadline = System.currentTimeMillis() + 20_000;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            Procs.Result r = tools.kraft("describe", "--bootstrap-controller", ours.address(1), "--status");
            last = r.out();
            Map<String, String> fields = Tools.statusFields(last);
            if (r.code() == 0 && ids(fields.get("CurrentVoters")).equals(ids)
                    && ids(fields.get("CommittedVoters")).equals(ids)) {
                report.check("voters become " + ids + " (current and committed)", true, "");
                return;
            }
            Thread.sleep(300);
        }
        report.check("voters become " + ids + " (current and committed)", false, last);
    }

    private static final Pattern ID = Pattern.compile("\\{\"id\": (\\d+),");

    /** The ids of a printed replica list such as {@code [{"id": 1, ...}, {"id": 2, ...}]}. */
    static List<Integer> ids(String list) {
        List<Integer> out = new java.util.ArrayList<>();
        if (list == null) return out;
        var m = ID.matcher(list);
        while (m.find()) out.add(Integer.parseInt(m.group(1)));
        return out;
    }

    // ----- (c) -------------------------------------------------------------------------------------

    private void kraftAgainstKafka(KafkaQuorum kafka) throws Exception {
        for (int id = 1; id <= 3; id++) {
            String addr = kafka.address(id);
            compareStatus("describe --status via Kafka controller " + id, addr, addr, false);
            compareReplication("describe --replication via Kafka controller " + id, addr, addr, false);
        }
        compareReplication("describe --replication --human-readable via Kafka controller 1", kafka.address(1),
            kafka.address(1), true);
        Procs.Result ours = tools.kraft("describe", "--bootstrap-controller", kafka.address(2), "--status");
        Map<String, String> computed = Tools.statusFields(ours.out());
        report.equal("CommittedVoters computed from the log against Kafka (DescribeQuorum v2) = CurrentVoters",
            computed.get("CurrentVoters"), computed.get("CommittedVoters"));
        report.check("the CLI marks CommittedVoters as computed", computed.getOrDefault("CommittedVotersSource", "")
            .startsWith("computed by kraft from the metadata log"), ours.toString());
        Procs.Result served = tools.kraft("describe", "--bootstrap-controller", kafka.address(2), "--status",
            "--served-only");
        report.equal("--served-only: CommittedVoters is [] against Kafka", "[]",
            Tools.statusFields(served.out()).get("CommittedVoters"));
        report.check("--served-only: the CLI says why CommittedVoters is empty", served.err().contains("DescribeQuorum v2")
            && served.err().contains("no committed voter set"), served.err());

        kafka.startObserver(4);
        Uuid dir4 = kafka.directoryIds.get(4);
        Procs.Result add = addVoterWhenCaughtUp(kafka, dir4);
        report.check("kraft add-voter against Kafka exits 0", add.code() == 0, add.toString());
        NowLine.check(report, "kraft add-voter against Kafka", add, List.of(1, 2, 3, 4));
        compareStatus("after kraft add-voter: describe --status via Kafka controller 4", kafka.address(4), kafka.address(4), false);
        QuorumInfo q = quorum(kafka.address(1));
        report.equal("Kafka's Admin sees voter 4 with its directory id", dir4,
            q.voters().stream().filter(v -> v.replicaId() == 4).map(QuorumInfo.ReplicaState::replicaDirectoryId)
                .findFirst().orElse(null));

        Procs.Result remove = tools.kraft("remove-voter", "--bootstrap-controller", kafka.address(3), "--node-id", "4",
            "--timeout-ms", "30000");
        report.check("kraft remove-voter against Kafka exits 0", remove.code() == 0, remove.toString());
        NowLine.check(report, "kraft remove-voter against Kafka", remove, List.of(1, 2, 3));
        compareStatus("after kraft remove-voter: describe --status via Kafka controller 2", kafka.address(2), kafka.address(2), false);
        q = quorum(kafka.address(3));
        report.check("Kafka's Admin no longer sees voter 4", q.voters().stream().noneMatch(v -> v.replicaId() == 4),
            q.toString());
    }

    /** The new Kafka controller must have fetched up to the leader first; add-voter retries REQUEST_TIMED_OUT. */
    private Procs.Result addVoterWhenCaughtUp(KafkaQuorum kafka, Uuid dir4) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            QuorumInfo q = quorum(kafka.address(1));
            boolean observed = q.observers().stream().anyMatch(o -> o.replicaId() == 4);
            if (observed || System.currentTimeMillis() > deadline) break;
            Thread.sleep(300);
        }
        return tools.kraft("add-voter", "--bootstrap-controller", kafka.address(2), "--node-id", "4",
            "--directory-id=" + dir4, "--endpoint", kafka.address(4), "--timeout-ms", "30000");
    }

    static QuorumInfo quorum(String bootstrap) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            return admin.describeMetadataQuorum().quorumInfo().get();
        }
    }

    // ----- comparisons -----------------------------------------------------------------------------

    /**
     * Kafka's {@code describe --status} and ours agree on every line but the timestamp-derived
     * MaxFollowerLagTimeMs (and our extra CommittedVoters / Reconfiguration lines). Kafka's tool runs before and
     * after ours; a pair of equal Kafka answers brackets ours, so a moving quorum is retried, not misjudged.
     */
    void compareStatus(String label, String kafkaBootstrap, String kraftBootstrap, boolean oursIsKraft)
            throws Exception {
        compareStatus(report, tools, label, kafkaBootstrap, kraftBootstrap, oursIsKraft, null);
    }

    /** As above; with {@code commandConfig}, both tools get it as {@code --command-config} (TLS). */
    static void compareStatus(Report report, Tools tools, String label, String kafkaBootstrap, String kraftBootstrap,
            boolean oursIsKraft, Path commandConfig) throws Exception {
        List<String> kafkaArgs = new java.util.ArrayList<>(List.of("--bootstrap-controller", kafkaBootstrap));
        List<String> oursArgs = new java.util.ArrayList<>(List.of("describe", "--bootstrap-controller", kraftBootstrap,
            "--status"));
        if (commandConfig != null) {
            kafkaArgs.addAll(List.of("--command-config", commandConfig.toString()));
            oursArgs.addAll(List.of("--command-config", commandConfig.toString()));
        }
        kafkaArgs.addAll(List.of("describe", "--status"));
        String[] k = kafkaArgs.toArray(String[]::new);
        String last = "";
        for (int attempt = 0; attempt < 10; attempt++) {
            Procs.Result k1 = Tools.kafka(k);
            Procs.Result o = tools.kraft(oursArgs.toArray(String[]::new));
            Procs.Result k2 = Tools.kafka(k);
            if (k1.code() != 0 || o.code() != 0 || k2.code() != 0) {
                last = "Kafka: " + k1 + "\nkraft: " + o;
                Thread.sleep(500);
                continue;
            }
            Map<String, String> kafka = comparable(Tools.statusFields(k1.out()));
            if (!kafka.equals(comparable(Tools.statusFields(k2.out())))) {
                last = "the quorum kept changing: " + k1.out() + k2.out();
                Thread.sleep(500);
                continue;
            }
            Map<String, String> all = Tools.statusFields(o.out());
            Map<String, String> ours = comparable(all);
            ours.remove("CommittedVoters");
            ours.remove("Reconfiguration");
            ours.remove("CommittedVotersSource");
            report.equal(label + ": lines and order", List.copyOf(kafka.keySet()), List.copyOf(ours.keySet()));
            for (String key : kafka.keySet()) report.equal(label + ": " + key, kafka.get(key), ours.get(key));
            if (oursIsKraft) {
                report.equal(label + ": CommittedVoters = CurrentVoters when no change is in flight",
                    all.get("CurrentVoters"), all.get("CommittedVoters"));
            }
            return;
        }
        report.check(label, false, "no stable answer in 10 attempts: " + last);
    }

    private static Map<String, String> comparable(Map<String, String> fields) {
        Map<String, String> out = new LinkedHashMap<>(fields);
        out.remove("MaxFollowerLagTimeMs");
        return out;
    }

    /** The replication tables agree cell by cell, timestamps aside (those must only have Kafka's form). */
    private void compareReplication(String label, String kafkaBootstrap, String kraftBootstrap, boolean human)
            throws Exception {
        String flag = human ? "--human-readable" : null;
        String[] kafkaArgs = human
            ? new String[] {"--bootstrap-controller", kafkaBootstrap, "describe", "--replication", flag}
            : new String[] {"--bootstrap-controller", kafkaBootstrap, "describe", "--replication"};
        String[] oursArgs = human
            ? new String[] {"describe", "--bootstrap-controller", kraftBootstrap, "--replication", flag}
            : new String[] {"describe", "--bootstrap-controller", kraftBootstrap, "--replication"};
        Pattern ts = human ? RELATIVE : TIMESTAMP;
        String last = "";
        for (int attempt = 0; attempt < 10; attempt++) {
            Procs.Result k1 = Tools.kafka(kafkaArgs);
            Procs.Result o = tools.kraft(oursArgs);
            Procs.Result k2 = Tools.kafka(kafkaArgs);
            if (k1.code() != 0 || o.code() != 0 || k2.code() != 0) {
                last = "Kafka: " + k1 + "\nkraft: " + o;
                Thread.sleep(500);
                continue;
            }
            List<List<String>> kafka = masked(Tools.table(k1.out()));
            if (!kafka.equals(masked(Tools.table(k2.out())))) {
                last = "the quorum kept changing: " + k1.out() + k2.out();
                Thread.sleep(500);
                continue;
            }
            List<List<String>> oursRaw = Tools.table(o.out());
            report.equal(label + ": header line", k1.out().lines().findFirst().orElse(""),
                o.out().lines().findFirst().orElse(""));
            report.equal(label + ": rows (timestamps aside)", kafka, masked(oursRaw));
            boolean forms = oursRaw.stream().skip(1).allMatch(r -> r.size() == 7
                && ts.matcher(r.get(4)).matches() && ts.matcher(r.get(5)).matches());
            report.check(label + ": our timestamps have Kafka's form", forms, o.out());
            return;
        }
        report.check(label, false, "no stable answer in 10 attempts: " + last);
    }

    private static List<List<String>> masked(List<List<String>> rows) {
        return rows.stream().map(r -> {
            List<String> m = new java.util.ArrayList<>(r);
            if (m.size() == 7 && !m.get(0).equals("NodeId")) {
                m.set(4, "<ts>");
                m.set(5, "<ts>");
            }
            return m;
        }).toList();
    }
}
