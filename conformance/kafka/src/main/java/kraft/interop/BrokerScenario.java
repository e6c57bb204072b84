package kraft.interop;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.common.Uuid;

/**
 * {@code kraft describe}, {@code --watch}, {@code add-voter} and {@code remove-voter} with {@code --bootstrap-server}
 * against Apache Kafka clusters with brokers: the requests go to a broker, which forwards them to the active
 * controller (Kafka's {@code KafkaApis.forwardToController}); CommittedVoters is computed from the metadata log
 * fetched at the controller endpoints of the quorum description. (bs) three combined-mode nodes
 * ({@code process.roles=broker,controller}); (bb) three controllers and one broker, which is the only address the
 * tools are given. Each removes a voter and adds it back through a broker, so no extra JVM is started.
 */
record BrokerScenario(Report report, Tools tools, Path work) {

    /** (bs) Three combined-mode nodes. */
    void runCombined() throws Exception {
        try (KafkaServers k = new KafkaServers(work.resolve("combined"))) {
            Map<Integer, Integer> broker = new LinkedHashMap<>(), controller = new LinkedHashMap<>();
            Map<Integer, Uuid> dirs = new LinkedHashMap<>();
            for (int id = 1; id <= 3; id++) {
                broker.put(id, KafkaQuorum.freePort());
                controller.put(id, KafkaQuorum.freePort());
                dirs.put(id, Uuid.randomUuid());
            }
            String initial = controller.keySet().stream()
                .map(id -> id + "@127.0.0.1:" + controller.get(id) + ":" + dirs.get(id)).collect(Collectors.joining(","));
            String bootstrap = controller.values().stream().map(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
            for (int id = 1; id <= 3; id++) {
                k.write(id, Map.of("process.roles", "broker,controller", "controller.listener.names", "CONTROLLER",
                    "listeners", "PLAINTEXT://127.0.0.1:" + broker.get(id) + ",CONTROLLER://127.0.0.1:" + controller.get(id),
                    "inter.broker.listener.name", "PLAINTEXT",
                    "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "controller.quorum.bootstrap.servers", bootstrap));
                k.format(id, "--initial-controllers", initial);
            }
            for (int id = 1; id <= 3; id++) k.launch(id);
            for (int id = 1; id <= 3; id++) k.awaitPort(id, broker.get(id));
            String via = "127.0.0.1:" + broker.get(2);
            Map<Integer, String> endpoints = new LinkedHashMap<>();
            controller.forEach((id, p) -> endpoints.put(id, "127.0.0.1:" + p));
            checks("bs", via, List.of(1, 2, 3), dirs, endpoints);
            report.check("bs: every Kafka node still running", k.allAlive(), "see " + k.dir);
        }
    }

    /** (bb) Three controllers and one broker; the tools get only the broker's address. */
    void runBrokerInFront() throws Exception {
        try (KafkaQuorum controllers = new KafkaQuorum(work.resolve("controllers"));
                KafkaServers k = new KafkaServers(work.resolve("broker"))) {
            controllers.startInitial(1, 2, 3);
            k.clusterId = controllers.clusterId;
            int port = KafkaQuorum.freePort();
            k.write(10, Map.of("process.roles", "broker", "controller.listener.names", "CONTROLLER",
                "listeners", "PLAINTEXT://127.0.0.1:" + port, "inter.broker.listener.name", "PLAINTEXT",
                "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "controller.quorum.bootstrap.servers",
                List.of(1, 2, 3).stream().map(controllers::address).collect(Collectors.joining(","))));
            k.format(10);
            k.launch(10);
            k.awaitPort(10, port);
            String via = "127.0.0.1:" + port;
            Map<Integer, String> endpoints = new LinkedHashMap<>();
            for (int id = 1; id <= 3; id++) endpoints.put(id, controllers.address(id));
            checks("bb", via, List.of(1, 2, 3), controllers.directoryIds, endpoints);
            report.check("bb: every Kafka process still running", k.allAlive() && controllers.allAlive(),
                "see " + work);
        }
    }

    /** The checks of (bs) and (bb); the voter moved out and back is a follower, so the leader stays. */
    private void checks(String tag, String via, List<Integer> voters, Map<Integer, Uuid> dirs,
            Map<Integer, String> endpoints) throws Exception {
        compareStatus(tag + ": describe --status via broker " + via, via);
        Procs.Result d = tools.kraft("describe", "--bootstrap-server", via, "--status");
        Map<String, String> f = Tools.statusFields(d.out());
        report.equal(tag + ": CommittedVoters computed through a controller endpoint = CurrentVoters",
            f.get("CurrentVoters"), f.get("CommittedVoters"));
        report.check(tag + ": marked as computed from the metadata log", f.getOrDefault("CommittedVotersSource", "")
            .startsWith("computed by kraft from the metadata log"), d.toString());
        watchLine(tag, via, voters);
        int leader = Integer.parseInt(f.getOrDefault("LeaderId", "-1"));
        int moved = voters.stream().filter(id -> id != leader).reduce((a, b) -> b).orElseThrow();
        Uuid movedDir = dirs.get(moved);
        String movedEndpoint = endpoints.get(moved);

        List<Integer> rest = new ArrayList<>(voters);
        rest.remove(Integer.valueOf(moved));
        Procs.Result remove = tools.kraft("remove-voter", "--bootstrap-server", via, "--node-id",
            Integer.toString(moved), "--timeout-ms", "30000");
        report.check(tag + ": kraft remove-voter " + moved + " via the broker (exit 0)", remove.code() == 0,
            remove.toString());
        NowLine.check(report, tag + ": remove-voter via the broker", remove, rest);
        report.equal(tag + ": Kafka's Admin (bootstrap.servers) sees the voters", rest, voterIds(via));
        Procs.Result add = null;
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            // The removed voter must be followed again as an observer before its AddRaftVoter can pass.
            add = tools.kraft("add-voter", "--bootstrap-server", via, "--node-id", Integer.toString(moved),
                "--directory-id=" + movedDir, "--endpoint", movedEndpoint, "--timeout-ms", "20000");
            if (add.code() == 0) break;
            Thread.sleep(500);
        }
        report.check(tag + ": kraft add-voter " + moved + " via the broker (exit 0)", add.code() == 0, add.toString());
        NowLine.check(report, tag + ": add-voter via the broker", add, voters);
        report.equal(tag + ": Kafka's Admin (bootstrap.servers) sees the voters again", voters, voterIds(via));
    }

    private static List<Integer> voterIds(String bootstrapServers) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        try (Admin admin = Admin.create(props)) {
            QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get();
            return q.voters().stream().map(QuorumInfo.ReplicaState::replicaId).sorted().toList();
        }
    }

    /** Kafka's tool and ours via the broker agree on every line but MaxFollowerLagTimeMs (ours adds lines). */
    private void compareStatus(String label, String via) throws Exception {
        String last = "";
        for (int attempt = 0; attempt < 40; attempt++) {
            Procs.Result k1 = Tools.kafka("--bootstrap-server", via, "describe", "--status");
            Procs.Result o = tools.kraft("describe", "--bootstrap-server", via, "--status", "--timeout-ms", "5000");
            Procs.Result k2 = Tools.kafka("--bootstrap-server", via, "describe", "--status");
            Map<String, String> kafka = Tools.statusFields(k1.out());
            kafka.remove("MaxFollowerLagTimeMs");
            Map<String, String> again = Tools.statusFields(k2.out());
            again.remove("MaxFollowerLagTimeMs");
            if (k1.code() != 0 || o.code() != 0 || k2.code() != 0 || !kafka.equals(again)) {
                last = "Kafka: " + k1 + "\nkraft: " + o + "\nKafka again: " + k2;
                Thread.sleep(500);
                continue;
            }
            Map<String, String> ours = Tools.statusFields(o.out());
            for (String extra : List.of("MaxFollowerLagTimeMs", "CommittedVoters", "CommittedVotersSource",
                    "Reconfiguration")) {
                ours.remove(extra);
            }
            report.equal(label + ": lines and order", List.copyOf(kafka.keySet()), List.copyOf(ours.keySet()));
            for (String key : kafka.keySet()) report.equal(label + ": " + key, kafka.get(key), ours.get(key));
            return;
        }
        report.check(label, false, "no stable answer: " + last);
    }

    /** {@code kraft describe --bootstrap-server --watch}: its first line names the committed voters. */
    private void watchLine(String tag, String via, List<Integer> voters) throws Exception {
        Process p = new ProcessBuilder(tools.kraftPath(), "describe", "--bootstrap-server", via, "--watch")
            .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String line = null;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            var reader = java.util.concurrent.Executors.newSingleThreadExecutor();
            try {
                line = reader.submit(r::readLine).get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                line = "(no line in 30 s: " + e + ")";
            } finally {
                p.destroy();
                p.waitFor(10, TimeUnit.SECONDS);
                reader.shutdownNow();
            }
        }
        String expected = "CommittedVoters: " + voters;
        report.check(tag + ": describe --watch via the broker prints " + expected, line != null
            && line.contains("CurrentVoters: " + voters + " " + expected), String.valueOf(line));
    }
}
