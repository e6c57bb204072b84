package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.QuorumInfo;

/**
 * (e) TLS: Kafka's tools over SSL against {@code kraft cluster --tls} (mutual TLS), and our CLI over
 * SSL against Apache Kafka controllers with an SSL controller listener ({@code ssl.client.auth=required}), both
 * with the same {@code --command-config} file and the PEM files {@code kraft cluster --tls} wrote.
 * A Kafka controller joining a TLS kraft quorum is scenario (l2), {@link TlsMixedScenario}.
 */
final class TlsScenario {
    private final Report report;
    private final Tools tools;
    private final Path work;
    private final String kraft;

    TlsScenario(Report report, Tools tools, Path work, String kraft) {
        this.report = report;
        this.tools = tools;
        this.work = work;
        this.kraft = kraft;
    }

    void run() throws Exception {
        try (KraftQuorum ours = new KraftQuorum(work.resolve("kraft"), kraft)) {
            report.scenario("e: TLS: kafka-metadata-quorum and Admin over SSL against kraft cluster --tls");
            Path tlsDir = ours.dir.resolve("tls");
            Path admin = tlsDir.resolve("admin.properties");
            try {
                ours.startCluster(3, true);
                kafkaOverTlsAgainstKraft(ours, admin);
            } catch (Exception e) {
                report.aborted(e);
            }
            try (KafkaQuorum kafka = new KafkaQuorum(work.resolve("kafka"))) {
                report.scenario("f: TLS: kraft describe over SSL against Kafka controllers with an SSL controller listener");
                try {
                    kafka.extraConfig = id -> Map.of(
                        "listener.security.protocol.map", "CONTROLLER:SSL",
                        "ssl.keystore.type", "PEM",
                        "ssl.keystore.location", tlsDir.resolve("node-" + id + ".pem").toString(),
                        "ssl.truststore.type", "PEM",
                        "ssl.truststore.location", tlsDir.resolve("ca.pem").toString(),
                        "ssl.client.auth", "required");
                    kafka.startInitial(1, 2, 3);
                    kraftOverTlsAgainstKafka(kafka, admin, tlsDir);
                } catch (Exception e) {
                    report.aborted(e);
                }
                report.check("TLS Kafka controllers still running at the end", kafka.allAlive(),
                    "a controller exited; see " + kafka.dir);
            }
            report.check("TLS kraft nodes still running at the end", ours.allAlive(), "a node exited; see " + ours.dir);
        }
    }

    private void kafkaOverTlsAgainstKraft(KraftQuorum ours, Path admin) throws Exception {
        waitForLeader(ours.address(1), admin);
        for (int id = 1; id <= 3; id++) {
            String addr = ours.address(id);
            Scenarios.compareStatus(report, tools, "SSL describe --status via node " + id, addr, addr, true, admin);
        }
        Properties props = load(admin);
        props.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, ours.address(2));
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        try (Admin client = Admin.create(props)) {
            QuorumInfo q = client.describeMetadataQuorum().quorumInfo().get();
            Procs.Result o = tools.kraft("describe", "--bootstrap-controller", ours.address(2), "--status",
                "--command-config", admin.toString());
            report.equal("Admin over SSL: describeMetadataQuorum leaderId", Integer.toString(q.leaderId()),
                Tools.statusFields(o.out()).get("LeaderId"));
            report.equal("Admin over SSL: three voters", 3, q.voters().size());
        }
        // Kafka's tool without a client certificate: the TLS handshake is refused (ssl.client.auth=required).
        Path noCert = ours.dir.resolve("no-cert.properties");
        Properties p = load(admin);
        p.remove("ssl.keystore.type");
        p.remove("ssl.keystore.location");
        p.put("default.api.timeout.ms", "5000");
        p.put("request.timeout.ms", "4000");
        store(p, noCert);
        Procs.Result refused = Tools.kafka("--bootstrap-controller", ours.address(1), "--command-config",
            noCert.toString(), "describe", "--status");
        report.check("kafka-metadata-quorum without a client certificate is refused", refused.code() != 0,
            refused.toString());
        String log = Files.readString(ours.log());
        report.check("kraft logs the refused handshake", log.contains("TLS handshake refused"), "log: " + ours.log());
    }

    private void kraftOverTlsAgainstKafka(KafkaQuorum kafka, Path admin, Path tlsDir) throws Exception {
        waitForLeader(kafka.address(1), admin);
        for (int id = 1; id <= 3; id++) {
            String addr = kafka.address(id);
            Scenarios.compareStatus(report, tools, "SSL describe --status via Kafka controller " + id, addr, addr,
                false, admin);
        }
        Path noCert = tlsDir.resolve("no-cert-kraft.properties");
        Files.writeString(noCert, "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="
            + tlsDir.resolve("ca.pem") + "\n");
        Procs.Result refused = tools.kraft("describe", "--bootstrap-controller", kafka.address(1), "--status",
            "--command-config", noCert.toString(), "--timeout-ms", "5000");
        report.check("kraft describe without a client certificate is refused by Kafka (exit 8, TLS)",
            refused.code() == 8, refused.toString());
        Procs.Result plain = tools.kraft("describe", "--bootstrap-controller", kafka.address(1), "--status",
            "--timeout-ms", "5000");
        report.check("kraft describe in plaintext gets no answer from Kafka's SSL listener", plain.code() != 0,
            plain.toString());
    }

    private void waitForLeader(String bootstrap, Path admin) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        Procs.Result r = null;
        while (System.currentTimeMillis() < deadline) {
            r = tools.kraft("describe", "--bootstrap-controller", bootstrap, "--status", "--command-config",
                admin.toString(), "--timeout-ms", "3000");
            if (r.code() == 0) break;
            Thread.sleep(300);
        }
        report.check("a leader is elected and readable over TLS via " + bootstrap, r != null && r.code() == 0,
            String.valueOf(r));
    }

    private static Properties load(Path file) throws Exception {
        Properties p = new Properties();
        try (var in = Files.newBufferedReader(file)) {
            p.load(in);
        }
        return p;
    }

    private static void store(Properties p, Path file) throws Exception {
        try (var out = Files.newBufferedWriter(file)) {
            p.store(out, "kraft interop harness");
        }
    }
}
