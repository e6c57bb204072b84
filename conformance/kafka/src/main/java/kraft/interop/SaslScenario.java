package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * (sa) {@code kraft describe} over SASL against an Apache Kafka controller whose listeners require it, as Kafka's
 * tools take it ({@code --command-config}: {@code security.protocol=SASL_PLAINTEXT}, {@code sasl.mechanism},
 * {@code sasl.jaas.config}). One controller with StandardAuthorizer; SCRAM users created before its first start
 * with {@code kafka-storage format --add-scram}. PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 authenticate and give
 * Kafka's own tool's answer (CommittedVoters computed over the same SASL connection); a wrong password, a mechanism
 * kraft does not speak, one the listener does not enable, and a principal without the ACLs each get their own exit
 * code and a one-line error.
 */
record SaslScenario(Report report, Tools tools, Path work) {
    private static final String PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule";
    private static final String SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule";

    void run() throws Exception {
        try (KafkaServers k = new KafkaServers(work)) {
            // The second listener is SASL_SSL, with a certificate from kraft certs (valid for 127.0.0.1).
            Path tls = work.resolve("tls");
            Procs.Result certs = tools.kraft("certs", "--dir", tls.toString(), "--node-ids", "1");
            if (certs.code() != 0) throw new IllegalStateException("kraft certs: " + certs);
            int port = KafkaQuorum.freePort(), plainOnly = KafkaQuorum.freePort();
            String plainJaas = PLAIN + " required username=\"admin\" password=\"admin-secret\""
                + " user_admin=\"admin-secret\" user_reader=\"reader-secret\";";
            Map<String, String> props = new java.util.HashMap<>(Map.ofEntries(
                Map.entry("process.roles", "controller"),
                Map.entry("controller.listener.names", "CONTROLLER,PLAINONLY"),
                Map.entry("listeners", "CONTROLLER://127.0.0.1:" + port + ",PLAINONLY://127.0.0.1:" + plainOnly),
                Map.entry("listener.security.protocol.map", "CONTROLLER:SASL_PLAINTEXT,PLAINONLY:SASL_SSL"),
                Map.entry("ssl.keystore.type", "PEM"),
                Map.entry("ssl.keystore.location", tls.resolve("node-1.pem").toString()),
                Map.entry("ssl.truststore.type", "PEM"),
                Map.entry("ssl.truststore.location", tls.resolve("ca.pem").toString()),
                Map.entry("controller.quorum.bootstrap.servers", "127.0.0.1:" + port),
                Map.entry("sasl.mechanism.controller.protocol", "PLAIN"),
                Map.entry("listener.name.controller.sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"),
                Map.entry("listener.name.controller.plain.sasl.jaas.config", plainJaas),
                Map.entry("listener.name.controller.scram-sha-256.sasl.jaas.config", SCRAM + " required;"),
                Map.entry("listener.name.controller.scram-sha-512.sasl.jaas.config", SCRAM + " required;"),
                Map.entry("listener.name.plainonly.sasl.enabled.mechanisms", "PLAIN"),
                Map.entry("listener.name.plainonly.plain.sasl.jaas.config", plainJaas),
                Map.entry("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
                Map.entry("super.users", "User:admin;User:alice")));
            k.write(1, props);
            k.format(1, "--standalone", "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
                "--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]");
            k.launch(1);
            k.awaitPort(1, port);
            String addr = "127.0.0.1:" + port;

            Path admin = config("admin-plain", "PLAIN", PLAIN, "admin", "admin-secret");
            Procs.Result up = awaitDescribe(addr, admin);
            report.check("sa: PLAIN (super user admin): kraft describe exits 0", up.code() == 0, up.toString());
            Scenarios.compareStatus(report, tools, "sa: PLAIN describe --status", addr, addr, false, admin);
            for (String mech : List.of("SCRAM-SHA-256", "SCRAM-SHA-512")) {
                Path c = config("alice-" + mech, mech, SCRAM, "alice", "alice-secret");
                Procs.Result r = tools.kraft("describe", "--bootstrap-controller", addr, "--status",
                    "--command-config", c.toString());
                Map<String, String> f = Tools.statusFields(r.out());
                report.check("sa: " + mech + " (alice, created by format --add-scram): exit 0", r.code() == 0,
                    r.toString());
                report.equal("sa: " + mech + ": CommittedVoters computed over SASL = CurrentVoters",
                    f.get("CurrentVoters"), f.get("CommittedVoters"));
                report.check("sa: " + mech + ": marked computed", f.getOrDefault("CommittedVotersSource", "")
                    .startsWith("computed by kraft from the metadata log"), r.toString());
                Scenarios.compareStatus(report, tools, "sa: " + mech + " describe --status", addr, addr, false, c);
            }

            refused("wrong SCRAM-SHA-256 password", addr,
                config("alice-wrong", "SCRAM-SHA-256", SCRAM, "alice", "not-her-password"), 9, "authentication failed");
            refused("wrong PLAIN password", addr, config("admin-wrong", "PLAIN", PLAIN, "admin", "nope"), 9,
                "authentication failed");
            refused("sasl.mechanism=GSSAPI (not spoken by kraft)", addr,
                config("gssapi", "GSSAPI", PLAIN, "admin", "admin-secret"), 10, "sasl.mechanism=GSSAPI");
            String overSsl = "127.0.0.1:" + plainOnly;
            Path adminSsl = sslConfig(config("admin-ssl", "PLAIN", PLAIN, "admin", "admin-secret"), tls);
            Procs.Result ssl = tools.kraft("describe", "--bootstrap-controller", overSsl, "--status",
                "--command-config", adminSsl.toString());
            Map<String, String> sf = Tools.statusFields(ssl.out());
            report.check("sa: SASL_SSL (PLAIN over TLS) on the second listener: exit 0, CommittedVoters computed",
                ssl.code() == 0 && sf.getOrDefault("CommittedVotersSource", "").startsWith("computed by kraft")
                    && "[1]".equals(Scenarios.ids(sf.get("CommittedVoters")).toString()), ssl.toString());
            Scenarios.compareStatus(report, tools, "sa: SASL_SSL describe --status", overSsl, overSsl, false, adminSsl);
            refused("SCRAM-SHA-512 on a SASL_SSL listener that enables only PLAIN", overSsl,
                sslConfig(config("alice-plainonly", "SCRAM-SHA-512", SCRAM, "alice", "alice-secret"), tls), 10,
                "does not enable SASL mechanism SCRAM-SHA-512 (it enables: PLAIN)");
            Path reader = config("reader", "PLAIN", PLAIN, "reader", "reader-secret");
            refused("reader without ACLs (DescribeCluster needs Alter)", addr, reader, 11,
                "the principal needs the ACL ALLOW Alter on Cluster:kafka-cluster");

            grantAlter(addr, admin, "User:reader");
            Procs.Result r = null;
            long deadline = System.currentTimeMillis() + 20_000;
            while (System.currentTimeMillis() < deadline) {
                r = tools.kraft("describe", "--bootstrap-controller", addr, "--status", "--command-config",
                    reader.toString());
                if (r.code() != 11 || !r.err().contains("needs the ACL ALLOW Alter")) break;
                Thread.sleep(300);
            }
            report.equal("sa: reader with ALLOW Alter but not ClusterAction: exit 11 (the log fetch is refused)", 11,
                r.code());
            report.check("sa: reader: the status is printed, CommittedVotersSource says why and names the ACL",
                Tools.statusFields(r.out()).getOrDefault("CommittedVotersSource", "").equals("not computed: User:reader"
                    + " may not fetch the metadata log: CLUSTER_AUTHORIZATION_FAILED (31) from " + addr
                    + "; it lacks the ACL ALLOW ClusterAction on Cluster:kafka-cluster"), r.toString());
            report.check("sa: reader: one error line", r.err().strip().lines().count() == 1
                && r.err().contains("ClusterAction"), r.err());
            report.check("sa: the Kafka controller still runs", k.allAlive(), "see " + k.dir);
        }
    }

    private Procs.Result awaitDescribe(String addr, Path cfg) throws Exception {
        Procs.Result r = null;
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            r = tools.kraft("describe", "--bootstrap-controller", addr, "--status", "--command-config", cfg.toString(),
                "--timeout-ms", "5000");
            if (r.code() == 0) return r;
            Thread.sleep(500);
        }
        return r;
    }

    private void refused(String what, String addr, Path cfg, int code, String says) throws Exception {
        Procs.Result r = tools.kraft("describe", "--bootstrap-controller", addr, "--status", "--command-config",
            cfg.toString(), "--timeout-ms", "5000");
        report.equal("sa: " + what + ": exit " + code, code, r.code());
        report.check("sa: " + what + ": one error line naming it", r.err().strip().lines().count() == 1
            && r.err().contains(says) && r.out().isEmpty(), r.toString());
    }

    private Path config(String name, String mechanism, String module, String user, String password)
            throws Exception {
        Properties p = new Properties();
        p.setProperty("security.protocol", "SASL_PLAINTEXT");
        p.setProperty("sasl.mechanism", mechanism);
        p.setProperty("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + password + "\";");
        Path path = work.resolve(name + ".properties");
        Files.createDirectories(work);
        try (var out = Files.newBufferedWriter(path)) {
            p.store(out, null);
        }
        return path;
    }

    /** {@code cfg} turned into SASL_SSL trusting the CA of {@code tls}. */
    private static Path sslConfig(Path cfg, Path tls) throws Exception {
        String text = Files.readString(cfg).replace("security.protocol=SASL_PLAINTEXT", "security.protocol=SASL_SSL");
        Files.writeString(cfg, text + "ssl.truststore.type=PEM\nssl.truststore.location="
            + tls.resolve("ca.pem") + "\n");
        return cfg;
    }

    /** ALLOW Alter on the cluster for {@code principal}, created by the super user through the controller. */
    private static void grantAlter(String addr, Path adminConfig, String principal) throws Exception {
        Properties props = new Properties();
        try (var in = Files.newBufferedReader(adminConfig)) {
            props.load(in);
        }
        props.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, addr);
        try (Admin admin = Admin.create(props)) {
            admin.createAcls(List.of(new AclBinding(
                new ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL),
                new AccessControlEntry(principal, "*", AclOperation.ALTER, AclPermissionType.ALLOW)))).all().get();
        }
    }
}
