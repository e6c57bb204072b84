package kraft.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.kafka.common.Uuid;

/**
 * A three-voter quorum plus one observer (node 4), one process per node, for the side-by-side measurements
 * ({@link PerfMain}): Apache Kafka controllers ({@link KafkaQuorum}) or {@code kraft node}s. Both run with the
 * same election and fetch timeouts; both fsync their logs (Kafka's KRaft log flushes on every append; ours
 * always does, see impl/src/storage.rs).
 */
abstract class PerfQuorum implements AutoCloseable {
    static final int[] VOTERS = {1, 2, 3};
    static final int OBSERVER = 4;
    final String name;
    final String clusterId;

    PerfQuorum(String name, String clusterId) {
        this.name = name;
        this.clusterId = clusterId;
    }

    /** Formats voters 1–3 (bootstrap voter set, kraft.version 1), without starting them. */
    abstract void format() throws Exception;

    /** Starts a formatted node without waiting for it to listen. */
    abstract Process launch(int id) throws Exception;

    /** Formats and starts node 4, an observer; returns once it listens. */
    abstract void startObserver() throws Exception;

    abstract String address(int id);

    abstract Uuid directoryId(int id) throws IOException;

    abstract long pid(int id);

    abstract void kill(int id) throws InterruptedException;

    /** Starts a killed node again; returns once it listens. */
    abstract void restart(int id) throws Exception;

    int port(int id) {
        return Integer.parseInt(address(id).split(":")[1]);
    }

    /** Apache Kafka 4.4 controllers, formatted by Kafka's StorageTool, started with kafka-server-start.sh's JVM options. */
    static final class Kafka extends PerfQuorum {
        /** kafka-run-class.sh / kafka-server-start.sh defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS). */
        static final List<String> JVM = List.of("-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC",
            "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true");
        final KafkaQuorum q;

        Kafka(Path dir, int electionTimeoutMs, int fetchTimeoutMs, boolean snapshots) {
            this(quorum(dir, snapshots ? SnapshotSettings.kafka(timeouts(electionTimeoutMs, fetchTimeoutMs))
                : timeouts(electionTimeoutMs, fetchTimeoutMs)));
        }

        private Kafka(KafkaQuorum q) {
            super("Apache Kafka", q.clusterId);
            this.q = q;
        }

        static Map<String, String> timeouts(int electionTimeoutMs, int fetchTimeoutMs) {
            return Map.of("controller.quorum.election.timeout.ms", Integer.toString(electionTimeoutMs),
                "controller.quorum.fetch.timeout.ms", Integer.toString(fetchTimeoutMs));
        }

        /** Kafka controllers with {@code props} started as kafka-server-start.sh starts them ({@link #JVM}). */
        static KafkaQuorum quorum(Path dir, Map<String, String> props) {
            KafkaQuorum q = new KafkaQuorum(dir, props);
            q.serverCommand = config -> {
                List<String> cmd = new ArrayList<>();
                cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
                cmd.addAll(JVM);
                cmd.addAll(List.of("-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                    "-Dorg.slf4j.simpleLogger.showDateTime=true", "-cp", System.getProperty("java.class.path"),
                    "kafka.Kafka", config));
                return cmd;
            };
            return q;
        }

        @Override
        void format() throws Exception {
            q.formatInitial(VOTERS);
        }

        @Override
        Process launch(int id) throws Exception {
            return q.launch(id);
        }

        @Override
        void startObserver() throws Exception {
            q.startObserver(OBSERVER);
        }

        @Override
        String address(int id) {
            return q.address(id);
        }

        @Override
        Uuid directoryId(int id) {
            return q.directoryIds.get(id);
        }

        @Override
        long pid(int id) {
            return q.pid(id);
        }

        @Override
        void kill(int id) throws InterruptedException {
            q.kill(id);
        }

        @Override
        void restart(int id) throws Exception {
            q.restart(id);
        }

        @Override
        public void close() throws InterruptedException {
            q.close();
        }
    }

    /** {@code kraft format} + {@code kraft node} per node (not {@code kraft cluster}: kill -9 must hit one node). */
    static final class Kraft extends PerfQuorum {
        final Path dir;
        final String kraft;
        final List<String> nodeArgs;
        final Map<Integer, Integer> ports = new LinkedHashMap<>();
        final Map<Integer, Uuid> directoryIds = new LinkedHashMap<>();
        private final Map<Integer, Process> processes = new LinkedHashMap<>();

        Kraft(Path dir, String kraft, int electionTimeoutMs, int fetchTimeoutMs, boolean snapshots) {
            super("kraft", Uuid.randomUuid().toString());
            this.dir = dir;
            this.kraft = kraft;
            List<String> args = new ArrayList<>(List.of("--election-timeout-ms", Integer.toString(electionTimeoutMs),
                "--fetch-timeout-ms", Integer.toString(fetchTimeoutMs)));
            if (snapshots) args.addAll(SnapshotSettings.kraftFlags());
            this.nodeArgs = List.copyOf(args);
        }

        private Path dataDir(int id) {
            return dir.resolve("node-" + id);
        }

        private Path log(int id) {
            return dir.resolve("node-" + id + ".log");
        }

        private String initialControllers() {
            List<String> out = new ArrayList<>();
            for (int id : VOTERS) out.add(id + "@" + address(id) + ":" + directoryIds.get(id));
            return out.stream().collect(Collectors.joining(","));
        }

        private void format(int id) throws Exception {
            List<String> cmd = new ArrayList<>(List.of(kraft, "format", "--data-dir", dataDir(id).toString(),
                "--cluster-id", clusterId, "--node-id", Integer.toString(id), "--initial-controllers",
                initialControllers()));
            Procs.Result r = Procs.run(cmd, 60);
            if (r.code() != 0) throw new IOException("kraft format of node " + id + " failed: " + r);
        }

        @Override
        void format() throws Exception {
            Files.createDirectories(dir);
            for (int id : VOTERS) {
                ports.put(id, KafkaQuorum.freePort());
                directoryIds.put(id, Uuid.randomUuid());
            }
            for (int id : VOTERS) format(id);
        }

        @Override
        Process launch(int id) throws Exception {
            List<String> cmd = new ArrayList<>(List.of(kraft, "node", "--data-dir", dataDir(id).toString(),
                "--listener", address(id)));
            cmd.addAll(nodeArgs);
            Process p = Procs.start(cmd, log(id));
            processes.put(id, p);
            return p;
        }

        @Override
        void startObserver() throws Exception {
            ports.put(OBSERVER, KafkaQuorum.freePort());
            format(OBSERVER);
            directoryIds.put(OBSERVER, KafkaQuorum.readDirectoryId(dataDir(OBSERVER)));
            restart(OBSERVER);
        }

        @Override
        String address(int id) {
            return "127.0.0.1:" + ports.get(id);
        }

        @Override
        Uuid directoryId(int id) {
            return directoryIds.get(id);
        }

        @Override
        long pid(int id) {
            return processes.get(id).pid();
        }

        @Override
        void kill(int id) throws InterruptedException {
            Procs.kill(processes.remove(id));
        }

        @Override
        void restart(int id) throws Exception {
            Procs.waitForPort(launch(id), ports.get(id), 30_000, log(id));
        }

        @Override
        public void close() throws InterruptedException {
            for (Process p : processes.values()) Procs.stop(p);
        }
    }
}
