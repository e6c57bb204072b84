package kraft.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.Uuid;

/**
 * Apache Kafka servers of any role ({@code process.roles} broker, controller or both) from properties the scenario
 * spells out, formatted by Kafka's storage tool: for clusters {@link KafkaQuorum} (controllers only) does not
 * describe, such as combined mode, brokers and SASL listeners.
 */
final class KafkaServers implements AutoCloseable {
    final Path dir;
    String clusterId = Uuid.randomUuid().toString();
    private final Map<Integer, Process> processes = new LinkedHashMap<>();

    KafkaServers(Path dir) {
        this.dir = dir;
    }

    Path config(int id) {
        return dir.resolve("server-" + id + ".properties");
    }

    Path logDir(int id) {
        return dir.resolve("node-" + id);
    }

    Path log(int id) {
        return dir.resolve("server-" + id + ".log");
    }

    /** Writes server {@code id}'s properties (plus {@code log.dirs} and an idle quorum that keeps its HW). */
    void write(int id, Map<String, String> props) throws IOException {
        Properties p = new Properties();
        p.setProperty("node.id", Integer.toString(id));
        p.setProperty("log.dirs", logDir(id).toString());
        p.setProperty("metadata.max.idle.interval.ms", "0");
        props.forEach(p::setProperty);
        Files.createDirectories(dir);
        try (var out = Files.newBufferedWriter(config(id))) {
            p.store(out, "Apache Kafka server " + id + " (kraft interop harness)");
        }
    }

    /** {@code kafka-storage format --cluster-id C --config F} plus {@code mode} (e.g. --add-scram ...). */
    void format(int id, String... mode) throws Exception {
        List<String> cmd = Main.javaController("kafka.tools.StorageTool", "format", "--cluster-id", clusterId,
            "--config", config(id).toString());
        cmd.addAll(List.of(mode));
        Procs.Result r = Procs.run(cmd, 120);
        if (r.code() != 0) throw new IOException("kafka-storage format of server " + id + " failed: " + r);
    }

    /** Starts server {@code id} without waiting. */
    void launch(int id) throws IOException {
        processes.put(id, Procs.start(Main.javaServer("kafka.Kafka", config(id).toString()), log(id)));
    }

    /** Waits until server {@code id} listens on {@code port}. */
    void awaitPort(int id, int port) throws Exception {
        Procs.waitForPort(processes.get(id), port, 90_000, log(id));
    }

    Uuid directoryId(int id) throws IOException {
        return KafkaQuorum.readDirectoryId(logDir(id));
    }

    boolean allAlive() {
        return processes.values().stream().allMatch(Process::isAlive);
    }

    static List<String> list(String... parts) {
        return new ArrayList<>(List.of(parts));
    }

    @Override
    public void close() throws InterruptedException {
        for (Process p : processes.values()) Procs.stop(p);
    }
}
