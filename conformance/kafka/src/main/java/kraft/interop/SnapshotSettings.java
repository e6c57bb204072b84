package kraft.interop;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Snapshot settings that make a quorum snapshot and move its log start within about a minute, for both kinds,
 * under Kafka's property names (Kafka's own snapshot system test, {@code tests/kafkatest/tests/core/snapshot_test.py},
 * with shorter intervals), and a writer that grows a Kafka quorum's metadata log.
 */
final class SnapshotSettings {
    private SnapshotSettings() {}

    /** Bytes between snapshots and retention bytes, as in Kafka's snapshot system test. */
    static final String BYTES = "2048";

    /**
     * A Kafka controller's: snapshots after 2048 bytes or 1 s (each needs a new committed batch), the log start
     * moved past a snapshot once two exist and log + snapshots exceed 2048 bytes (Kafka checks every 60 s,
     * hard-coded), small segments rolled every 2 s so whole segments fall below it, deleted files removed after
     * 1 s. No NoOp records ({@code metadata.max.idle.interval.ms=0}, as every harness quorum): the log grows only
     * by {@link #grow}, so an idle quorum keeps its high watermark and two tools see the same values.
     */
    static Map<String, String> kafka(Map<String, String> timeouts) {
        Map<String, String> m = new LinkedHashMap<>(timeouts);
        m.put("metadata.log.max.record.bytes.between.snapshots", BYTES);
        m.put("metadata.log.max.snapshot.interval.ms", "1000");
        m.put("metadata.max.retention.bytes", BYTES);
        m.put("metadata.log.segment.ms", "2000");
        m.put("internal.metadata.log.segment.bytes", "4096");
        m.put("internal.metadata.delete.delay.millis", "1000");
        return m;
    }

    /** The same triggers and retention for a {@code kraft node}, as its flags (Kafka's names, kebab-case). */
    static List<String> kraftFlags() {
        return List.of("--metadata-log-max-record-bytes-between-snapshots", BYTES,
            "--metadata-log-max-snapshot-interval-ms", "1000", "--metadata-max-retention-bytes", BYTES,
            "--internal-metadata-log-segment-bytes", "4096");
    }

    /**
     * One metadata record in a Kafka-led quorum: a cluster-wide dynamic broker config (a ConfigRecord) set through
     * {@code bootstrap.controllers}, which Kafka's controller accepts without brokers.
     */
    static void grow(Admin admin, long value) throws Exception {
        ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
        admin.incrementalAlterConfigs(Map.of(cluster, List.of(new AlterConfigOp(
            new ConfigEntry("log.retention.ms", Long.toString(value)), AlterConfigOp.OpType.SET)))).all().get();
    }

    static Admin admin(String bootstrapControllers) {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, bootstrapControllers);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return Admin.create(props);
    }

    /**
     * Grows the Kafka-led quorum's log (one record every 100 ms) until {@code dir} (a controller's metadata log
     * directory) holds at least two snapshots and its log start has moved past 0; returns the picture of the
     * directory, or throws after {@code timeoutMs}.
     */
    static String untilLogStartMoved(Admin admin, Path dir, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        long value = 86_400_000L;
        java.util.Set<String> seen = new java.util.TreeSet<>();
        while (System.currentTimeMillis() < deadline) {
            grow(admin, value++);
            SnapshotFiles.snapshots(dir).forEach(s -> seen.add(s.id()));
            if (seen.size() >= 2 && SnapshotFiles.logStart(dir) > 0) {
                return SnapshotFiles.describe(dir);
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the log start of " + dir + " did not move in " + timeoutMs + " ms: "
            + SnapshotFiles.describe(dir));
    }
}
