package kraft.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.common.message.DescribeQuorumResponseData;
import org.apache.kafka.common.utils.internals.AppInfoParser;

/**
 * Performance side by side with Apache Kafka's controllers, one run, same machine, same settings.
 * Usage: {@code PerfMain --kraft PATH_TO_RELEASE_KRAFT --work DIR [--quick] [--rows 1,2,3,4,5]}; {@code
 * conformance/kafka/perf.sh} builds and runs it. {@code --rows} measures only the listed rows (default: all); the
 * quorums are started (and the observer added) as in a full run whatever rows are chosen. Both quorums run at once
 * (3 voters + 1 observer each, one process per node) and the rows alternate between them, so both see the same
 * background load; it prints a Markdown table whose last column is kraft / Kafka.
 *
 * <ol>
 * <li>Start-up: all three voters launched at once (after formatting) until one answers DescribeQuorum as leader
 *     with a known high watermark.</li>
 * <li>Idle: CPU time (/proc/PID/stat utime+stime) and resident memory (VmRSS) of the three voters of each
 *     quorum over the same window.</li>
 * <li>DescribeQuorum v2 to the leader, closed loop on 1 and 16 open connections: requests/s, latency p50/p99.</li>
 * <li>AddRaftVoter then RemoveRaftVoter of the caught-up observer (node 4), request to response (sent at commit)
 *     on an open connection to the leader.</li>
 * <li>Failover: kill -9 of the leader until a survivor answers DescribeQuorum as leader of a later epoch with a
 *     known high watermark; the killed node restarts and catches up before the next kill.</li>
 * </ol>
 */
public final class PerfMain {
    static final int ELECTION_TIMEOUT_MS = 1000;
    static final int FETCH_TIMEOUT_MS = 2000;

    private final boolean quick;
    /** Both quorums with interop scenario p's snapshot settings ({@link SnapshotSettings}). */
    private final boolean snapshots;
    /** The rows to measure (numbering: 1 membership, 2 failover, 3 DescribeQuorum, 4 resources). */
    private final java.util.Set<Integer> only;
    private final List<Row> rows = new ArrayList<>();
    /** Lines printed under the table (e.g. which failovers took more than one election). */
    private final List<String> notes = new ArrayList<>();

    private PerfMain(boolean quick, boolean snapshots, java.util.Set<Integer> only) {
        this.quick = quick;
        this.snapshots = snapshots;
        this.only = only;
    }

    /** One table row: a value per implementation; the ratio is kraft / Kafka. */
    record Row(String what, String unit, double kraft, double kafka, String note) {}

    public static void main(String[] args) throws Exception {
        String kraft = null;
        Path work = null;
        boolean quick = false;
        boolean snapshots = false;
        java.util.Set<Integer> only = new java.util.TreeSet<>(List.of(1, 2, 3, 4));
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--kraft" -> kraft = args[++i];
                case "--work" -> work = Path.of(args[++i]).toAbsolutePath();
                case "--quick" -> quick = true;
                case "--snapshots" -> snapshots = true;
                case "--rows" -> {
                    only.clear();
                    for (String r : args[++i].split(",")) {
                        int row = Integer.parseInt(r.trim());
                        if (row < 1 || row > 5) throw new IllegalArgumentException("--rows: no row " + row);
                        only.add(row);
                    }
                }
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (kraft == null || work == null) {
            System.err.println("usage: PerfMain --kraft PATH_TO_KRAFT_BINARY --work DIR [--quick] [--rows 1,2,3,4,5]");
            System.exit(2);
        }
        Files.createDirectories(work);
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
            ProcessHandle.current().descendants().forEach(ProcessHandle::destroyForcibly)));
        boolean ok = new PerfMain(quick, snapshots, only).run(kraft, work);
        if (ok) {
            Main.deleteTree(work);
        } else {
            System.out.println("kept logs and data under " + work);
        }
        System.exit(ok ? 0 : 1);
    }

    private boolean run(String kraftBinary, Path work) throws Exception {
        int idleSeconds = quick ? 15 : 60;
        int kills = quick ? 5 : 30;
        int changes = quick ? 5 : 20;
        int throughputSeconds = quick ? 3 : 10;
        String started = Instant.now().toString();
        String loadBefore = Files.readString(Path.of("/proc/loadavg")).trim();
        if (only.contains(5)) {
            try {
                snapshotRow(kraftBinary, work, quick ? 2 : 5);
            } catch (Exception e) {
                e.printStackTrace(System.out);
                printTable(started, loadBefore, quick, kills, changes);
                return false;
            }
            if (only.size() == 1) {
                printTable(started, loadBefore, quick, kills, changes);
                return true;
            }
        }
        try (PerfQuorum.Kraft ours = new PerfQuorum.Kraft(work.resolve("kraft"), kraftBinary, ELECTION_TIMEOUT_MS,
                FETCH_TIMEOUT_MS, snapshots);
             PerfQuorum.Kafka kafka = new PerfQuorum.Kafka(work.resolve("kafka"), ELECTION_TIMEOUT_MS,
                FETCH_TIMEOUT_MS, snapshots)) {
            List<PerfQuorum> both = List.of(ours, kafka);
            try {
                // 4b. Start-up, one implementation at a time (kraft first, so Kafka's JIT does not slow it).
                Map<PerfQuorum, Double> startup = new HashMap<>();
                for (PerfQuorum q : both) {
                    q.format();
                    long t0 = System.nanoTime();
                    for (int id : PerfQuorum.VOTERS) q.launch(id);
                    awaitLeader(q, List.of(1, 2, 3), -1, 120_000);
                    startup.put(q, ms(System.nanoTime() - t0));
                    log(q.name + ": leader after " + startup.get(q) + " ms");
                }
                for (PerfQuorum q : both) awaitCaughtUp(q, List.of(1, 2, 3));
                if (only.contains(4)) {
                    // 4a. Idle, both quorums over the same window (after 5 s to settle).
                    Thread.sleep(5_000);
                    Map<PerfQuorum, long[]> cpu0 = new HashMap<>();
                    for (PerfQuorum q : both) cpu0.put(q, cpuTicks(q));
                    long w0 = System.nanoTime();
                    log("idle window: " + idleSeconds + " s");
                    Thread.sleep(idleSeconds * 1000L);
                    double window = (System.nanoTime() - w0) / 1e9;
                    Map<PerfQuorum, Double> cpuPct = new HashMap<>();
                    Map<PerfQuorum, Double> rssMb = new HashMap<>();
                    for (PerfQuorum q : both) {
                        long[] a = cpu0.get(q), b = cpuTicks(q);
                        long ticks = 0;
                        for (int i = 0; i < a.length; i++) ticks += b[i] - a[i];
                        cpuPct.put(q, 100.0 * ticks / CLK_TCK / window);
                        rssMb.put(q, rssKb(q) / 1024.0);
                    }
                    row("4. Start-up: launch of 3 voters → leader with known HW", "ms", startup.get(ours),
                        startup.get(kafka), "");
                    row("4. Idle 3-node quorum: resident memory, sum of 3 voters", "MB", rssMb.get(ours),
                        rssMb.get(kafka), idleSeconds + " s window");
                    row("4. Idle 3-node quorum: CPU, sum of 3 voters", "% of a core", cpuPct.get(ours),
                        cpuPct.get(kafka), idleSeconds + " s window");
                }

                for (PerfQuorum q : both) q.startObserver();
                for (PerfQuorum q : both) awaitCaughtUp(q, List.of(1, 2, 3, 4));

                // 3. DescribeQuorum throughput, alternating implementations.
                for (int conns : only.contains(3) ? new int[] {1, 16} : new int[0]) {
                    Map<PerfQuorum, Load> load = new HashMap<>();
                    for (PerfQuorum q : both) {
                        load.put(q, describeLoad(leaderAddress(q), conns, 5_000, throughputSeconds * 1000L));
                        log(q.name + ": DescribeQuorum, " + conns + " connection(s): " + load.get(q));
                    }
                    String c = conns + (conns == 1 ? " connection" : " connections");
                    row("3. DescribeQuorum v2 throughput, " + c, "req/s", load.get(ours).perSecond,
                        load.get(kafka).perSecond, throughputSeconds + " s closed loop, higher is better");
                    row("3. DescribeQuorum v2 latency p50, " + c, "µs", load.get(ours).p50us, load.get(kafka).p50us, "");
                    row("3. DescribeQuorum v2 latency p99, " + c, "µs", load.get(ours).p99us, load.get(kafka).p99us, "");
                }

                // 1. Membership change commit latency, alternating implementations.
                Map<PerfQuorum, List<Double>> adds = new HashMap<>(), removes = new HashMap<>();
                for (PerfQuorum q : both) {
                    adds.put(q, new ArrayList<>());
                    removes.put(q, new ArrayList<>());
                }
                for (int i = 0; i < (only.contains(1) ? changes : 0); i++) {
                    for (PerfQuorum q : both) adds.get(q).add(change(q, true));
                    for (PerfQuorum q : both) removes.get(q).add(change(q, false));
                }
                if (only.contains(1)) {
                    rowPercentiles("1. AddRaftVoter of a caught-up observer, request → response at commit", adds, ours,
                        kafka);
                    rowPercentiles("1. RemoveRaftVoter of that voter, request → response at commit", removes, ours,
                        kafka);
                }

                // 2. Failover, alternating implementations.
                Map<PerfQuorum, List<Double>> failovers = new HashMap<>();
                Map<PerfQuorum, List<String>> splits = new HashMap<>();
                for (PerfQuorum q : both) {
                    failovers.put(q, new ArrayList<>());
                    splits.put(q, new ArrayList<>());
                }
                for (int i = 0; i < (only.contains(2) ? kills : 0); i++) {
                    for (PerfQuorum q : both) {
                        double[] f = failover(q);
                        failovers.get(q).add(f[0]);
                        // More than one epoch per failover: an election was lost (split vote) and run again.
                        if (f[1] > 1) splits.get(q).add(String.format("%.0f ms (+%.0f epochs)", f[0], f[1]));
                        log(q.name + ": failover " + (i + 1) + "/" + kills + ": " + f[0] + " ms, epoch +" + (int) f[1]);
                    }
                }
                if (only.contains(2)) {
                    rowPercentiles("2. Failover: kill -9 of the leader → new leader with known HW answers DescribeQuorum",
                        failovers, ours, kafka);
                    for (PerfQuorum q : both) {
                        notes.add(q.name + ": " + splits.get(q).size() + " of " + kills + " failovers took more than"
                            + " one epoch (an election lost, e.g. a split vote): " + splits.get(q));
                    }
                }
            } catch (Exception e) {
                e.printStackTrace(System.out);
                printTable(started, loadBefore, quick, kills, changes);
                return false;
            }
        }
        printTable(started, loadBefore, quick, kills, changes);
        return true;
    }

    // ----- measurements ----------------------------------------------------------------------------

    /** Row 5 ({@link PerfSnapshot}): n joiners per implementation, alternating. */
    private void snapshotRow(String kraftBinary, Path work, int n) throws Exception {
        PerfSnapshot.Samples s = new PerfSnapshot(work.resolve("snapshot"), kraftBinary, ELECTION_TIMEOUT_MS,
            FETCH_TIMEOUT_MS).run(n);
        String note = "n = " + n + "; leader's snapshot: kraft " + s.kraftSnapshot() + " B, Kafka "
            + s.kafkaSnapshot() + " B";
        String[] what = {"launch → caught up (snapshot fetched and installed, log after it)",
            "AddRaftVoter request → response at commit", "launch → AddRaftVoter committed"};
        for (int k = 0; k < what.length; k++) {
            final int i = k;
            List<Double> ours = s.kraft().stream().map(a -> a[i]).toList();
            List<Double> theirs = s.kafka().stream().map(a -> a[i]).toList();
            row("5. New voter from a leader's snapshot ≥ 64 MiB: " + what[k] + ", median", "ms",
                percentile(ours, 50), percentile(theirs, 50), note + "; samples kraft " + ours + ", Kafka " + theirs);
        }
    }

    static final class Leader {
        final int id;
        final int epoch;
        final long hw;
        final DescribeQuorumResponseData.PartitionData partition;

        Leader(int id, DescribeQuorumResponseData.PartitionData p) {
            this.id = id;
            this.epoch = p.leaderEpoch();
            this.hw = p.highWatermark();
            this.partition = p;
        }
    }

    /** The node among {@code ids} that answers as leader of an epoch above {@code afterEpoch} with a known HW. */
    private static Leader awaitLeader(PerfQuorum q, List<Integer> ids, int afterEpoch, long timeoutMs)
            throws Exception {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        Map<Integer, PerfClient> clients = new HashMap<>();
        try {
            while (System.nanoTime() < deadline) {
                for (int id : ids) {
                    Leader l = ask(q, id, clients);
                    if (l != null && l.id == id && l.epoch > afterEpoch && l.hw >= 0) return l;
                }
                Thread.sleep(5);
            }
        } finally {
            clients.values().forEach(PerfClient::close);
        }
        throw new IOException(q.name + ": no leader above epoch " + afterEpoch + " among " + ids + " in " + timeoutMs + " ms");
    }

    /** DescribeQuorum to node {@code id} on a kept connection; null if it is not the leader or cannot answer. */
    private static Leader ask(PerfQuorum q, int id, Map<Integer, PerfClient> clients) {
        try {
            PerfClient c = clients.get(id);
            if (c == null) {
                c = new PerfClient(q.address(id), 500);
                clients.put(id, c);
            }
            DescribeQuorumResponseData.PartitionData p = PerfClient.partition(c.describeQuorum());
            return p == null ? null : new Leader(p.leaderId(), p);
        } catch (IOException e) {
            PerfClient c = clients.remove(id);
            if (c != null) c.close();
            return null;
        }
    }

    private static String leaderAddress(PerfQuorum q) throws Exception {
        return q.address(awaitLeader(q, List.of(1, 2, 3), -1, 30_000).id);
    }

    /** Waits (60 s) until every replica in {@code ids} is at the leader's end offset and the HW equals it. */
    private static Leader awaitCaughtUp(PerfQuorum q, List<Integer> ids) throws Exception {
        long deadline = System.nanoTime() + 60_000_000_000L;
        String last = "";
        while (System.nanoTime() < deadline) {
            Leader l = awaitLeader(q, List.of(1, 2, 3), -1, 30_000);
            long leo = -1;
            Map<Integer, Long> ends = new HashMap<>();
            for (var r : l.partition.currentVoters()) ends.put(r.replicaId(), r.logEndOffset());
            for (var r : l.partition.observers()) ends.put(r.replicaId(), r.logEndOffset());
            leo = ends.getOrDefault(l.id, -1L);
            final long end = leo;
            if (end >= 0 && l.hw == end && ids.stream().allMatch(id -> ends.getOrDefault(id, -2L) == end)) return l;
            last = "leader " + l.id + " HW " + l.hw + " ends " + ends;
            Thread.sleep(50);
        }
        throw new IOException(q.name + ": replicas " + ids + " not caught up in 60 s: " + last);
    }

    /** One AddRaftVoter (or RemoveRaftVoter) of node 4 to the leader; ms from request to response. */
    private static double change(PerfQuorum q, boolean add) throws Exception {
        awaitCaughtUp(q, List.of(1, 2, 3, PerfQuorum.OBSERVER));
        Thread.sleep(200);
        for (int attempt = 0; attempt < 50; attempt++) {
            try (PerfClient c = new PerfClient(leaderAddress(q), 35_000)) {
                long t0 = System.nanoTime();
                short error = add
                    ? c.addVoter(q.clusterId, PerfQuorum.OBSERVER, q.directoryId(PerfQuorum.OBSERVER), "127.0.0.1",
                        q.port(PerfQuorum.OBSERVER))
                    : c.removeVoter(q.clusterId, PerfQuorum.OBSERVER, q.directoryId(PerfQuorum.OBSERVER));
                long t1 = System.nanoTime();
                if (error == 0) return ms(t1 - t0);
                log(q.name + ": " + (add ? "AddRaftVoter" : "RemoveRaftVoter") + " error " + error + ", retrying");
            }
            Thread.sleep(200);
        }
        throw new IOException(q.name + ": " + (add ? "AddRaftVoter" : "RemoveRaftVoter") + " kept failing");
    }

    /**
     * kill -9 of the leader; {ms until a survivor answers as leader of a later epoch with a known HW, the epochs
     * that took}.
     */
    private static double[] failover(PerfQuorum q) throws Exception {
        Leader old = awaitCaughtUp(q, List.of(1, 2, 3));
        List<Integer> survivors = new ArrayList<>(List.of(1, 2, 3));
        survivors.remove(Integer.valueOf(old.id));
        long t0 = System.nanoTime();
        q.kill(old.id);
        Leader next = awaitLeader(q, survivors, old.epoch, 60_000);
        double t = ms(System.nanoTime() - t0);
        q.restart(old.id);
        return new double[] {t, next.epoch - old.epoch};
    }

    record Load(double perSecond, double p50us, double p99us, long requests) {
        @Override
        public String toString() {
            return String.format("%.0f req/s, p50 %.0f µs, p99 %.0f µs (%d requests)", perSecond, p50us, p99us, requests);
        }
    }

    /** Closed loop: {@code conns} threads, each one connection sending DescribeQuorum v2 and waiting for the answer. */
    private static Load describeLoad(String address, int conns, long warmMs, long measureMs) throws Exception {
        AtomicBoolean failed = new AtomicBoolean();
        long start = System.nanoTime();
        long measureFrom = start + warmMs * 1_000_000;
        long measureTo = measureFrom + measureMs * 1_000_000;
        long[][] samples = new long[conns][];
        int[] counts = new int[conns];
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < conns; t++) {
            final int slot = t;
            Thread th = new Thread(() -> {
                long[] lat = new long[1 << 16];
                int n = 0;
                try (PerfClient c = new PerfClient(address, 10_000)) {
                    while (true) {
                        long a = System.nanoTime();
                        if (a >= measureTo) break;
                        DescribeQuorumResponseData r = c.describeQuorum();
                        long b = System.nanoTime();
                        if (PerfClient.partition(r) == null) throw new IOException("DescribeQuorum error: " + r);
                        if (a >= measureFrom && b <= measureTo) {
                            if (n == lat.length) lat = Arrays.copyOf(lat, n * 2);
                            lat[n++] = b - a;
                        }
                    }
                } catch (IOException e) {
                    e.printStackTrace(System.out);
                    failed.set(true);
                }
                samples[slot] = lat;
                counts[slot] = n;
            });
            threads.add(th);
            th.start();
        }
        for (Thread th : threads) th.join();
        if (failed.get()) throw new IOException("DescribeQuorum load against " + address + " failed");
        int total = Arrays.stream(counts).sum();
        long[] all = new long[total];
        int k = 0;
        for (int t = 0; t < conns; t++) {
            System.arraycopy(samples[t], 0, all, k, counts[t]);
            k += counts[t];
        }
        Arrays.sort(all);
        return new Load(total / (measureMs / 1000.0), percentile(all, 50) / 1e3, percentile(all, 99) / 1e3, total);
    }

    // ----- /proc -----------------------------------------------------------------------------------

    static final long CLK_TCK = 100;

    /** utime + stime (clock ticks) of each voter process. */
    private static long[] cpuTicks(PerfQuorum q) throws IOException {
        long[] out = new long[PerfQuorum.VOTERS.length];
        for (int i = 0; i < out.length; i++) {
            String stat = Files.readString(Path.of("/proc", Long.toString(q.pid(PerfQuorum.VOTERS[i])), "stat"));
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            out[i] = Long.parseLong(f[11]) + Long.parseLong(f[12]);
        }
        return out;
    }

    /** Sum of VmRSS (kB) of the voter processes. */
    private static long rssKb(PerfQuorum q) throws IOException {
        long sum = 0;
        for (int id : PerfQuorum.VOTERS) {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(q.pid(id)), "status"))) {
                if (line.startsWith("VmRSS:")) sum += Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        return sum;
    }

    // ----- output ----------------------------------------------------------------------------------

    private static double ms(long nanos) {
        return nanos / 1e6;
    }

    /** Nearest-rank percentile of sorted values. */
    static long percentile(long[] sorted, double pct) {
        if (sorted.length == 0) return -1;
        int rank = (int) Math.ceil(pct / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    private static double percentile(List<Double> values, double pct) {
        double[] s = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (s.length == 0) return Double.NaN;
        int rank = (int) Math.ceil(pct / 100.0 * s.length);
        return s[Math.max(0, Math.min(s.length - 1, rank - 1))];
    }

    private void rowPercentiles(String what, Map<PerfQuorum, List<Double>> samples, PerfQuorum ours, PerfQuorum kafka) {
        String n = "n = " + samples.get(ours).size();
        row(what + ", median", "ms", percentile(samples.get(ours), 50), percentile(samples.get(kafka), 50), n);
        row(what + ", p99", "ms", percentile(samples.get(ours), 99), percentile(samples.get(kafka), 99), n);
    }

    private void row(String what, String unit, double kraft, double kafka, String note) {
        rows.add(new Row(what, unit, kraft, kafka, note));
    }

    private static String num(double v) {
        if (Double.isNaN(v)) return "—";
        if (v >= 100) return String.format("%.0f", v);
        if (v >= 10) return String.format("%.1f", v);
        return String.format("%.2f", v);
    }

    private void printTable(String started, String loadBefore, boolean quick, int kills, int changes)
            throws IOException {
        String loadAfter = Files.readString(Path.of("/proc/loadavg")).trim();
        System.out.println();
        System.out.println("kraft vs Apache Kafka " + AppInfoParser.getVersion() + " controllers, " + (quick ? "quick" : "full")
            + " mode, rows " + only + (snapshots ? ", snapshots on (interop scenario p's settings)" : "") + ", started " + started + "; /proc/loadavg before: " + loadBefore + ", after: " + loadAfter);
        System.out.println("settings (both): election timeout " + ELECTION_TIMEOUT_MS + " ms, fetch timeout "
            + FETCH_TIMEOUT_MS + " ms, logs fsynced; 3 voters + 1 observer, one process per node, loopback; "
            + (only.contains(1) ? changes + " adds + " + changes + " removes, " : "")
            + (only.contains(2) ? kills + " kills, " : "") + "kraft: long-poll Fetch (MaxWaitMs 500, as Kafka's"
            + " followers), --fetch-interval-ms 50 only after an error; Kafka: metadata.max.idle.interval.ms=0 (no NoOp records); Kafka JVM: " + String.join(" ", PerfQuorum.Kafka.JVM));
        System.out.println();
        System.out.println("| measure | unit | kraft | Kafka | kraft / Kafka | note |");
        System.out.println("|---|---|---|---|---|---|");
        // Rows in table order (1 membership, 2 failover, 3 DescribeQuorum, 4 resources), stable within.
        List<Row> sorted = new ArrayList<>(rows);
        sorted.sort(java.util.Comparator.comparing(r -> r.what.substring(0, 2)));
        for (Row r : sorted) {
            System.out.println("| " + r.what + " | " + r.unit + " | " + num(r.kraft) + " | " + num(r.kafka) + " | "
                + (r.kafka > 0 ? String.format("%.2f", r.kraft / r.kafka) : "—") + " | " + r.note + " |");
        }
        if (!notes.isEmpty()) System.out.println();
        for (String n : notes) System.out.println(n);
    }

    static void log(String line) {
        System.out.println("[perf " + Instant.now() + "] " + line);
    }
}
