package kraft.interop;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.DescribeQuorumResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.DescribeQuorumRequest;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.ResponseHeader;

/**
 * One quorum of both kinds: Apache Kafka controllers ({@link KafkaQuorum}) and {@code kraft node}
 * processes ({@link KraftQuorum}), with the waits every mixed scenario needs and the history the end checks
 * ({@link EndChecks}) judge: every (epoch, leader) and every leader's (HW, CommittedVoters) either kind reported,
 * with the leader's batches below that HW as they were then. Node ids decide the kind: {@link #isKraft}.
 */
final class MixedQuorum implements AutoCloseable {
    /** What the leader reported at one moment: HW, CommittedVoters (kraft only, else null), its batches below HW. */
    record Sample(String label, int leader, int epoch, long hw, List<Integer> committed, List<String> batches) {}

    final Report report;
    final Tools tools;
    final KafkaQuorum kafka;
    final KraftQuorum ours;
    /** Every (epoch, leader) either kind reported. */
    final Map<Integer, Integer> leaders = new TreeMap<>();
    final List<Sample> samples = new ArrayList<>();
    /** The static voters (kraft.version 0) the quorum started with, or null: its voter set before any VotersRecord. */
    List<Integer> staticVoters;
    /** {@code kraft describe}'s {@code --command-config} (e.g. SASL credentials); null: none. */
    Path commandConfig;
    /** Replicas stopped with SIGSTOP now: not asked anything (they cannot answer). */
    final java.util.Set<Integer> paused = new java.util.TreeSet<>();

    MixedQuorum(Report report, Tools tools, Path dir, String kraft, Map<String, String> kafkaConfig) {
        this.report = report;
        this.tools = tools;
        this.kafka = new KafkaQuorum(dir.resolve("kafka"), kafkaConfig);
        this.ours = new KraftQuorum(dir.resolve("kraft"), kraft);
    }

    boolean isKraft(int id) {
        return ours.ports.containsKey(id);
    }

    String address(int id) {
        return isKraft(id) ? ours.address(id) : kafka.address(id);
    }

    Path segment(int id) {
        return isKraft(id) ? ours.segment(id) : kafka.segment(id);
    }

    boolean running(int id) {
        return isKraft(id) ? ours.running(id) : kafka.running(id);
    }

    /** The metadata log directory ({@code __cluster_metadata-0}) of replica {@code id}: segments and snapshots. */
    Path metadataDir(int id) {
        return segment(id).getParent();
    }

    /** Every replica of either kind, running or not. */
    List<Integer> ids() {
        List<Integer> out = new ArrayList<>(kafka.ports.keySet());
        out.addAll(ours.ports.keySet());
        return out;
    }

    /** kill -9. */
    void kill(int id) throws InterruptedException {
        if (isKraft(id)) ours.kill(id);
        else kafka.kill(id);
    }

    void restart(int id) throws Exception {
        if (isKraft(id)) ours.restart(id);
        else kafka.restart(id);
    }

    /** SIGSTOP (true) or SIGCONT (false): a partition without touching the network. */
    void pause(int id, boolean stop) throws Exception {
        long pid = isKraft(id) ? ours.pid(id) : kafka.pid(id);
        Procs.Result r = Procs.run(List.of("kill", stop ? "-STOP" : "-CONT", Long.toString(pid)), 10);
        if (r.code() != 0) throw new IllegalStateException("kill " + (stop ? "-STOP " : "-CONT ") + pid + ": " + r);
        if (stop) paused.add(id);
        else paused.remove(id);
    }

    /**
     * Until a leader of the wanted kind leads (at most {@code tries} times): kill -9 of the leader, a new leader,
     * restart of the killed one. With the (g) timeouts a {@code kraft} node usually wins after a Kafka leader's
     * death; after a {@code kraft} leader's, either kind may (the other {@code kraft} node often does).
     * Returns the leader and epoch.
     */
    int[] steer(boolean kraftLeader, int tries, String tag) throws Exception {
        int[] l = awaitLeader(-1, tag + ": a leader");
        for (int i = 0; i < tries && isKraft(l[0]) != kraftLeader; i++) {
            int old = l[0];
            kill(old);
            l = awaitLeader(l[1], tag + ": after kill -9 of " + kind(old) + " leader " + old + " (to get a "
                + (kraftLeader ? "kraft" : "Kafka") + " leader)");
            restart(old);
        }
        return l;
    }

    String kind(int id) {
        return isKraft(id) ? "kraft" : "Kafka";
    }

    /** One DescribeQuorum v2 round trip to {@code id} itself: {partition error, leader id, leader epoch}, or null. */
    int[] describeQuorumOf(int id) {
        String[] hostPort = address(id).split(":");
        AbstractRequest request = new DescribeQuorumRequest.Builder(
            DescribeQuorumRequest.singletonRequest(new TopicPartition("__cluster_metadata", 0))).build((short) 2);
        ByteBuffer frame = request.serializeWithHeader(new RequestHeader(ApiKeys.DESCRIBE_QUORUM, (short) 2, "kraft-interop", 1));
        try (java.net.Socket sock = new java.net.Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            sock.setSoTimeout(3000);
            java.io.DataOutputStream out = new java.io.DataOutputStream(sock.getOutputStream());
            out.writeInt(frame.remaining());
            out.write(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
            out.flush();
            java.io.DataInputStream in = new java.io.DataInputStream(sock.getInputStream());
            int size = in.readInt();
            if (size < 0 || size > (1 << 20)) return null;
            byte[] payload = new byte[size];
            in.readFully(payload);
            ByteBuffer buf = ByteBuffer.wrap(payload);
            ResponseHeader.parse(buf, ApiKeys.DESCRIBE_QUORUM.responseHeaderVersion((short) 2));
            DescribeQuorumResponseData d = new DescribeQuorumResponseData(new ByteBufferAccessor(buf), (short) 2);
            if (d.errorCode() != 0 || d.topics().isEmpty()) return new int[] {Math.max(1, d.errorCode()), -1, -1};
            var p = d.topics().get(0).partitions().get(0);
            return new int[] {p.errorCode(), p.leaderId(), p.leaderEpoch()};
        } catch (java.io.IOException e) {
            return null;
        }
    }

    /** Addresses to ask: the kraft nodes first (they know the leader whichever kind leads), then Kafka's. */
    List<String> addresses() {
        List<String> out = new ArrayList<>();
        for (int id : ours.ports.keySet()) if (ours.running(id) && !paused.contains(id)) out.add(ours.address(id));
        for (int id : kafka.ports.keySet()) if (kafka.running(id) && !paused.contains(id)) out.add(kafka.address(id));
        return out;
    }

    /**
     * {@code kraft describe ARGS} via {@code addr}, else via each running {@code kraft} node: a Kafka controller's
     * DescribeCluster lists only controllers registered in its metadata log, which a Kafka leader that has not
     * yet registered itself (a log without metadata.version, scenario h) or a {@code kraft} leader is not; a
     * {@code kraft} node lists the voters. Null if none answered.
     */
    private Procs.Result describe(String addr, String... args) throws Exception {
        List<String> tries = new ArrayList<>(List.of(addr));
        for (String a : addresses()) if (!tries.contains(a) && ours.ports.values().stream()
                .anyMatch(p -> a.endsWith(":" + p))) tries.add(a);
        for (String a : tries) {
            List<String> cmd = new ArrayList<>(List.of("describe", "--bootstrap-controller", a));
            cmd.addAll(List.of(args));
            if (commandConfig != null) cmd.addAll(List.of("--command-config", commandConfig.toString()));
            cmd.addAll(List.of("--timeout-ms", "3000"));
            Procs.Result r = tools.kraft(cmd.toArray(String[]::new));
            if (r.code() == 0) return r;
        }
        return null;
    }

    /** {@code kraft describe --status} via {@code addr} (see {@link #describe}): its fields, or an empty map. */
    Map<String, String> status(String addr) throws Exception {
        Procs.Result r = describe(addr, "--status");
        return r != null ? Tools.statusFields(r.out()) : Map.of();
    }

    /** Records (epoch, leader); a second leader for an epoch is a divergence at once. */
    void sawLeader(int epoch, int leader) {
        Integer before = leaders.putIfAbsent(epoch, leader);
        if (before != null && before != leader) {
            report.check("one leader per epoch", false, "epoch " + epoch + ": " + before + " and " + leader);
        }
    }

    /** The current leader and epoch as some replica reports it (kraft nodes asked first), or null. */
    int[] currentLeader() throws Exception {
        for (String addr : addresses()) {
            Map<String, String> f = status(addr);
            int leader = Integer.parseInt(f.getOrDefault("LeaderId", "-1"));
            int epoch = Integer.parseInt(f.getOrDefault("LeaderEpoch", "-1"));
            if (leader < 0 || !running(leader) || paused.contains(leader)) continue;
            sawLeader(epoch, leader);
            return new int[] {leader, epoch};
        }
        return null;
    }

    /** Waits (60 s) for a running leader of an epoch above {@code after}; returns {leader, epoch}. */
    int[] awaitLeader(int after, String label) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            int[] l = currentLeader();
            if (l != null && l[1] > after) {
                report.check(label + " (leader " + l[0] + ", epoch " + l[1] + ")", true, "");
                return l;
            }
            Thread.sleep(300);
        }
        report.check(label, false, "no leader above epoch " + after + " in 60 s; leaders seen " + leaders);
        throw new IllegalStateException(label + ": no leader");
    }

    /** Rows of {@code kraft describe --replication} via {@code addr} (NodeId, DirectoryId, LEO, ..., Status). */
    List<List<String>> replication(String addr) throws Exception {
        Procs.Result r = describe(addr, "--replication");
        return r != null ? Tools.table(r.out()) : List.of();
    }

    /** The end offset of the row with this status (e.g. Leader), or of node {@code id}; -2 if absent. */
    static long leo(List<List<String>> rows, String status, int id) {
        for (List<String> row : rows.subList(Math.min(1, rows.size()), rows.size())) {
            if (row.size() < 7) continue;
            if ((status != null && row.get(6).equals(status)) || (status == null && row.get(0).equals(Integer.toString(id)))) {
                return Long.parseLong(row.get(2));
            }
        }
        return -2;
    }

    /** Waits (60 s) until replica {@code id} reports the leader's end offset in the leader's DescribeQuorum. */
    void awaitCaughtUp(String addr, int id, String label) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        List<List<String>> rows = List.of();
        while (System.currentTimeMillis() < deadline) {
            rows = replication(addr);
            long leader = leo(rows, "Leader", -1);
            if (leader > 0 && leo(rows, null, id) == leader) {
                report.check(label + " (" + leader + ")", true, "");
                return;
            }
            Thread.sleep(300);
        }
        report.check(label, false, "replication via " + addr + ": " + rows);
    }

    /**
     * Waits (60 s) until every running replica the leader at {@code addr} lists is at its end offset and the HW
     * equals it; returns false (no check) on timeout so a caller can look for a new leader.
     */
    boolean allCaughtUp(String addr, int minFollowers, long timeoutMs, StringBuilder last) throws Exception {
        return allCaughtUp(addr, minFollowers, timeoutMs, last, false);
    }

    /** With {@code everyRunning}: also waits until every running replica is listed (a voter or an observer). */
    boolean allCaughtUp(String addr, int minFollowers, long timeoutMs, StringBuilder last, boolean everyRunning)
            throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            List<List<String>> rows = replication(addr);
            long leader = leo(rows, "Leader", -1);
            boolean listed = !everyRunning || ids().stream().filter(this::running)
                .allMatch(id -> rows.stream().anyMatch(r -> r.size() == 7 && r.get(0).equals(Integer.toString(id))));
            boolean all = leader > 0 && rows.stream().skip(1).filter(r -> r.size() == 7
                    && running(Integer.parseInt(r.get(0))))
                .allMatch(r -> Long.parseLong(r.get(2)) == leader);
            long followers = rows.stream().skip(1).filter(r -> r.size() == 7 && r.get(6).equals("Follower")
                && Long.parseLong(r.get(2)) == leader).count();
            String hw = status(addr).get("HighWatermark");
            last.setLength(0);
            last.append(rows).append(" HW ").append(hw);
            if (all && listed && followers >= minFollowers && Long.toString(leader).equals(hw)) return true;
            Thread.sleep(300);
        }
        return false;
    }

    void awaitAllCaughtUp(String addr, int minFollowers, String label) throws Exception {
        StringBuilder last = new StringBuilder();
        boolean ok = allCaughtUp(addr, minFollowers, 60_000, last);
        report.check(label + (ok ? " (" + last.substring(last.lastIndexOf(" HW ") + 1) + ")" : ""), ok, last.toString());
    }

    /** The voter ids (sorted) listed on the {@code CurrentVoters} line of the leader's answer via {@code addr}. */
    List<Integer> currentVoters(String addr) throws Exception {
        return Scenarios.ids(status(addr).get("CurrentVoters")).stream().sorted().toList();
    }

    /**
     * Asks the leader {@code leader} for its HW (and, if it is a kraft node, its CommittedVoters) and keeps them
     * with its batches below that HW as they are now: the end checks compare them with the final log.
     */
    Sample sample(String label, int leader) throws Exception {
        Map<String, String> f = status(address(leader));
        if (f.isEmpty() || !Integer.toString(leader).equals(f.get("LeaderId"))) return null;
        int epoch = Integer.parseInt(f.get("LeaderEpoch"));
        sawLeader(epoch, leader);
        long hw = Long.parseLong(f.getOrDefault("HighWatermark", "-1"));
        List<Integer> committed = isKraft(leader) ? Scenarios.ids(f.get("CommittedVoters")).stream().sorted().toList() : null;
        Sample s = new Sample(label, leader, epoch, hw, committed, batchesBelow(segment(leader), hw));
        samples.add(s);
        return s;
    }

    /** The batches of {@code file} wholly below {@code hw}, as Kafka reads them: CRC-checked, with their bytes. */
    static List<String> batchesBelow(Path file, long hw) throws Exception {
        List<String> out = new ArrayList<>();
        if (hw <= 0 || !(Files.exists(file) || Files.isDirectory(file.getParent()))) return out;
        byte[] all = logBytes(file);
        int position = 0;
        for (MutableRecordBatch batch : MemoryRecords.readableRecords(ByteBuffer.wrap(all)).batches()) {
            if (batch.lastOffset() >= hw) break;
            batch.ensureValid();
            int size = batch.sizeInBytes();
            out.add(batch.baseOffset() + "-" + batch.lastOffset() + " epoch " + batch.partitionLeaderEpoch()
                + " crc " + Long.toHexString(batch.checksum()) + " bytes "
                + java.util.HexFormat.of().formatHex(all, position, position + size));
            position += size;
        }
        return out;
    }

    /**
     * The bytes of the log whose first segment is {@code segment}: every {@code *.log} segment of its directory in
     * offset order, back to back (Kafka rolls a segment, e.g. when a controller first leads); any other file as is.
     */
    static byte[] logBytes(Path segment) throws java.io.IOException {
        if (!segment.getFileName().toString().endsWith(".log")) return Files.readAllBytes(segment);
        for (int attempt = 0; ; attempt++) {
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            try (var files = Files.list(segment.getParent())) {
                for (Path p : files.filter(f -> f.getFileName().toString().endsWith(".log")).sorted().toList()) {
                    out.write(Files.readAllBytes(p));
                }
                return out.toByteArray();
            } catch (java.nio.file.NoSuchFileException e) {
                // A segment deleted below a moved log start between the listing and the read: list again.
                if (attempt >= 5) throw e;
            }
        }
    }

    /** Both logs hold the same batches, byte for byte, below {@code hw} (at least one batch). */
    void compareLogs(String label, Path a, Path b, long hw) throws Exception {
        List<String> x = batchesBelow(a, hw);
        List<String> y = batchesBelow(b, hw);
        report.check(label + ": the same batches below HW " + hw + " (" + x.size() + " batches, CRCs and bytes)",
            !x.isEmpty() && x.equals(y), "first difference: " + firstDifference(x, y));
    }

    static String firstDifference(List<String> a, List<String> b) {
        for (int i = 0; i < Math.max(a.size(), b.size()); i++) {
            String x = i < a.size() ? a.get(i) : "(none)";
            String y = i < b.size() ? b.get(i) : "(none)";
            if (!x.equals(y)) return "batch " + i + ": " + abbreviate(x) + " / " + abbreviate(y);
        }
        return "none (" + a.size() + " batches)";
    }

    private static String abbreviate(String s) {
        return s.length() > 300 ? s.substring(0, 300) + "..." : s;
    }

    long highWatermark(String addr) throws Exception {
        String hw = status(addr).get("HighWatermark");
        return hw == null ? -1 : Long.parseLong(hw);
    }

    @Override
    public void close() throws Exception {
        // Resume anything left paused, or SIGTERM would wait on a stopped process.
        for (int id : ids()) {
            if (running(id)) {
                try {
                    pause(id, false);
                } catch (Exception e) {
                    // already gone
                }
            }
        }
        kafka.close();
        ours.close();
    }

    /** What a scenario does with its quorum; {@link #runScenario} adds the end checks. */
    interface Steps {
        void run(MixedQuorum m) throws Exception;
    }

    /**
     * Runs a scenario labelled {@code label} ((h), (i), ...) on a mixed quorum with Kafka's (g) timeouts: its steps,
     * then the end checks, and in any case whether every process still runs.
     */
    static void runScenario(Report report, Tools tools, Path work, String kraft, String label, Steps steps)
        throws Exception {
        try (MixedQuorum m = new MixedQuorum(report, tools, work, kraft, KafkaJoinsScenario.KAFKA_TIMEOUTS)) {
            try {
                steps.run(m);
                EndChecks.run(m, label + " end");
            } finally {
                report.check(label + ": every process still running at the end", m.allAlive(), "see " + work);
            }
        }
    }

    boolean allAlive() {
        return kafka.allAlive() && ours.allAlive();
    }
}
