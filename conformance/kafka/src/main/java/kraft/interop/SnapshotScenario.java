package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;

/**
 * (o) and (q) on one mixed quorum whose log start has moved past 0 (KIP-630).
 * <p>(o) Three Apache Kafka controllers with {@link SnapshotSettings#kafka} snapshot and move their log start (checked
 * on the leader's files: at least two snapshots written, the first live segment's base offset above 0); a
 * {@code kraft} node formatted by Kafka's storage tool joins, is pointed to the leader's snapshot (Fetch at offset 0
 * answered with a SnapshotId), fetches it with FetchSnapshot and installs it (the same bytes as the leader's file,
 * its log starting at the snapshot's end offset), catches up, is added with Kafka's {@code add-controller}, is
 * elected after kill -9 of the Kafka leader, and serves that snapshot to a fresh Kafka controller that joins as an
 * observer (Kafka's copy: the same bytes, its log start at the snapshot's end offset); the end checks. Before the
 * add, {@code kraft describe --status} against the Kafka leader computes CommittedVoters through the snapshot.
 * <p>(q) kill -9 of a {@code kraft} node in the middle of a snapshot download, from each kind of leader: a fresh
 * {@code kraft} node fetching with {@code controller.quorum.fetch.snapshot.max.bytes} = {@link #CHUNK} bytes is
 * killed as soon as its {@code .checkpoint.part} appears (checked: the part is shorter than the snapshot and no
 * {@code .checkpoint} of that id exists), restarts, finishes the download and catches up; first from the
 * {@code kraft} leader (o's), then, after kill -9 of that leader, from the Kafka leader elected next; the end checks,
 * the same snapshot bytes for the same snapshot id on every replica that fetched it.
 */
final class SnapshotScenario {
    static final int OURS = 5;
    static final int KAFKA_JOINER = 4;
    /** FetchSnapshot MaxBytes of the nodes (q) kills mid-download: enough round trips that a kill lands inside. */
    static final String CHUNK = "4";
    private final Report report;
    private final Tools tools;
    private final Scenarios scenarios;
    private final Path work;
    private final String kraft;
    /** Scenario ts: (o)'s steps with a kraft leader that snapshots, then Kafka's retention of its snapshot. */
    private final SnapshotRetention retention;

    SnapshotScenario(Report report, Tools tools, Scenarios scenarios, Path work, String kraft) {
        this(report, tools, scenarios, work, kraft, null);
    }

    /**
     * Scenario ts when {@code retention} is given: the kraft node snapshots ({@link SnapshotSettings#kraftFlags}), the
     * fresh Kafka controller has {@link SnapshotRetention#joinerConfig}, and {@link SnapshotRetention#run} follows.
     */
    SnapshotScenario(Report report, Tools tools, Scenarios scenarios, Path work, String kraft,
            SnapshotRetention retention) {
        this.retention = retention;
        this.report = report;
        this.tools = tools;
        this.scenarios = scenarios;
        this.work = work;
        this.kraft = kraft;
    }

    /** (o), then (q) if {@code q} on the same quorum; {@code o} false runs (o)'s steps without its end checks. */
    void run(boolean o, boolean q) throws Exception {
        try (MixedQuorum m = new MixedQuorum(report, tools, work, kraft,
                SnapshotSettings.kafka(KafkaJoinsScenario.KAFKA_TIMEOUTS))) {
            try {
                int leader = joinOldKafkaQuorum(m);
                if (o) EndChecks.run(m, "o end");
                if (q) {
                    report.scenario("q: kill -9 of a kraft node in the middle of a snapshot download, from a kraft"
                        + " leader and from an Apache Kafka leader; it restarts and finishes; the end checks");
                    killMidDownloads(m, leader);
                    EndChecks.run(m, "q end");
                }
            } finally {
                report.check("every process still running at the end", m.allAlive(), "see " + work);
            }
        }
    }

    /** (o)'s steps; returns the kraft leader's id. */
    private int joinOldKafkaQuorum(MixedQuorum m) throws Exception {
        KafkaQuorum kafka = m.kafka;
        KraftQuorum ours = m.ours;
        kafka.startInitial(1, 2, 3);
        int[] first = m.awaitLeader(-1, "the Kafka controllers elect a leader");
        String picture;
        try (Admin admin = SnapshotSettings.admin(kafka.address(1) + "," + kafka.address(2) + "," + kafka.address(3))) {
            long t0 = System.currentTimeMillis();
            picture = SnapshotSettings.untilLogStartMoved(admin, m.metadataDir(first[0]), 150_000);
            report.check("Kafka leader " + first[0] + " wrote two snapshots or more and moved its log start past 0 in "
                + (System.currentTimeMillis() - t0) / 1000 + " s of metadata writes (" + picture + ")", true, "");
        }
        SnapshotFiles.Snapshot latest = last(m.metadataDir(first[0]));

        // The kraft node: Fetch at offset 0 is answered with a SnapshotId; FetchSnapshot; install; catch up.
        List<String> args = new ArrayList<>(List.of("--election-timeout-ms", "1000", "--fetch-timeout-ms", "5000"));
        if (retention != null) args.addAll(SnapshotSettings.kraftFlags());
        ours.startJoinerFormattedByKafka(OURS, kafka.clusterId, kafka.initialControllers(),
            args.toArray(String[]::new));
        m.awaitCaughtUp(kafka.address(first[0]), OURS, "the kraft node fetches the Kafka leader's snapshot and log to"
            + " its end offset");
        SnapshotFiles.Snapshot installed = last(m.metadataDir(OURS));
        report.check("the kraft node installed a snapshot of Kafka leader " + first[0] + " at or after its snapshot "
            + latest.id() + " when it joined (" + SnapshotFiles.describe(m.metadataDir(OURS)) + ")",
            installed != null && installed.endOffset() >= latest.endOffset(), "none");
        if (installed == null) throw new IllegalStateException("the kraft node did not install Kafka's snapshot");
        {
            sameBytes("the kraft node's snapshot " + installed.id(), installed, m.metadataDir(first[0]));
            report.equal("the kraft node's log starts at the snapshot's end offset " + installed.endOffset(),
                installed.endOffset(), SnapshotFiles.logStart(m.metadataDir(OURS)));
        }

        describeComputes(m, first[0]);

        // add-controller, kill -9 of the Kafka leader, the kraft node is elected.
        ours.addWithKafkaTool(report, OURS, kafka.address(first[0]), "Kafka's add-controller adds the kraft node");
        m.awaitAllCaughtUp(kafka.address(first[0]), 3, "the kraft voter and the Kafka followers reach the Kafka"
            + " leader's end offset; HW = end offset");
        report.equal("voters after add-controller", List.of(1, 2, 3, OURS), m.currentVoters(kafka.address(first[0])));
        m.sample("o: Kafka leader with a kraft voter", first[0]);
        kafka.kill(first[0]);
        int[] second = m.awaitLeader(first[1], "after kill -9 of Kafka leader " + first[0] + ": a new leader with 3"
            + " of 4 voters alive (so the kraft node took part)");
        report.equal("the kraft node is elected", OURS, second[0]);
        if (second[0] != OURS) throw new IllegalStateException("Kafka controller " + second[0] + " was elected");
        kafka.restart(first[0]);
        m.awaitAllCaughtUp(ours.address(OURS), 3, "the Kafka voters replicate the kraft leader (the killed one"
            + " restarted); HW = end offset");
        m.sample("o: kraft leader", OURS);

        // A fresh Kafka controller joins and is pointed to the kraft leader's snapshot.
        kafka.bootstrapServers = List.of(1, 2, 3).stream().map(kafka::address).collect(Collectors.joining(","))
            + "," + ours.address(OURS);
        if (retention != null) {
            retention.awaitOwnSnapshot(m.metadataDir(OURS), second[1]);
            kafka.extraConfig = id -> id == KAFKA_JOINER ? SnapshotRetention.joinerConfig() : java.util.Map.of();
        }
        SnapshotFiles.Snapshot served = last(m.metadataDir(OURS));
        long servedWrittenAt = Files.getLastModifiedTime(served.path()).toMillis();
        kafka.startObserver(KAFKA_JOINER);
        m.awaitCaughtUp(ours.address(OURS), KAFKA_JOINER, "a fresh Kafka controller fetches the kraft leader's"
            + " snapshot and log to its end offset");
        SnapshotFiles.Snapshot loaded = find(m.metadataDir(KAFKA_JOINER), served);
        report.check("the fresh Kafka controller holds the kraft leader's latest snapshot " + served.id() + " ("
            + SnapshotFiles.describe(m.metadataDir(KAFKA_JOINER)) + ")", loaded != null, "");
        if (loaded != null) {
            sameBytes("the Kafka controller's copy of " + served.id(), loaded, m.metadataDir(OURS));
            report.check("the fresh Kafka controller's log starts at or after the snapshot's end offset "
                + served.endOffset(), SnapshotFiles.logStart(m.metadataDir(KAFKA_JOINER)) >= served.endOffset(),
                SnapshotFiles.describe(m.metadataDir(KAFKA_JOINER)));
        }
        m.sample("o: Kafka observer joined", OURS);
        if (retention != null && loaded != null) {
            retention.run(loaded, servedWrittenAt, m.metadataDir(KAFKA_JOINER), kafka.log(KAFKA_JOINER), () -> churn(m));
        }
        return OURS;
    }

    /** The fresh Kafka controller added as a voter and removed again through the kraft leader (ts's batches). */
    private void churn(MixedQuorum m) {
        try {
            String leader = m.ours.address(OURS);
            tools.kraft("add-voter", "--bootstrap-controller", leader, "--node-id", Integer.toString(KAFKA_JOINER),
                "--directory-id=" + m.kafka.directoryIds.get(KAFKA_JOINER), "--endpoint",
                m.kafka.address(KAFKA_JOINER), "--timeout-ms", "10000");
            tools.kraft("remove-voter", "--bootstrap-controller", leader, "--node-id", Integer.toString(KAFKA_JOINER),
                "--timeout-ms", "10000");
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * {@code kraft describe --status} against Kafka leader {@code leader}, whose log starts at a snapshot: its observer
     * fetches the snapshot (FetchSnapshot) and the log after it, and prints CommittedVoters computed by kraft, the voter
     * set at HW - 1 as the Kafka replicas' snapshot and log files hold it.
     */
    private void describeComputes(MixedQuorum m, int leader) throws Exception {
        Procs.Result r = tools.kraft("describe", "--bootstrap-controller", m.kafka.address(leader), "--status",
            "--timeout-ms", "30000");
        java.util.Map<String, String> f = r.code() == 0 ? Tools.statusFields(r.out()) : java.util.Map.of();
        long hw = Long.parseLong(f.getOrDefault("HighWatermark", "-1"));
        java.util.Map.Entry<Long, List<Integer>> at = hw > 0 ? EndChecks.voterSets(m, hw).floorEntry(hw - 1) : null;
        List<Integer> committed = Scenarios.ids(f.get("CommittedVoters")).stream().sorted().toList();
        report.check("kraft describe --status against Kafka leader " + leader + " (log start "
            + SnapshotFiles.logStart(m.metadataDir(leader)) + "): CommittedVoters " + committed + " computed by kraft"
            + " from the snapshot and the log after it = the voter set at HW - 1 (HW " + hw + ": " + at + ")",
            at != null && at.getValue().equals(committed)
                && f.getOrDefault("CommittedVotersSource", "").startsWith("computed by kraft"), r.toString());
    }

    /** (q)'s steps, from the kraft leader {@code leader}. */
    private void killMidDownloads(MixedQuorum m, int leader) throws Exception {
        KafkaQuorum kafka = m.kafka;
        KraftQuorum ours = m.ours;
        String[] args = {"--election-timeout-ms", "1000", "--fetch-timeout-ms", "5000",
            "--controller-quorum-fetch-snapshot-max-bytes", CHUNK};
        ours.formatJoinerByKafka(6, kafka.clusterId, kafka.initialControllers(), args);
        killAndFinish(m, 6, leader);

        ours.kill(leader);
        int[] next = m.awaitLeader(-1, "after kill -9 of the kraft leader " + leader + ": a Kafka controller leads");
        report.check("a Kafka controller leads after kill -9 of the kraft leader", !m.isKraft(next[0]),
            "leader " + next[0]);
        ours.restart(leader);
        m.sample("q: Kafka leader", next[0]);
        if (SnapshotFiles.snapshots(m.metadataDir(next[0])).isEmpty()) {
            // Every Kafka controller snapshots on its own; one that just joined may not have yet.
            try (Admin admin = SnapshotSettings.admin(kafka.address(next[0]))) {
                for (int i = 0; i < 100 && SnapshotFiles.snapshots(m.metadataDir(next[0])).isEmpty(); i++) {
                    SnapshotSettings.grow(admin, 172_800_000L + i);
                    Thread.sleep(100);
                }
            }
        }
        ours.formatJoinerByKafka(7, kafka.clusterId, kafka.initialControllers(), args);
        killAndFinish(m, 7, next[0]);
    }

    /**
     * Starts formatted node {@code id}, kills it (-9) as soon as a {@code .checkpoint.part} appears in its metadata
     * directory, checks the download was cut short, restarts it and waits until it finished and caught up with
     * {@code leader}.
     */
    private void killAndFinish(MixedQuorum m, int id, int leader) throws Exception {
        KraftQuorum ours = m.ours;
        Path dir = m.metadataDir(id);
        String from = m.kind(leader) + " leader " + leader;
        ours.launch(id);
        long deadline = System.currentTimeMillis() + 60_000;
        List<Path> parts = List.of();
        while (System.currentTimeMillis() < deadline && ours.running(id)) {
            parts = SnapshotFiles.parts(dir);
            if (!parts.isEmpty()) break;
            Thread.sleep(1);
        }
        ours.kill(id);
        List<Path> left = SnapshotFiles.parts(dir);
        report.check("kraft node " + id + " started a download from " + from + " (a .checkpoint.part appeared)",
            !parts.isEmpty(), SnapshotFiles.describe(dir));
        if (left.isEmpty()) return;
        String name = left.get(0).getFileName().toString();
        Path full = m.metadataDir(leader).resolve(name.substring(0, name.length() - ".part".length()));
        long partSize = Files.size(left.get(0));
        long size = Files.exists(full) ? Files.size(full) : -1;
        report.check("kill -9 of kraft node " + id + " in the middle of the download: its .checkpoint.part holds "
            + partSize + " of the snapshot's " + size + " bytes and no .checkpoint of that id exists",
            partSize < size && !Files.exists(dir.resolve(full.getFileName())), SnapshotFiles.describe(dir));
        ours.restart(id);
        m.awaitCaughtUp(m.address(leader), id, "restarted kraft node " + id + " finishes the download from " + from
            + " and reaches its end offset");
        // The leader may have written a newer snapshot meanwhile; the restarted node is pointed to its latest.
        SnapshotFiles.Snapshot got = last(dir);
        report.check("kraft node " + id + " holds the snapshot " + snapshotOf(full).id() + " it was fetching, or a"
            + " later one of the leader (" + SnapshotFiles.describe(dir) + ")", got != null
            && got.endOffset() >= snapshotOf(full).endOffset(), "");
        if (got != null) sameBytes("kraft node " + id + "'s snapshot " + got.id(), got, m.metadataDir(leader));
        report.check("no .checkpoint.part left on kraft node " + id, SnapshotFiles.parts(dir).isEmpty(),
            SnapshotFiles.describe(dir));
    }

    private static SnapshotFiles.Snapshot snapshotOf(Path file) {
        String name = file.getFileName().toString();
        return new SnapshotFiles.Snapshot(Long.parseLong(name.substring(0, 20)), Integer.parseInt(name.substring(21,
            31)), file);
    }

    /** The same snapshot id in {@code dir}, or null. */
    static SnapshotFiles.Snapshot find(Path dir, SnapshotFiles.Snapshot s) throws Exception {
        for (SnapshotFiles.Snapshot x : SnapshotFiles.snapshots(dir)) {
            if (x.endOffset() == s.endOffset() && x.epoch() == s.epoch()) return x;
        }
        return null;
    }

    /** The latest snapshot in {@code dir}, or null. */
    static SnapshotFiles.Snapshot last(Path dir) throws Exception {
        List<SnapshotFiles.Snapshot> all = SnapshotFiles.snapshots(dir);
        return all.isEmpty() ? null : all.get(all.size() - 1);
    }

    /** {@code s} and the file of the same id in {@code sourceDir} hold the same bytes. */
    private void sameBytes(String what, SnapshotFiles.Snapshot s, Path sourceDir) throws Exception {
        Path other = sourceDir.resolve(s.path().getFileName());
        boolean exists = Files.exists(other);
        report.check(what + ": the same bytes as its source's file (" + Files.size(s.path()) + " bytes)", exists
            && Arrays.equals(Files.readAllBytes(s.path()), Files.readAllBytes(other)), exists ? "bytes differ"
            : other + " is gone (" + SnapshotFiles.describe(sourceDir) + ")");
    }

    static List<Path> dirs(MixedQuorum m) {
        List<Path> out = new ArrayList<>();
        for (int id : m.ids()) out.add(m.metadataDir(id));
        return out;
    }
}
