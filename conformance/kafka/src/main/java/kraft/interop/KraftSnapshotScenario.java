package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.kafka.common.Uuid;

/**
 * (p) An Apache Kafka controller joins a {@code kraft}-led quorum whose log start has moved past 0 (KIP-630): three
 * {@code kraft node} processes with {@link SnapshotSettings#kraftFlags} elect a leader; membership churn (a fourth
 * {@code kraft} node added and removed with {@code kraft add-voter} / {@code remove-voter}) grows their log until the
 * leader has written two snapshots or more and its first live segment's base offset is above 0; a Kafka controller
 * formatted with {@code --no-initial-controllers} joins, is pointed to the leader's snapshot, loads it (Kafka's copy:
 * the same bytes, its log starting at or after the snapshot's end offset), catches up and becomes a voter with
 * {@code kraft add-voter}; Kafka's {@code kafka-dump-log --cluster-metadata-decoder} reads every snapshot file the
 * {@code kraft} nodes wrote (each copied aside when it appeared, since retention deletes old ones); the end checks.
 */
final class KraftSnapshotScenario {
    private static final int KAFKA = 1;
    private static final List<Integer> KRAFT = List.of(5, 6, 7);
    private static final int CHURN = 8;
    private final Report report;
    private final Tools tools;
    private final Path work;
    private final String kraft;
    private final Path kept;
    private final java.util.Set<String> seen = java.util.Collections.synchronizedSet(new java.util.TreeSet<>());
    /** When the scenario was set up: every time a kraft node writes in it comes later. */
    private final long createdMs = System.currentTimeMillis();
    private MixedQuorum m;
    private String clusterId;
    private java.util.concurrent.Future<WarmUp> warmUp;

    /** What the churn did: the leader, changes made, seconds taken, whether its log start moved, its directory. */
    private record WarmUp(int leader, int changes, long seconds, boolean moved, String picture) {}

    KraftSnapshotScenario(Report report, Tools tools, Path work, String kraft) {
        this.report = report;
        this.tools = tools;
        this.work = work;
        this.kraft = kraft;
        this.kept = work.resolve("kraft-snapshots");
    }

    /**
     * Starts the kraft quorum and its churn in the background (no checks yet), so its wait for the leader's
     * cleaner overlaps another scenario's; {@link #run} reports on it.
     */
    void startEarly() {
        m = new MixedQuorum(report, tools, work, kraft, KafkaJoinsScenario.KAFKA_TIMEOUTS);
        java.util.concurrent.ExecutorService e = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "p-warm-up");
            t.setDaemon(true);
            return t;
        });
        warmUp = e.submit(this::warmUp);
        e.shutdown();
    }

    void run() throws Exception {
        if (m == null) startEarly();
        try (MixedQuorum q = m) {
            try {
                steps(q);
                EndChecks.run(q, "p end");
            } finally {
                report.check("p: every process still running at the end", q.allAlive(), "see " + work);
            }
        }
    }

    private static String[] nodeArgs() {
        List<String> a = new ArrayList<>(List.of(KafkaJoinsScenario.KRAFT_TIMEOUTS));
        a.addAll(SnapshotSettings.kraftFlags());
        return a.toArray(String[]::new);
    }

    /**
     * Three kraft voters and a fourth node, added and removed until the leader has written two snapshots or more
     * and its first live segment's base offset is above 0 (at most 150 s).
     */
    private WarmUp warmUp() throws Exception {
        KraftQuorum ours = m.ours;
        clusterId = Uuid.randomUuid().toString();
        for (int id : KRAFT) ours.reservePort(id);
        ours.reservePort(CHURN);
        String initial = KRAFT.stream().map(id -> id + "@" + ours.address(id) + ":" + Uuid.randomUuid())
            .collect(Collectors.joining(","));
        for (int id : KRAFT) ours.startJoiner(id, clusterId, initial, nodeArgs());
        ours.startJoiner(CHURN, clusterId, initial, nodeArgs());
        Files.createDirectories(kept);
        Uuid churnDir = ours.directoryId(CHURN);
        long t0 = System.currentTimeMillis(), deadline = t0 + 150_000;
        int changes = 0, leader = -1;
        boolean moved = false;
        while (System.currentTimeMillis() < deadline && !moved) {
            int[] l = m.currentLeader();
            if (l == null) {
                Thread.sleep(300);
                continue;
            }
            leader = l[0];
            String addr = ours.address(leader);
            Procs.Result add = tools.kraft("add-voter", "--bootstrap-controller", addr, "--node-id",
                Integer.toString(CHURN), "--directory-id=" + churnDir, "--endpoint", ours.address(CHURN),
                "--timeout-ms", "10000");
            Procs.Result remove = tools.kraft("remove-voter", "--bootstrap-controller", addr, "--node-id",
                Integer.toString(CHURN), "--timeout-ms", "10000");
            changes += (add.code() == 0 ? 1 : 0) + (remove.code() == 0 ? 1 : 0);
            keepSnapshots(m, kept, seen);
            int id = leader;
            moved = seen.stream().filter(s -> s.startsWith(id + "/")).count() >= 2
                && SnapshotFiles.logStart(m.metadataDir(id)) > 0;
            Thread.sleep(500); // about two changes a second: a snapshot a second by the time trigger
        }
        // End with node 8 removed, so the voters are the three kraft nodes.
        int[] l = m.currentLeader();
        if (l != null) {
            tools.kraft("remove-voter", "--bootstrap-controller", ours.address(l[0]), "--node-id",
                Integer.toString(CHURN), "--timeout-ms", "10000");
        }
        return new WarmUp(leader, changes, (System.currentTimeMillis() - t0) / 1000, moved,
            leader < 0 ? "no leader" : SnapshotFiles.describe(m.metadataDir(leader)));
    }

    private void steps(MixedQuorum m) throws Exception {
        KraftQuorum ours = m.ours;
        WarmUp w = warmUp.get();
        int[] first = m.awaitLeader(-1, "the kraft nodes elect a leader");
        report.check("kraft leader " + w.leader() + " wrote two snapshots or more and moved its log start past 0"
            + " after " + w.changes() + " voter changes in " + w.seconds() + " s (" + w.picture() + ")", w.moved(),
            w.picture());
        if (!w.moved()) throw new IllegalStateException("the kraft leader's log start did not move");
        m.sample("p: kraft leader after the churn", first[0]);

        // A Kafka controller joins, is pointed to the leader's snapshot and loads it.
        m.kafka.clusterId = clusterId;
        m.kafka.bootstrapServers = KRAFT.stream().map(ours::address).collect(Collectors.joining(","));
        SnapshotFiles.Snapshot served = SnapshotScenario.last(m.metadataDir(first[0]));
        m.kafka.startObserver(KAFKA);
        Uuid dir = m.kafka.directoryIds.get(KAFKA);
        m.awaitCaughtUp(m.address(first[0]), KAFKA, "the Kafka controller fetches the kraft leader's snapshot and log"
            + " to its end offset");
        keepSnapshots(m, kept, seen);
        SnapshotFiles.Snapshot loaded = SnapshotScenario.find(m.metadataDir(KAFKA), served);
        SnapshotFiles.Snapshot newest = SnapshotScenario.last(m.metadataDir(KAFKA));
        report.check("the Kafka controller loaded a snapshot of the kraft leader (" + served.id() + " or later: "
            + SnapshotFiles.describe(m.metadataDir(KAFKA)) + ")", newest != null
            && newest.endOffset() >= served.endOffset(), "");
        if (loaded != null) {
            byte[] a = Files.readAllBytes(loaded.path());
            Path source = m.metadataDir(first[0]).resolve(loaded.path().getFileName());
            boolean same = Files.exists(source) && java.util.Arrays.equals(a, Files.readAllBytes(source));
            report.check("the Kafka controller's copy of " + served.id() + " holds the kraft leader's bytes ("
                + a.length + " bytes)", same, "differs from " + source);
        }
        if (newest != null) {
            report.check("the Kafka controller's log starts at or after the snapshot's end offset "
                + newest.endOffset(), SnapshotFiles.logStart(m.metadataDir(KAFKA)) >= newest.endOffset(),
                SnapshotFiles.describe(m.metadataDir(KAFKA)));
        }

        Procs.Result add = tools.kraft("add-voter", "--bootstrap-controller", ours.address(KRAFT.get(1)),
            "--node-id", Integer.toString(KAFKA), "--directory-id=" + dir, "--endpoint", m.kafka.address(KAFKA),
            "--timeout-ms", "30000");
        report.check("kraft add-voter makes the Kafka controller a voter (exit 0)", add.code() == 0, add.toString());
        int[] now = m.awaitLeader(-1, "a leader after add-voter");
        report.equal("voters after add-voter (current)", List.of(KAFKA, 5, 6, 7), m.currentVoters(m.address(now[0])));
        m.awaitAllCaughtUp(m.address(now[0]), 3, "the Kafka voter and the kraft followers replicate; HW = end offset");
        m.sample("p: Kafka controller added", now[0]);

        // Kafka's DumpLogSegments on every snapshot file the kraft nodes wrote.
        keepSnapshots(m, kept, seen);
        List<Path> files = new ArrayList<>();
        try (var s = Files.walk(kept)) {
            files.addAll(s.filter(Files::isRegularFile).sorted().toList());
        }
        Procs.Result dump = SnapshotFiles.dump(files);
        String bad = "";
        for (Path f : files) {
            String name = f.getFileName().toString();
            SnapshotFiles.Snapshot snap = new SnapshotFiles.Snapshot(Long.parseLong(name.substring(0, 20)),
                Integer.parseInt(name.substring(21, 31)), f);
            String why = SnapshotFiles.judgeDump(dump.out(), snap);
            if (why != null && bad.isEmpty()) bad = f + ": " + why;
        }
        report.check("Kafka's kafka-dump-log --cluster-metadata-decoder reads every snapshot file the kraft nodes wrote ("
            + files.size() + " files; header, footer, every batch valid)", dump.code() == 0 && !files.isEmpty()
            && bad.isEmpty(), bad.isEmpty() ? dump.toString() : bad);
        String times = timesOutside(dump.out(), createdMs, System.currentTimeMillis());
        report.check("p: every CreateTime and LastContainedLogTimestamp in Kafka's dump of the kraft snapshots is a"
            + " wall-clock time of this run (kraft stamps batches with its wall clock, as Kafka's BatchBuilder)",
            times.isEmpty(), times);
    }

    /**
     * The CreateTime and LastContainedLogTimestamp values of a DumpLogSegments output outside {@code [from, to]}
     * (empty if none and there is at least one), as a reason.
     */
    static String timesOutside(String dump, long from, long to) {
        java.util.regex.Matcher t = java.util.regex.Pattern
            .compile("(?:CreateTime: |\"lastContainedLogTimestamp\":)(-?\\d+)").matcher(dump);
        int n = 0;
        java.util.Set<Long> outside = new java.util.TreeSet<>();
        while (t.find()) {
            n++;
            long v = Long.parseLong(t.group(1));
            if (v < from || v > to) outside.add(v);
        }
        if (n == 0) return "no CreateTime in the dump";
        return outside.isEmpty() ? "" : n + " times, outside [" + from + ", " + to + "]: " + outside;
    }

    /**
     * Copies every snapshot file of the kraft nodes not copied yet into {@code kept} as {@code <node>/<name>} (Kafka's
     * DumpLogSegments reads the end offset and epoch from the file name, so the name stays Kafka's), and
     * records it in {@code seen}: retention deletes old snapshots, and Kafka's dump must read all of them.
     */
    private static void keepSnapshots(MixedQuorum m, Path kept, java.util.Set<String> seen) throws Exception {
        for (int id : m.ours.ports.keySet()) {
            for (SnapshotFiles.Snapshot s : SnapshotFiles.snapshots(m.metadataDir(id))) {
                String name = id + "/" + s.path().getFileName();
                if (seen.contains(name)) continue;
                try {
                    Files.createDirectories(kept.resolve(Integer.toString(id)));
                    Files.copy(s.path(), kept.resolve(name));
                    seen.add(name);
                } catch (java.nio.file.NoSuchFileException e) {
                    // deleted by retention between the listing and the copy
                }
            }
        }
    }
}
