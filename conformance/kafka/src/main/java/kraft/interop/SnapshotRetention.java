package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * (ts) Time-based snapshot retention across kinds: an Apache Kafka controller keeps a snapshot a {@code kraft} leader
 * made until {@code metadata.max.retention.ms} has passed since that snapshot's LastContainedLogTimestamp, then
 * deletes it. Kafka's cleaner ({@code KafkaMetadataLog.maybeClean}, every 60 s, hard-coded) deletes the oldest
 * snapshot once {@code now - lastContainedLogTimestamp > retention} and a newer snapshot exists; a snapshot stamped
 * 0 (or any time far in the past) goes at the first run after Kafka writes its own, one stamped in the future
 * never. Runs on (o)'s quorum after (o)'s steps, the fresh Kafka controller configured by {@link #joinerConfig}: a
 * Kafka controller only writes snapshots once its log holds a controller record (its MetadataLoader waits for one), so
 * (p)'s pure kraft log cannot show it.
 */
final class SnapshotRetention {
    /** The Kafka controller's retention: long enough that a cleaner run (every 60 s) falls inside it. */
    static final long RETENTION_MS = 120_000;
    /** Kafka's cleaner period (KafkaRaftClient's RaftMetadataLogCleanerManager, 60 s). */
    static final long CLEANER_PERIOD_MS = 60_000;
    private static final long SLACK_MS = 15_000;
    /** The kraft leader snapshots within 1 s of a commit (its interval trigger), so its last batch is recent. */
    private static final long STAMP_LAG_MS = 30_000;

    private final Report report;

    SnapshotRetention(Report report) {
        this.report = report;
    }

    /**
     * The fresh Kafka controller's properties over (o)'s {@link SnapshotSettings#kafka}: retention by time only
     * ({@link #RETENTION_MS}, size retention off); it keeps (o)'s snapshot triggers (2048 bytes or 1 s), so a
     * snapshot of its own follows the one it loaded once new batches commit.
     */
    static Map<String, String> joinerConfig() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("metadata.max.retention.ms", Long.toString(RETENTION_MS));
        m.put("metadata.max.retention.bytes", "-1");
        return m;
    }

    /**
     * Waits (at most 30 s) until the kraft leader has written a snapshot in its own epoch {@code epoch} (so the
     * snapshot it serves next is one it made, not the Kafka leader's it installed on joining).
     */
    void awaitOwnSnapshot(Path kraftDir, int epoch) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline && !ownIn(kraftDir, epoch)) Thread.sleep(200);
        report.check("ts: the kraft leader wrote a snapshot in its epoch " + epoch + " ("
            + SnapshotFiles.describe(kraftDir) + ")", ownIn(kraftDir, epoch), "");
    }

    private static boolean ownIn(Path dir, int epoch) throws Exception {
        SnapshotFiles.Snapshot last = SnapshotScenario.last(dir);
        return last != null && last.epoch() == epoch;
    }

    /** LastContainedLogTimestamp of a snapshot file, as Kafka's DumpLogSegments reads it (-1 if it shows none). */
    static long lastContainedTimestamp(String dump) {
        Matcher t = Pattern.compile("\"lastContainedLogTimestamp\":(-?\\d+)").matcher(dump);
        return t.find() ? Long.parseLong(t.group(1)) : -1;
    }

    /**
     * Checks the snapshot's LastContainedLogTimestamp against the file's modification time on the kraft leader
     * ({@code writtenAt}), then watches {@code kafkaDir} (the Kafka controller's metadata log directory) until {@code kraftMade} (its copy of the
     * kraft leader's snapshot, the oldest it holds) is deleted or one cleaner period after retention has passed;
     * {@code churn} runs every 5 s so the Kafka controller keeps committing batches and writes snapshots of its own.
     */
    void run(SnapshotFiles.Snapshot kraftMade, long writtenAt, Path kafkaDir, Path kafkaLog, Runnable churn)
            throws Exception {
        Procs.Result dump = SnapshotFiles.dump(List.of(kraftMade.path()));
        long stamped = lastContainedTimestamp(dump.out());
        report.check("ts: Kafka's dump of the kraft-made snapshot " + kraftMade.id() + " held by the Kafka controller"
            + " names its LastContainedLogTimestamp " + stamped + ", " + (writtenAt - stamped) + " ms before the kraft"
            + " leader wrote the file (its last batch's append time: at most " + STAMP_LAG_MS / 1000 + " s before)",
            stamped <= writtenAt && stamped >= writtenAt - STAMP_LAG_MS, dump.toString());
        if (stamped <= 0) return;
        long expires = stamped + RETENTION_MS;
        long deadline = Math.max(expires, writtenAt + RETENTION_MS) + CLEANER_PERIOD_MS + SLACK_MS;
        long newerAt = -1, goneAt = -1, lastChurn = 0;
        while (System.currentTimeMillis() < deadline && goneAt < 0) {
            long now = System.currentTimeMillis();
            if (now - lastChurn >= 5_000) {
                churn.run();
                lastChurn = now;
            }
            if (newerAt < 0 && SnapshotFiles.snapshots(kafkaDir).stream()
                .anyMatch(s -> s.endOffset() > kraftMade.endOffset())) {
                newerAt = System.currentTimeMillis();
            }
            if (!Files.exists(kraftMade.path())) goneAt = System.currentTimeMillis();
            Thread.sleep(500);
        }
        String picture = SnapshotFiles.describe(kafkaDir);
        report.check("ts: the Kafka controller wrote a snapshot of its own after the kraft-made one, "
            + (newerAt < 0 ? "never" : (newerAt - stamped) / 1000 + " s after its timestamp") + " (needed within " + (RETENTION_MS
            - CLEANER_PERIOD_MS) / 1000 + " s, so a cleaner run falls before retention passes)", newerAt >= 0
            && newerAt + CLEANER_PERIOD_MS <= expires, picture);
        report.check("ts: the Kafka controller keeps the kraft-made snapshot while it is younger than"
            + " metadata.max.retention.ms " + RETENTION_MS + " (deleted " + (goneAt < 0 ? "never" : (goneAt - stamped)
            / 1000 + " s") + " after its timestamp)", goneAt < 0 || goneAt > expires, picture);
        report.check("ts: ... and deletes it within one cleaner period after retention has passed", goneAt >= 0
            && goneAt <= expires + CLEANER_PERIOD_MS + SLACK_MS, picture);
        String log = Files.exists(kafkaLog) ? Files.readString(kafkaLog) : "";
        String why = "for deletion because its timestamp (" + stamped + ")";
        report.check("ts: Kafka's log gives the reason: snapshot " + kraftMade.id() + " marked " + why
            + " ... older than the retention (" + RETENTION_MS + ")", log.contains(why)
            && log.contains("older than the") && log.contains("retention (" + RETENTION_MS + ")"),
            "no line with '" + why + "' in " + kafkaLog);
    }
}
