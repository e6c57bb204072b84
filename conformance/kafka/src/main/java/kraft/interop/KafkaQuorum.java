package kraft.interop;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;

import org.apache.kafka.common.Uuid;

/**
 * Apache Kafka controllers ({@code process.roles=controller}) on loopback ports, each with its own directory,
 * formatted by Kafka's own storage tool ({@code kafka.tools.StorageTool format}): the initial voters with
 * {@code --initial-controllers} (kraft.version 1), a joining controller with {@code --no-initial-controllers}.
 */
final class KafkaQuorum implements AutoCloseable {
    final Path dir;
    /** Kafka's cluster id; a controller joining another quorum takes that quorum's. */
    String clusterId = Uuid.randomUuid().toString();
    /** {@code controller.quorum.bootstrap.servers}; null: the initial voters' addresses. */
    String bootstrapServers;
    /**
     * {@code controller.quorum.voters} (static voters, kraft.version 0), written instead of
     * {@code controller.quorum.bootstrap.servers} when set.
     */
    String staticVoters;
    final Map<Integer, Integer> ports = new LinkedHashMap<>();
    final Map<Integer, Uuid> directoryIds = new LinkedHashMap<>();
    private final Map<Integer, Process> processes = new LinkedHashMap<>();
    private final List<Integer> bootstrapIds = new ArrayList<>();
    /** Extra controller properties (e.g. longer election timeouts for the mixed quorum). */
    private final Map<String, String> extra;
    /** More controller properties per node id (e.g. an SSL controller listener); they win. */
    java.util.function.Function<Integer, Map<String, String>> extraConfig = id -> Map.of();
    /** The server command for a config file (the perf driver runs Kafka's shipped JVM options instead). */
    java.util.function.Function<String, List<String>> serverCommand = config -> Main.javaServer("kafka.Kafka", config);

    KafkaQuorum(Path dir) {
        this(dir, Map.of());
    }

    KafkaQuorum(Path dir, Map<String, String> extra) {
        this.dir = dir;
        this.extra = extra;
    }

    /** The {@code --initial-controllers} value the initial voters were formatted with. */
    String initialControllers() {
        return bootstrapIds.stream()
            .map(id -> id + "@127.0.0.1:" + ports.get(id) + ":" + directoryIds.get(id))
            .collect(Collectors.joining(","));
    }

    /** kill -9 of controller {@code id}. */
    void kill(int id) throws InterruptedException {
        Procs.kill(processes.remove(id));
    }

    /** Starts a killed controller again on its directory and port. */
    void restart(int id) throws Exception {
        start(id);
    }

    /**
     * Starts a killed controller again on its directory on a new free port: its properties file names the new
     * listener, its log still lists the old endpoint. Returns the new port.
     */
    int restartOnNewPort(int id) throws Exception {
        ports.put(id, freePort());
        writeConfig(id);
        start(id);
        return ports.get(id);
    }

    boolean running(int id) {
        Process p = processes.get(id);
        return p != null && p.isAlive();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    String address(int id) {
        return "127.0.0.1:" + ports.get(id);
    }

    Path config(int id) {
        return dir.resolve("controller-" + id + ".properties");
    }

    Path logDir(int id) {
        return dir.resolve("node-" + id);
    }

    Path log(int id) {
        return dir.resolve("controller-" + id + ".log");
    }

    /** Formats the initial voters {@code ids} and starts them; returns once each listens. */
    void startInitial(int... ids) throws Exception {
        formatInitial(ids);
        for (int id : ids) start(id);
    }

    /** Formats the initial voters {@code ids} ({@code --initial-controllers}) without starting them. */
    void formatInitial(int... ids) throws Exception {
        Files.createDirectories(dir);
        for (int id : ids) {
            ports.put(id, freePort());
            directoryIds.put(id, Uuid.randomUuid());
            bootstrapIds.add(id);
        }
        String initial = bootstrapIds.stream()
            .map(id -> id + "@127.0.0.1:" + ports.get(id) + ":" + directoryIds.get(id))
            .collect(Collectors.joining(","));
        for (int id : ids) {
            writeConfig(id);
            format(id, "--initial-controllers", initial);
        }
    }

    /**
     * Formats controllers {@code ids} (ports reserved) for the static voters {@link #staticVoters}, as
     * {@code kafka-storage format --config} does with {@code controller.quorum.voters} set (kraft.version 0), without
     * starting them.
     */
    void formatStatic(int... ids) throws Exception {
        Files.createDirectories(dir);
        for (int id : ids) {
            writeConfig(id);
            format(id);
            directoryIds.put(id, readDirectoryId(logDir(id)));
        }
    }

    /** Formats (no initial controllers) and starts a controller that joins as an observer. */
    void startObserver(int id) throws Exception {
        formatObserver(id);
        start(id);
    }

    /** {@link #startObserver} without the start ({@link #launch} starts it): a new port and directory id. */
    void formatObserver(int id) throws Exception {
        Files.createDirectories(dir);
        ports.put(id, freePort());
        writeConfig(id);
        format(id, "--no-initial-controllers");
        directoryIds.put(id, readDirectoryId(logDir(id)));
    }

    /** Picks controller {@code id}'s port now (e.g. to name it in an initial voter set) unless it has one. */
    int reservePort(int id) throws IOException {
        if (!ports.containsKey(id)) ports.put(id, freePort());
        return ports.get(id);
    }

    /**
     * Starts controller {@code id} on a directory someone else formatted at {@link #logDir} (e.g. {@code kraft
     * format}), with {@link #bootstrapServers} (which must be set) as {@code controller.quorum.bootstrap.servers};
     * returns once it listens.
     */
    void startPreformatted(int id) throws Exception {
        reservePort(id);
        writeConfig(id);
        directoryIds.put(id, readDirectoryId(logDir(id)));
        start(id);
    }

    private void writeConfig(int id) throws IOException {
        writeConfig(id, ports.get(id), logDir(id), config(id));
    }

    /**
     * Writes to {@code path} the properties this harness gives a Kafka controller {@code id} listening on
     * {@code port} with {@code logDir} ({@code Properties.store}: escaped ':' and '=', a comment header).
     */
    void writeConfig(int id, int port, Path logDir, Path path) throws IOException {
        Properties p = new Properties();
        p.setProperty("process.roles", "controller");
        p.setProperty("node.id", Integer.toString(id));
        p.setProperty("controller.listener.names", "CONTROLLER");
        p.setProperty("listeners", "CONTROLLER://127.0.0.1:" + port);
        p.setProperty("listener.security.protocol.map", "CONTROLLER:PLAINTEXT");
        if (staticVoters != null) {
            p.setProperty("controller.quorum.voters", staticVoters);
        } else {
            p.setProperty("controller.quorum.bootstrap.servers", bootstrapServers != null ? bootstrapServers
                : bootstrapIds.stream().map(this::address).collect(Collectors.joining(",")));
        }
        p.setProperty("log.dirs", logDir.toString());
        // No NoOpRecords: an idle quorum keeps its high watermark, so two tools see the same values.
        p.setProperty("metadata.max.idle.interval.ms", "0");
        extra.forEach(p::setProperty);
        extraConfig.apply(id).forEach(p::setProperty);
        Files.createDirectories(path.getParent());
        try (var out = Files.newBufferedWriter(path)) {
            p.store(out, "Apache Kafka controller " + id + " (kraft interop harness)");
        }
    }

    private void format(int id, String... mode) throws Exception {
        List<String> cmd = Main.javaController("kafka.tools.StorageTool", "format", "--cluster-id", clusterId,
            "--config", config(id).toString());
        cmd.addAll(List.of(mode));
        Procs.Result r = Procs.run(cmd, 120);
        if (r.code() != 0) throw new IOException("kafka-storage format of controller " + id + " failed: " + r);
    }

    private void start(int id) throws Exception {
        Procs.waitForPort(launch(id), ports.get(id), 60_000, log(id));
    }

    /** Starts controller {@code id} (formatted) without waiting for it to listen. */
    Process launch(int id) throws IOException {
        Process p = Procs.start(serverCommand.apply(config(id).toString()), log(id));
        processes.put(id, p);
        return p;
    }

    /** The process id of running controller {@code id}. */
    long pid(int id) {
        return processes.get(id).pid();
    }

    static Uuid readDirectoryId(Path logDir) throws IOException {
        Properties p = new Properties();
        try (var in = Files.newBufferedReader(logDir.resolve("meta.properties"))) {
            p.load(in);
        }
        return Uuid.fromString(p.getProperty("directory.id"));
    }

    /** The segment file of the metadata log of controller {@code id}. */
    Path segment(int id) {
        return logDir(id).resolve("__cluster_metadata-0").resolve("00000000000000000000.log");
    }

    @Override
    public void close() throws InterruptedException {
        for (Process p : processes.values()) Procs.stop(p);
    }

    /** Whether every started controller is still running (a crash makes the logs worth keeping). */
    boolean allAlive() {
        return processes.values().stream().allMatch(Process::isAlive);
    }
}
