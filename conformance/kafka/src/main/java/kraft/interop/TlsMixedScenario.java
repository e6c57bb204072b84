package kraft.interop;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.VoteRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.VoteRequest;

/**
 * (l) The mixed quorum of (g) over mutual TLS. Certificates come from {@code kraft certs} (the files
 * {@code kraft cluster --tls} writes: one CA, {@code CN=kraft-node-<id>} per node, {@code CN=kraft-admin}); Kafka's
 * controllers have an SSL controller listener with {@code ssl.client.auth=required} (as (f)), our nodes mutual TLS
 * with {@code controller.principal.template=CN=kraft-node-{id}} (a Raft RPC must come from the certificate of the
 * id it names) and {@code super.users=User:CN=kraft-admin}.
 * <ul>
 * <li>l1: a {@code kraft} node joins a TLS Kafka quorum: (g)'s steps over TLS (joins as an observer, Kafka's
 * {@code add-controller} over SSL, elected with Kafka's votes after kill -9 of the Kafka leader, Kafka followers
 * replicate its log byte for byte, the killed controller catches up from it, after kill -9 of the {@code kraft}
 * leader a Kafka controller leads and the restarted {@code kraft} node follows it).</li>
 * <li>l2: a Kafka controller joins a TLS {@code kraft} quorum (three {@code kraft node} processes): formatted with
 * {@code --no-initial-controllers}, it fetches from our leader over SSL, Kafka's {@code add-controller} (admin
 * certificate, a super user) makes it a voter, its log equals our leader's byte for byte; kill -9 of our leader:
 * 3 of 4 voters alive, so the Kafka controller takes part in the election; whoever wins, the followers of the
 * other kind replicate its log byte for byte.</li>
 * <li>In both, the epoch-overflow Vote ({@code ReplicaEpoch = 2147483647} in a voter's name) sent to every
 * live node in plaintext and with a certificate from another CA (claiming {@code CN=kraft-node-<id>}) changes no
 * node's epoch (each node's {@code quorum-state} file, and the leader's epoch).</li>
 * </ul>
 */
final class TlsMixedScenario {
    private static final int OURS = 5;
    private static final int THEIRS = 4;
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Report report;
    private final Tools tools;
    private final Path work;
    private final String kraft;
    private Path tls;
    private Path rogue;
    private Path admin;
    /** Every (epoch, leader) either kind reported, per quorum. */
    private Map<Integer, Integer> leaders = new TreeMap<>();

    TlsMixedScenario(Report report, Tools tools, Path work, String kraft) {
        this.report = report;
        this.tools = tools;
        this.work = work;
        this.kraft = kraft;
    }

    /** Runs (l) alone (also: {@code run.sh --only l}): {@code TlsMixedScenario --kraft PATH_TO_KRAFT_BINARY --work DIR} (exit 1 on a divergence). */
    public static void main(String[] args) throws Exception {
        Report report = new Report();
        Path work = Path.of(args[3]).toAbsolutePath();
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
            ProcessHandle.current().descendants().forEach(ProcessHandle::destroy)));
        new TlsMixedScenario(report, new Tools(args[1]), work, args[1]).run();
        System.out.println(report.summary(org.apache.kafka.common.utils.internals.AppInfoParser.getVersion()));
        System.exit(report.divergenceCount() == 0 ? 0 : 1);
    }

    void run() throws Exception {
        report.scenario("l1: mixed quorum over mutual TLS: a kraft node joins TLS Kafka controllers, is added,"
            + " is elected, leads them, follows a Kafka leader again; hostile Votes change no epoch");
        try {
            Files.createDirectories(work);
            tls = work.resolve("tls");
            rogue = work.resolve("rogue");
            admin = tls.resolve("admin.properties");
            for (Path dir : List.of(tls, rogue)) {
                Procs.Result r = tools.kraft("certs", "--dir", dir.toString(), "--node-ids", "1,2,3,4,5");
                if (r.code() != 0) throw new IOException("kraft certs: " + r);
            }
            kraftJoinsKafka();
        } catch (Exception e) {
            report.aborted(e);
        }
        report.scenario("l2: mixed quorum over mutual TLS: a Kafka controller joins a TLS kraft quorum, is added,"
            + " replicates, takes part in an election; hostile Votes change no epoch");
        try {
            if (tls == null || !Files.exists(admin)) throw new IOException("no certificates (l1 failed early)");
            leaders = new TreeMap<>();
            kafkaJoinsKraft();
        } catch (Exception e) {
            report.aborted(e);
        }
    }

    // ----- l1 ----------------------------------------------------------------------------------------

    private void kraftJoinsKafka() throws Exception {
        Map<String, String> slow = Map.of("controller.quorum.election.timeout.ms", "6000",
            "controller.quorum.fetch.timeout.ms", "3000");
        try (KafkaQuorum kafka = new KafkaQuorum(work.resolve("l1-kafka"), slow);
             KraftQuorum ours = new KraftQuorum(work.resolve("l1-kraft"), kraft)) {
            try {
                kafka.extraConfig = this::kafkaSsl;
                kafka.startInitial(1, 2, 3);
                int[] first = awaitLeader(kafka, ours, -1, "the TLS Kafka controllers elect a leader");

                // 1. Our node (Kafka's storage tool formatted it) fetches over mutual TLS as an observer.
                List<String> args = new ArrayList<>(kraftTls(OURS));
                args.addAll(List.of("--election-timeout-ms", "1000", "--fetch-timeout-ms", "5000"));
                ours.startJoinerFormattedByKafka(OURS, kafka.clusterId, kafka.initialControllers(),
                    args.toArray(String[]::new));
                awaitCaughtUp(kafka.address(first[0]), OURS, "the kraft observer fetches the TLS Kafka leader's log");

                // 2. Kafka's add-controller over SSL (the operator's certificate).
                Procs.Result add = Tools.kafka("--bootstrap-controller", kafka.address(first[0]), "--command-config",
                    addConfig(ours.dir, OURS, ours.address(OURS), ours.dataDir(OURS)).toString(), "add-controller");
                report.check("Kafka's add-controller over SSL adds the kraft node (exit 0)", add.code() == 0,
                    add.toString());
                awaitVoter(kafka.address(first[0]), OURS, "the kraft node is a voter at the Kafka leader's end offset");

                // 3. kill -9 of the Kafka leader: our node is elected with Kafka's votes, over TLS.
                kafka.kill(first[0]);
                int[] second = awaitLeader(kafka, ours, first[1], "after kill -9 of Kafka leader " + first[0]
                    + ": a new leader with 3 of 4 voters alive");
                report.equal("the kraft node is elected over TLS (as in g)", OURS, second[0]);
                if (second[0] != OURS) return;
                awaitAllCaughtUp(ours.address(OURS), "TLS Kafka followers replicate the kraft leader's log");
                long hw = highWatermark(ours.address(OURS));
                for (int id : kafka.ports.keySet()) {
                    if (id != first[0]) compareLogs("kraft leader and TLS Kafka follower " + id, ours.segment(OURS),
                        kafka.segment(id), hw);
                }

                // 4. Hostile Votes to every live node: nothing moves.
                Map<String, Path> states = new LinkedHashMap<>();
                states.put(ours.address(OURS), quorumState(ours.dataDir(OURS)));
                for (int id : kafka.ports.keySet()) {
                    if (kafka.running(id)) states.put(kafka.address(id), quorumState(kafka.logDir(id)));
                }
                hostileVotes(kafka.clusterId, states, first[0] == 1 ? 2 : 1, ours.address(OURS));
                report.check("our node logs the refused handshakes", Files.readString(ours.nodeLog(OURS))
                    .contains("TLS handshake refused"), "log: " + ours.nodeLog(OURS));

                // 5. The killed Kafka controller restarts and catches up from our leader.
                kafka.restart(first[0]);
                awaitCaughtUp(ours.address(OURS), first[0], "restarted TLS Kafka controller " + first[0]
                    + " catches up from the kraft leader");
                compareLogs("kraft leader and restarted Kafka controller " + first[0], ours.segment(OURS),
                    kafka.segment(first[0]), highWatermark(ours.address(OURS)));

                // 6. kill -9 of our leader: the Kafka controllers elect one of theirs; 7. ours follows it.
                ours.kill(OURS);
                int[] third = awaitLeader(kafka, ours, second[1], "after kill -9 of the kraft leader: a new leader");
                report.check("a TLS Kafka controller leads after the kraft leader is gone", third[0] != OURS,
                    "leader " + third[0]);
                ours.restart(OURS);
                awaitCaughtUp(kafka.address(third[0]), OURS, "the restarted kraft node follows TLS Kafka leader "
                    + third[0] + " to its end offset");
                report.check("one leader per epoch, as either kind reported it " + leaders, true, "");
            } finally {
                report.check("TLS Kafka controllers still running at the end of l1", kafka.allAlive(), "see " + kafka.dir);
                report.check("the TLS kraft node still running at the end of l1", ours.allAlive(), "see " + ours.dir);
            }
        }
    }

    // ----- l2 ----------------------------------------------------------------------------------------

    private void kafkaJoinsKraft() throws Exception {
        try (KafkaQuorum kafka = new KafkaQuorum(work.resolve("l2-kafka"));
             KraftQuorum ours = new KraftQuorum(work.resolve("l2-kraft"), kraft)) {
            try {
                ours.startInitialNodes(kafka.clusterId, id -> kraftTls(id), 1, 2, 3);
                int[] first = awaitLeader(kafka, ours, -1, "the TLS kraft nodes elect a leader");

                // 1. A Kafka controller formatted with --no-initial-controllers fetches from our leader over SSL.
                String bootstrap = String.join(",", ours.address(1), ours.address(2), ours.address(3));
                kafka.extraConfig = id -> {
                    Map<String, String> m = new LinkedHashMap<>(kafkaSsl(id));
                    m.put("controller.quorum.bootstrap.servers", bootstrap);
                    return m;
                };
                Files.createDirectories(kafka.dir);
                kafka.startObserver(THEIRS);
                awaitCaughtUp(ours.address(first[0]), THEIRS, "the Kafka observer fetches the TLS kraft leader's log");

                // 2. Kafka's add-controller over SSL against our quorum (the operator's certificate, a super user).
                Procs.Result add = Tools.kafka("--bootstrap-controller", ours.address(1), "--command-config",
                    addConfig(kafka.dir, THEIRS, kafka.address(THEIRS), kafka.logDir(THEIRS)).toString(),
                    "add-controller");
                report.check("Kafka's add-controller over SSL adds the Kafka controller to the kraft quorum (exit 0)",
                    add.code() == 0, add.toString());
                awaitVoter(ours.address(first[0]), THEIRS, "the Kafka controller is a voter at the kraft leader's end offset");
                compareLogs("kraft leader and Kafka follower " + THEIRS, ours.segment(first[0]), kafka.segment(THEIRS),
                    highWatermark(ours.address(first[0])));

                Map<String, Path> states = new LinkedHashMap<>();
                for (int id = 1; id <= 3; id++) states.put(ours.address(id), quorumState(ours.dataDir(id)));
                states.put(kafka.address(THEIRS), quorumState(kafka.logDir(THEIRS)));
                hostileVotes(kafka.clusterId, states, first[0] == 1 ? 2 : 1, ours.address(first[0]));

                // 3. kill -9 of our leader: 3 of 4 voters alive, the Kafka controller among them.
                ours.kill(first[0]);
                int[] second = awaitLeader(kafka, ours, first[1], "after kill -9 of kraft leader " + first[0]
                    + ": a new leader with 3 of 4 voters alive (the Kafka controller took part)");
                String leaderAddress = second[0] == THEIRS ? kafka.address(THEIRS) : ours.address(second[0]);
                awaitAllCaughtUp(leaderAddress, "the other kind follows leader " + second[0] + " over TLS");
                long hw = highWatermark(leaderAddress);
                if (second[0] == THEIRS) {
                    for (int id = 1; id <= 3; id++) {
                        if (id != first[0]) compareLogs("Kafka leader and kraft follower " + id, kafka.segment(THEIRS),
                            ours.segment(id), hw);
                    }
                } else {
                    compareLogs("kraft leader " + second[0] + " and Kafka follower " + THEIRS, ours.segment(second[0]),
                        kafka.segment(THEIRS), hw);
                }
                report.check("one leader per epoch, as either kind reported it " + leaders, true, "");
            } finally {
                report.check("the TLS Kafka controller still running at the end of l2", kafka.allAlive(), "see " + kafka.dir);
                report.check("TLS kraft nodes still running at the end of l2", ours.allAlive(), "see " + ours.dir);
            }
        }
    }

    // ----- configuration -------------------------------------------------------------------------------

    /** Kafka's SSL controller listener with node {@code id}'s certificate, as in (f). */
    private Map<String, String> kafkaSsl(int id) {
        return Map.of("listener.security.protocol.map", "CONTROLLER:SSL",
            "ssl.keystore.type", "PEM",
            "ssl.keystore.location", tls.resolve("node-" + id + ".pem").toString(),
            "ssl.truststore.type", "PEM",
            "ssl.truststore.location", tls.resolve("ca.pem").toString(),
            "ssl.client.auth", "required");
    }

    /** Our node's mutual TLS flags: Raft RPCs bound to {@code CN=kraft-node-<id>}, changes from the admin only. */
    private List<String> kraftTls(int id) {
        return List.of("--security-protocol", "SSL",
            "--ssl-keystore-location", tls.resolve("node-" + id + ".pem").toString(),
            "--ssl-truststore-location", tls.resolve("ca.pem").toString(),
            "--ssl-client-auth", "required",
            "--controller-principal-template", "CN=kraft-node-{id}",
            "--super-users", "User:CN=kraft-admin");
    }

    /** {@code add-controller}'s --command-config: the new controller's identity, and the operator's SSL client. */
    private Path addConfig(Path dir, int id, String address, Path logDir) throws IOException {
        Path config = dir.resolve("add-controller-" + id + ".properties");
        Files.writeString(config, String.join("\n", "process.roles=controller", "node.id=" + id,
            "controller.listener.names=CONTROLLER", "listeners=CONTROLLER://" + address,
            "metadata.log.dir=" + logDir, Files.readString(admin)) + "\n");
        return config;
    }

    // ----- hostile Votes -------------------------------------------------------------------------------

    private static Path quorumState(Path dataDir) {
        return dataDir.resolve("__cluster_metadata-0").resolve("quorum-state");
    }

    private static int epochIn(Path quorumState) throws IOException {
        return JSON.readTree(Files.readString(quorumState)).get("leaderEpoch").asInt();
    }

    /**
     * The epoch-overflow Vote in voter {@code claimed}'s name, sent to every node of {@code states} (address to
     * its quorum-state file) in plaintext and with the rogue CA's {@code CN=kraft-node-<claimed>} certificate: no
     * answer, and every node's epoch (and the leader's) is unchanged afterwards.
     */
    private void hostileVotes(String clusterId, Map<String, Path> states, int claimed, String leaderAddress)
            throws Exception {
        Map<String, Integer> before = new LinkedHashMap<>();
        for (Map.Entry<String, Path> e : states.entrySet()) before.put(e.getKey(), epochIn(e.getValue()));
        String leaderEpoch = status(leaderAddress).get("LeaderEpoch");
        SSLContext untrusted = sslContext(rogue.resolve("node-" + claimed + ".pem"), tls.resolve("ca.pem"));
        for (String address : states.keySet()) {
            String plain = sendVote(address, null, hostileVote(clusterId, claimed));
            report.check("epoch-overflow Vote in plaintext to " + address + ": no answer", plain.startsWith("no answer"),
                plain);
            String rogueCert = sendVote(address, untrusted, hostileVote(clusterId, claimed));
            report.check("epoch-overflow Vote with another CA's certificate to " + address + ": no answer",
                rogueCert.startsWith("no answer"), rogueCert);
        }
        // The leader answers a describe after the Votes were refused; then nothing may have moved.
        report.equal("the leader's epoch after the hostile Votes", leaderEpoch, status(leaderAddress).get("LeaderEpoch"));
        Map<String, Integer> after = new LinkedHashMap<>();
        for (Map.Entry<String, Path> e : states.entrySet()) after.put(e.getKey(), epochIn(e.getValue()));
        report.equal("every node's quorum-state epoch after the hostile Votes", before, after);
    }

    private static ByteBuffer hostileVote(String clusterId, int claimed) {
        VoteRequestData data = new VoteRequestData().setClusterId(clusterId).setVoterId(-1);
        data.topics().add(new VoteRequestData.TopicData().setTopicName("__cluster_metadata")
            .setPartitions(List.of(new VoteRequestData.PartitionData().setPartitionIndex(0)
                .setReplicaEpoch(Integer.MAX_VALUE).setReplicaId(claimed).setReplicaDirectoryId(Uuid.randomUuid())
                .setLastOffsetEpoch(Integer.MAX_VALUE).setLastOffset(Long.MAX_VALUE / 2))));
        short version = 1;
        return new VoteRequest.Builder(data).build(version)
            .serializeWithHeader(new RequestHeader(ApiKeys.VOTE, version, "hostile", 7));
    }

    /**
     * Sends one frame; returns "no answer ..." if no Kafka response frame comes back within 3 s (closed, refused
     * handshake, or only a TLS alert record), else a description of what came back.
     */
    private static String sendVote(String address, SSLContext ssl, ByteBuffer frame) {
        String[] hostPort = address.split(":");
        try (Socket s = ssl == null ? new Socket() : ssl.getSocketFactory().createSocket()) {
            s.connect(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])), 3000);
            s.setSoTimeout(3000);
            if (s instanceof SSLSocket t) t.startHandshake();
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(frame.remaining());
            out.write(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
            out.flush();
            byte[] head = new byte[5];
            new DataInputStream(s.getInputStream()).readFully(head);
            // Plaintext to an SSL listener: the server's TLS stack answers with an alert record (content type 21,
            // version 3.x) and closes; that is the handshake failing, not a Kafka frame.
            if (ssl == null && head[0] == 21 && head[1] == 3) {
                return "no answer: a TLS alert record, then closed (" + java.util.HexFormat.of().formatHex(head) + ")";
            }
            return "answered with a " + ByteBuffer.wrap(head).getInt() + "-byte frame";
        } catch (IOException e) {
            return "no answer (" + e + ")";
        }
    }

    private static final Pattern PEM = Pattern.compile("-----BEGIN ([A-Z ]+)-----([^-]+)-----END \\1-----");

    /** A client TLS context: key and certificate from a PEM key store file, trusting the CAs of {@code trust}. */
    private static SSLContext sslContext(Path keystore, Path trust) throws Exception {
        CertificateFactory x509 = CertificateFactory.getInstance("X.509");
        PrivateKey key = null;
        List<Certificate> chain = new ArrayList<>();
        Matcher m = PEM.matcher(Files.readString(keystore));
        while (m.find()) {
            byte[] der = Base64.getMimeDecoder().decode(m.group(2));
            if (m.group(1).equals("PRIVATE KEY")) {
                key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der));
            } else if (m.group(1).equals("CERTIFICATE")) {
                chain.add(x509.generateCertificate(new ByteArrayInputStream(der)));
            }
        }
        char[] none = new char[0];
        KeyStore keys = KeyStore.getInstance("PKCS12");
        keys.load(null, none);
        keys.setKeyEntry("client", key, none, chain.toArray(Certificate[]::new));
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, none);
        KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, none);
        int i = 0;
        for (Certificate c : x509.generateCertificates(new ByteArrayInputStream(Files.readAllBytes(trust)))) {
            trusted.setCertificateEntry("ca-" + i++, c);
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trusted);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        return context;
    }

    // ----- waiting and comparing (as MixedScenario, every request over TLS with the operator's certificate) ----

    private Map<String, String> status(String address) throws Exception {
        Procs.Result r = tools.kraft("describe", "--bootstrap-controller", address, "--status", "--timeout-ms", "3000",
            "--command-config", admin.toString());
        return r.code() == 0 ? Tools.statusFields(r.out()) : Map.of();
    }

    private List<List<String>> replication(String address) throws Exception {
        Procs.Result r = tools.kraft("describe", "--bootstrap-controller", address, "--replication", "--timeout-ms",
            "3000", "--command-config", admin.toString());
        return r.code() == 0 ? Tools.table(r.out()) : List.of();
    }

    private static List<String> addresses(KafkaQuorum kafka, KraftQuorum ours) {
        List<String> out = new ArrayList<>();
        for (int id : ours.ports.keySet()) if (ours.running(id)) out.add(ours.address(id));
        for (int id : kafka.ports.keySet()) if (kafka.running(id)) out.add(kafka.address(id));
        return out;
    }

    /** Waits (60 s) for a leader of an epoch above {@code after}; returns {leader, epoch}. */
    private int[] awaitLeader(KafkaQuorum kafka, KraftQuorum ours, int after, String label)
            throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            for (String address : addresses(kafka, ours)) {
                Map<String, String> f = status(address);
                last = address + ": " + f;
                int leader = Integer.parseInt(f.getOrDefault("LeaderId", "-1"));
                int epoch = Integer.parseInt(f.getOrDefault("LeaderEpoch", "-1"));
                if (leader < 0 || epoch <= after) continue;
                Integer before = leaders.putIfAbsent(epoch, leader);
                if (before != null && before != leader) {
                    report.check("one leader per epoch", false, "epoch " + epoch + ": " + before + " and " + leader);
                }
                report.check(label + " (leader " + leader + ", epoch " + epoch + ")", true, "");
                return new int[] {leader, epoch};
            }
            Thread.sleep(300);
        }
        report.check(label, false, "no leader above epoch " + after + " in 60 s; last: " + last);
        throw new IllegalStateException(label + ": no leader");
    }

    /** The end offset of the row with status {@code status} (or of node {@code id} if status is null). */
    private static long leo(List<List<String>> rows, String status, int id) {
        for (List<String> row : rows.subList(Math.min(1, rows.size()), rows.size())) {
            if (row.size() < 7) continue;
            if ((status != null && row.get(6).equals(status)) || (status == null && row.get(0).equals(Integer.toString(id)))) {
                return Long.parseLong(row.get(2));
            }
        }
        return -2;
    }

    /** Waits (60 s) until replica {@code id} reports the leader's end offset in the leader's DescribeQuorum. */
    private void awaitCaughtUp(String address, int id, String label) throws Exception {
        awaitRow(address, id, null, label);
    }

    /** Waits (60 s) until {@code id} is a voter (Follower) at the leader's end offset. */
    private void awaitVoter(String address, int id, String label) throws Exception {
        awaitRow(address, id, "Follower", label);
    }

    private void awaitRow(String address, int id, String status, String label) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        List<List<String>> rows = List.of();
        while (System.currentTimeMillis() < deadline) {
            rows = replication(address);
            long leader = leo(rows, "Leader", -1);
            boolean statusOk = status == null || rows.stream().anyMatch(r -> r.size() == 7
                && r.get(0).equals(Integer.toString(id)) && r.get(6).equals(status));
            if (leader > 0 && leo(rows, null, id) == leader && statusOk) {
                report.check(label + " (" + leader + ")", true, "");
                return;
            }
            Thread.sleep(300);
        }
        report.check(label, false, "replication via " + address + ": " + rows);
    }

    /** Waits (60 s) until every live voter is at the leader's end offset and the HW equals it. */
    private void awaitAllCaughtUp(String address, String label) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            List<List<String>> rows = replication(address);
            long leader = leo(rows, "Leader", -1);
            long followers = rows.stream().skip(1).filter(r -> r.size() == 7 && r.get(6).equals("Follower")
                && Long.parseLong(r.get(2)) == leader).count();
            String hw = status(address).get("HighWatermark");
            last = rows + " HW " + hw;
            if (leader > 0 && followers >= 2 && Long.toString(leader).equals(hw)) {
                report.check(label + " (" + leader + ", " + followers + " followers)", true, "");
                return;
            }
            Thread.sleep(300);
        }
        report.check(label, false, last);
    }

    private long highWatermark(String address) throws Exception {
        String hw = status(address).get("HighWatermark");
        return hw == null ? -1 : Long.parseLong(hw);
    }

    private void compareLogs(String label, Path ours, Path theirs, long hw) throws Exception {
        List<String> a = MixedQuorum.batchesBelow(ours, hw);
        List<String> b = MixedQuorum.batchesBelow(theirs, hw);
        report.check(label + ": the same batches below HW " + hw + " (" + a.size() + " batches, CRCs and bytes)",
            !a.isEmpty() && a.equals(b), "first difference: " + MixedQuorum.firstDifference(a, b));
    }
}
