package kraft.interop;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;

/**
 * (g) One quorum of both kinds (issue #13, scenarios 1 and 2): three Apache Kafka controllers elect a leader; a
 * {@code kraft} node whose directory Kafka's {@code kafka-storage format --initial-controllers} formatted joins as an
 * observer and fetches Kafka's log; Kafka's
 * {@code add-controller} makes it a voter; kill -9 of the Kafka leader: the {@code kraft} node is elected with
 * Kafka's votes (3 of 4 voters alive: every live voter took part) and replicates to the Kafka followers. Which
 * node wins is fixed by KIP-996's rules, not by luck: the Kafka controllers (3 s fetch, 6 s election timeout)
 * time out first and ask for pre-votes, which the {@code kraft} node refuses while its own 5 s fetch timeout runs
 * (it has fetched from the leader); their pre-vote rounds last at least 6 s, so when the {@code kraft} node asks
 * at 5 s both grant. The killed controller
 * restarts and catches up from it; kill -9 of the {@code kraft} leader: the Kafka controllers elect one of theirs;
 * the {@code kraft} node restarts and follows it. Throughout: one leader per epoch, as reported by either kind.
 * While the {@code kraft} node leads, its log and each Kafka follower's log hold the same batches, byte for byte,
 * below the HW (Kafka's batches it fetched as an observer kept their timestamps, keys and headers).
 */
final class MixedScenario {
    private static final int OURS = 5;
    private final Report report;
    private final Tools tools;
    private final Scenarios scenarios;
    private final Path work;
    private final String kraft;
    /** Every (epoch, leader) either kind reported. */
    private final Map<Integer, Integer> leaders = new TreeMap<>();

    MixedScenario(Report report, Tools tools, Scenarios scenarios, Path work, String kraft) {
        this.report = report;
        this.tools = tools;
        this.scenarios = scenarios;
        this.work = work;
        this.kraft = kraft;
    }

    void run() throws Exception {
        Map<String, String> slow = Map.of("controller.quorum.election.timeout.ms", "6000",
            "controller.quorum.fetch.timeout.ms", "3000");
        try (KafkaQuorum kafka = new KafkaQuorum(work.resolve("kafka"), slow);
             KraftQuorum ours = new KraftQuorum(work.resolve("kraft"), kraft)) {
            try {
                steps(kafka, ours);
            } finally {
                report.check("Kafka controllers still running at the end", kafka.allAlive(), "see " + kafka.dir);
                report.check("the kraft node still running at the end", ours.allAlive(), "see " + ours.dir);
            }
        }
    }

    private void steps(KafkaQuorum kafka, KraftQuorum ours) throws Exception {
        kafka.startInitial(1, 2, 3);
        int[] first = awaitLeader(kafka, ours, -1, "the Kafka controllers elect a leader");

        // 1. The kraft node, its directory formatted by Kafka's kafka-storage (Kafka's meta.properties and
        //    bootstrap snapshot), joins as an observer and fetches Kafka's records.
        ours.startJoinerFormattedByKafka(OURS, kafka.clusterId, kafka.initialControllers(), "--election-timeout-ms", "1000",
            "--fetch-timeout-ms", "5000");
        awaitCaughtUp(kafka.address(first[0]), OURS, "the kraft observer fetches Kafka's log to the leader's end offset");

        // 2. Kafka's add-controller, sent to the Kafka leader, makes it a voter (Kafka's leader checks it with
        //    ApiVersions first).
        Uuid dir = ours.directoryId(OURS);
        Path config = ours.dir.resolve("controller-" + OURS + ".properties");
        Files.writeString(config, String.join("\n", "process.roles=controller", "node.id=" + OURS,
            "controller.listener.names=CONTROLLER", "listeners=CONTROLLER://" + ours.address(OURS),
            "metadata.log.dir=" + ours.dataDir(OURS), ""));
        Procs.Result add = Tools.kafka("--bootstrap-controller", kafka.address(first[0]), "--command-config",
            config.toString(), "add-controller");
        report.check("Kafka's add-controller adds the kraft node (exit 0)", add.code() == 0, add.toString());
        report.equal("add-controller output", "Added controller " + OURS + " with directory id " + dir
            + " and endpoints: CONTROLLER://" + ours.address(OURS), add.out().trim());
        awaitVoters(kafka.address(first[0]), List.of(1, 2, 3, OURS));
        awaitCaughtUp(kafka.address(first[0]), OURS, "the kraft voter is at the Kafka leader's end offset");
        scenarios.compareStatus("Kafka leader with a kraft voter: describe --status", kafka.address(first[0]),
            kafka.address(first[0]), false);

        // 3. kill -9 of the Kafka leader: an election across implementations.
        kafka.kill(first[0]);
        int[] second = awaitLeader(kafka, ours, first[1], "after kill -9 of Kafka leader " + first[0]
            + ": a new leader with 3 of 4 voters alive (so every live voter, the kraft node too, took part)");
        report.equal("the kraft node is elected (it asks for pre-votes while Kafka's rounds are open)", OURS,
            second[0]);

        // 4. The kraft leader replicates to the Kafka followers and commits.
        if (second[0] == OURS) {
            awaitAllCaughtUp(ours.address(OURS), "Kafka followers replicate the kraft leader's log; HW = its end offset");
            scenarios.compareStatus("kraft leader with Kafka followers: describe --status", ours.address(OURS),
                ours.address(OURS), true);
            long hw = highWatermark(ours.address(OURS));
            for (int id : kafka.ports.keySet()) {
                if (id != first[0]) compareLogs("kraft leader and Kafka follower " + id, ours.segment(OURS),
                    kafka.segment(id), hw);
            }
        }

        // 5. The killed Kafka controller restarts and catches up from whoever leads now.
        kafka.restart(first[0]);
        String leaderAddress = second[0] == OURS ? ours.address(OURS) : kafka.address(second[0]);
        awaitCaughtUp(leaderAddress, first[0], "restarted Kafka controller " + first[0] + " catches up from leader "
            + second[0]);
        if (second[0] == OURS) {
            compareLogs("kraft leader and restarted Kafka controller " + first[0], ours.segment(OURS),
                kafka.segment(first[0]), highWatermark(ours.address(OURS)));
        }

        // 6. kill -9 of the kraft leader: the Kafka controllers elect one of theirs.
        if (second[0] == OURS) {
            ours.kill(OURS);
            int[] third = awaitLeader(kafka, ours, second[1], "after kill -9 of the kraft leader: a new leader");
            report.check("a Kafka controller leads after the kraft leader is gone", third[0] != OURS && third[0] > 0,
                "leader " + third[0]);
            // 7. The kraft node restarts and follows the Kafka leader again.
            ours.restart(OURS);
            awaitCaughtUp(kafka.address(third[0]), OURS, "the restarted kraft node follows Kafka leader " + third[0]
                + " to its end offset");
            scenarios.compareStatus("Kafka leader again: describe --status", kafka.address(third[0]),
                kafka.address(third[0]), false);
        }
        report.check("one leader per epoch, as either kind reported it " + leaders, true, "");
    }

    /** Addresses to ask: the kraft node first (it knows the leader whichever kind leads), then Kafka's. */
    private List<String> addresses(KafkaQuorum kafka, KraftQuorum ours) {
        List<String> out = new ArrayList<>();
        if (ours.running(OURS)) out.add(ours.address(OURS));
        for (int id : kafka.ports.keySet()) if (kafka.running(id)) out.add(kafka.address(id));
        return out;
    }

    /** Waits (60 s) for a leader of an epoch above {@code after}; returns {leader, epoch}. */
    private int[] awaitLeader(KafkaQuorum kafka, KraftQuorum ours, int after, String label) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            for (String addr : addresses(kafka, ours)) {
                Procs.Result r = tools.kraft("describe", "--bootstrap-controller", addr, "--status", "--timeout-ms",
                    "3000");
                last = addr + ": " + r;
                if (r.code() != 0) continue;
                Map<String, String> f = Tools.statusFields(r.out());
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

    /** Rows of {@code kraft describe --replication} via {@code addr} (NodeId, DirectoryId, LEO, ..., Status). */
    private List<List<String>> replication(String addr) throws Exception {
        Procs.Result r = tools.kraft("describe", "--bootstrap-controller", addr, "--replication", "--timeout-ms", "3000");
        return r.code() == 0 ? Tools.table(r.out()) : List.of();
    }

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
    private void awaitCaughtUp(String addr, int id, String label) throws Exception {
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

    /** Waits (60 s) until every voter is at the leader's end offset and the HW equals it. */
    private void awaitAllCaughtUp(String addr, String label) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            List<List<String>> rows = replication(addr);
            long leader = leo(rows, "Leader", -1);
            boolean all = leader > 0 && rows.stream().skip(1).filter(r -> r.size() == 7 && !r.get(6).equals("Observer"))
                .allMatch(r -> Long.parseLong(r.get(2)) == leader || r.get(2).equals("-1"));
            long followers = rows.stream().skip(1).filter(r -> r.size() == 7 && r.get(6).equals("Follower")
                && Long.parseLong(r.get(2)) == leader).count();
            Procs.Result s = tools.kraft("describe", "--bootstrap-controller", addr, "--status", "--timeout-ms", "3000");
            String hw = Tools.statusFields(s.out()).get("HighWatermark");
            last = rows + " HW " + hw;
            if (all && followers >= 2 && Long.toString(leader).equals(hw)) {
                report.check(label + " (" + leader + ", " + followers + " followers)", true, "");
                return;
            }
            Thread.sleep(300);
        }
        report.check(label, false, last);
    }

    private void awaitVoters(String addr, List<Integer> ids) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        List<Integer> got = List.of();
        while (System.currentTimeMillis() < deadline) {
            got = Scenarios.quorum(addr).voters().stream().map(v -> v.replicaId()).sorted().toList();
            if (got.equals(ids)) break;
            Thread.sleep(300);
        }
        report.equal("Kafka's Admin: voters after add-controller", ids, got);
    }

    private long highWatermark(String addr) throws Exception {
        Procs.Result s = tools.kraft("describe", "--bootstrap-controller", addr, "--status", "--timeout-ms", "3000");
        String hw = Tools.statusFields(s.out()).get("HighWatermark");
        return hw == null ? -1 : Long.parseLong(hw);
    }

    /** The batches of {@code file} wholly below {@code hw}, as Kafka reads them: CRC-checked, with their bytes. */
    static List<String> batchesBelow(Path file, long hw) throws Exception {
        List<String> out = new ArrayList<>();
        byte[] all = Files.readAllBytes(file);
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

    /** Both logs hold the same batches, byte for byte, below {@code hw} (at least one batch). */
    private void compareLogs(String label, Path ours, Path theirs, long hw) throws Exception {
        List<String> a = batchesBelow(ours, hw);
        List<String> b = batchesBelow(theirs, hw);
        report.check(label + ": the same batches below HW " + hw + " (" + a.size() + " batches, CRCs and bytes)",
            !a.isEmpty() && a.equals(b), "first difference: " + firstDifference(a, b));
    }

    static String firstDifference(List<String> a, List<String> b) {
        for (int i = 0; i < Math.max(a.size(), b.size()); i++) {
            String x = i < a.size() ? a.get(i) : "(none)";
            String y = i < b.size() ? b.get(i) : "(none)";
            if (!x.equals(y)) return "batch " + i + ": ours " + x + " / Kafka's " + y;
        }
        return "none (" + a.size() + " batches)";
    }
}
