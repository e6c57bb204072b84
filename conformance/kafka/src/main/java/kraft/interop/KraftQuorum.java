package kraft.interop;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.stream.Collectors;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.kafka.common.Uuid;

/** Our nodes: {@code kraft cluster --nodes N} (one process), plus {@code kraft format} + {@code kraft node} joiners. */
final class KraftQuorum implements AutoCloseable {
    static final String CLUSTER_ID = "kraft-interop-cluster";
    final Path dir;
    final String kraft;
    final Map<Integer, Integer> ports = new LinkedHashMap<>();
    private final List<Process> processes = new ArrayList<>();
    /** Processes of nodes started one by one ({@link #startJoiner}), by id. */
    private final Map<Integer, Process> nodes = new LinkedHashMap<>();
    private final Map<Integer, List<String>> nodeCommands = new LinkedHashMap<>();
    private int voters;

    KraftQuorum(Path dir, String kraft) {
        this.dir = dir;
        this.kraft = kraft;
    }

    String address(int id) {
        return "127.0.0.1:" + ports.get(id);
    }

    Path dataDir(int id) {
        return dir.resolve("node-" + id);
    }

    Path segment(int id) {
        return dataDir(id).resolve("__cluster_metadata-0").resolve("00000000000000000000.log");
    }

    Path log() {
        return dir.resolve("cluster.log");
    }

    Uuid directoryId(int id) throws IOException {
        return KafkaQuorum.readDirectoryId(dataDir(id));
    }

    /**
     * Kafka's {@code kafka-metadata-quorum add-controller}, sent to {@code bootstrap} with a controller config that
     * names our node {@code id}, adds it: exit 0 (check {@code what}) and Kafka's output line naming its directory id
     * and endpoint.
     */
    void addWithKafkaTool(Report report, int id, String bootstrap, String what) throws Exception {
        Uuid directory = directoryId(id);
        Path config = dir.resolve("controller-" + id + ".properties");
        java.nio.file.Files.writeString(config, String.join("\n", "process.roles=controller", "node.id=" + id,
            "controller.listener.names=CONTROLLER", "listeners=CONTROLLER://" + address(id),
            "metadata.log.dir=" + dataDir(id), ""));
        Procs.Result add = Tools.kafka("--bootstrap-controller", bootstrap, "--command-config", config.toString(),
            "add-controller");
        report.check(what + " (exit 0)", add.code() == 0, add.toString());
        report.equal("add-controller output", "Added controller " + id + " with directory id " + directory
            + " and endpoints: CONTROLLER://" + address(id), add.out().trim());
    }

    /** Starts {@code kraft cluster --nodes n} on consecutive free loopback ports. */
    void startCluster(int n) throws Exception {
        startCluster(n, false);
    }

    /** With {@code tls}: {@code kraft cluster --tls} (mutual TLS, certificates in {@code dir/tls}). */
    void startCluster(int n, boolean tls) throws Exception {
        voters = n;
        int base = consecutiveFreePorts(n + 1);
        for (int id = 1; id <= n; id++) ports.put(id, base + id - 1);
        List<String> cmd = new ArrayList<>(List.of(kraft, "cluster", "--nodes", Integer.toString(n), "--dir",
            dir.toString(), "--base-port", Integer.toString(base), "--cluster-id", CLUSTER_ID));
        if (tls) cmd.add("--tls");
        Process p = Procs.start(cmd, log());
        processes.add(p);
        for (int id = 1; id <= n; id++) Procs.waitForPort(p, ports.get(id), 30_000, log());
    }

    /** Formats node {@code id} with the cluster's voters as its bootstrap set and runs it (an observer). */
    void startObserver(int id) throws Exception {
        ports.put(id, ports.get(voters) + (id - voters));
        StringBuilder initial = new StringBuilder();
        for (int v = 1; v <= voters; v++) {
            if (v > 1) initial.append(',');
            initial.append(v).append('@').append(address(v)).append(':').append(directoryId(v));
        }
        Procs.Result f = Procs.run(List.of(kraft, "format", "--data-dir", dataDir(id).toString(), "--cluster-id",
            CLUSTER_ID, "--node-id", Integer.toString(id), "--initial-controllers", initial.toString()), 30);
        if (f.code() != 0) throw new IOException("kraft format of node " + id + " failed: " + f);
        Path log = dir.resolve("node-" + id + ".log");
        Process p = Procs.start(List.of(kraft, "node", "--data-dir", dataDir(id).toString(), "--listener",
            address(id)), log);
        processes.add(p);
        Procs.waitForPort(p, ports.get(id), 30_000, log);
    }

    /**
     * Formats node {@code id} for another quorum ({@code clusterId}, {@code initialControllers} as Kafka's
     * storage tool was given them) and runs it with {@code nodeArgs} (e.g. timeouts): it starts as an observer.
     */
    void startJoiner(int id, String clusterId, String initialControllers, String... nodeArgs) throws Exception {
        formatJoiner(id, clusterId, initialControllers, nodeArgs);
        restart(id);
    }

    /** {@link #startJoiner} without the start: {@link #launch} or {@link #restart} starts it. */
    void formatJoiner(int id, String clusterId, String initialControllers, String... nodeArgs) throws Exception {
        reservePort(id);
        Procs.Result f = Procs.run(List.of(kraft, "format", "--data-dir", dataDir(id).toString(), "--cluster-id",
            clusterId, "--node-id", Integer.toString(id), "--initial-controllers", initialControllers), 30);
        if (f.code() != 0) throw new IOException("kraft format of node " + id + " failed: " + f);
        List<String> cmd = new ArrayList<>(List.of(kraft, "node", "--data-dir", dataDir(id).toString(), "--listener",
            address(id)));
        cmd.addAll(List.of(nodeArgs));
        nodeCommands.put(id, cmd);
    }

    /**
     * As {@link #startJoiner}, but the data directory is formatted by Kafka's own storage tool
     * ({@code kafka-storage format --initial-controllers}, Kafka's meta.properties and bootstrap snapshot), as a
     * Kafka controller joining that quorum would be.
     */
    void startJoinerFormattedByKafka(int id, String clusterId, String initialControllers, String... nodeArgs)
            throws Exception {
        formatJoinerByKafka(id, clusterId, initialControllers, nodeArgs);
        restart(id);
    }

    /** {@link #startJoinerFormattedByKafka} without the start: {@link #launch} or {@link #restart} starts it. */
    void formatJoinerByKafka(int id, String clusterId, String initialControllers, String... nodeArgs)
            throws Exception {
        reservePort(id);
        Path config = dir.resolve("kafka-format-" + id + ".properties");
        String bootstrap = java.util.Arrays.stream(initialControllers.split(","))
            .map(v -> v.substring(v.indexOf('@') + 1, v.lastIndexOf(':'))).collect(Collectors.joining(","));
        java.nio.file.Files.createDirectories(dir);
        java.nio.file.Files.writeString(config, String.join("\n", "process.roles=controller", "node.id=" + id,
            "controller.listener.names=CONTROLLER", "listeners=CONTROLLER://" + address(id),
            "controller.quorum.bootstrap.servers=" + bootstrap, "log.dirs=" + dataDir(id),
            "metadata.log.dir=" + dataDir(id), ""));
        Procs.Result f = Procs.run(Main.javaController("kafka.tools.StorageTool", "format", "--cluster-id", clusterId,
            "--config", config.toString(), "--initial-controllers", initialControllers), 120);
        if (f.code() != 0) throw new IOException("kafka-storage format of kraft node " + id + " failed: " + f);
        List<String> cmd = new ArrayList<>(List.of(kraft, "node", "--data-dir", dataDir(id).toString(), "--listener",
            address(id)));
        cmd.addAll(List.of(nodeArgs));
        nodeCommands.put(id, cmd);
    }

    /**
     * As {@link #startJoinerFormattedByKafka}, with one file for both: Kafka's storage tool formats the directory
     * with {@code --config kafkaConfig} (a Kafka controller's properties naming this node's port and directory)
     * and the node runs as {@code kraft node --config kafkaConfig} plus {@code nodeArgs}.
     */
    void startFromKafkaConfig(int id, Path kafkaConfig, String clusterId, String initialControllers,
            String... nodeArgs) throws Exception {
        reservePort(id);
        Procs.Result f = Procs.run(Main.javaController("kafka.tools.StorageTool", "format", "--cluster-id", clusterId,
            "--config", kafkaConfig.toString(), "--initial-controllers", initialControllers), 120);
        if (f.code() != 0) throw new IOException("kafka-storage format of kraft node " + id + " failed: " + f);
        List<String> cmd = new ArrayList<>(List.of(kraft, "node", "--config", kafkaConfig.toString()));
        cmd.addAll(List.of(nodeArgs));
        nodeCommands.put(id, cmd);
        restart(id);
    }

    /**
     * Formats node {@code id} with {@code kraft format --config config --cluster-id clusterId} plus
     * {@code formatArgs} (a Kafka controller's properties file) and sets its command to {@code kraft node --config
     * config} plus {@code nodeArgs}, without starting it ({@link #restart} starts it).
     */
    void formatFromConfig(int id, Path config, String clusterId, List<String> formatArgs, String... nodeArgs)
            throws Exception {
        reservePort(id);
        List<String> format = new ArrayList<>(List.of(kraft, "format", "--config", config.toString(), "--cluster-id",
            clusterId));
        format.addAll(formatArgs);
        Procs.Result f = Procs.run(format, 30);
        if (f.code() != 0) throw new IOException("kraft format --config of node " + id + " failed: " + f);
        List<String> cmd = new ArrayList<>(List.of(kraft, "node", "--config", config.toString()));
        cmd.addAll(List.of(nodeArgs));
        nodeCommands.put(id, cmd);
    }

    /**
     * Node {@code id} on a directory Kafka's storage tool formatted with {@code --no-initial-controllers}
     * (meta.properties and a bootstrap snapshot with KRaftVersion 1 and no voters), started with
     * {@code --bootstrap-servers bootstrapServers} and {@code nodeArgs}: an observer that finds the quorum through
     * them and learns the voters from the replicated VotersRecord.
     */
    void startNoInitialControllers(int id, String clusterId, String bootstrapServers, String... nodeArgs)
            throws Exception {
        reservePort(id);
        Path config = dir.resolve("kafka-format-" + id + ".properties");
        java.nio.file.Files.createDirectories(dir);
        java.nio.file.Files.writeString(config, String.join("\n", "process.roles=controller", "node.id=" + id,
            "controller.listener.names=CONTROLLER", "listeners=CONTROLLER://" + address(id),
            "controller.quorum.bootstrap.servers=" + bootstrapServers, "log.dirs=" + dataDir(id),
            "metadata.log.dir=" + dataDir(id), ""));
        Procs.Result f = Procs.run(Main.javaController("kafka.tools.StorageTool", "format", "--cluster-id", clusterId,
            "--config", config.toString(), "--no-initial-controllers"), 120);
        if (f.code() != 0) throw new IOException("kafka-storage format of kraft node " + id + " failed: " + f);
        List<String> cmd = new ArrayList<>(List.of(kraft, "node", "--data-dir", dataDir(id).toString(), "--listener",
            address(id), "--bootstrap-servers", bootstrapServers));
        cmd.addAll(List.of(nodeArgs));
        nodeCommands.put(id, cmd);
        restart(id);
    }

    /**
     * Formats nodes {@code ids} as the initial voters of {@code clusterId} ({@code kraft format
     * --initial-controllers}, fresh ports and directory ids) and runs each as its own {@code kraft node} process
     * with {@code nodeArgs.apply(id)} (so one can be killed); returns the {@code --initial-controllers} value.
     */
    String startInitialNodes(String clusterId, java.util.function.Function<Integer, List<String>> nodeArgs,
            int... ids) throws Exception {
        for (int id : ids) ports.put(id, KafkaQuorum.freePort());
        String initial = java.util.Arrays.stream(ids).mapToObj(id -> id + "@" + address(id) + ":" + Uuid.randomUuid())
            .collect(Collectors.joining(","));
        for (int id : ids) {
            Procs.Result f = Procs.run(List.of(kraft, "format", "--data-dir", dataDir(id).toString(), "--cluster-id",
                clusterId, "--node-id", Integer.toString(id), "--initial-controllers", initial), 30);
            if (f.code() != 0) throw new IOException("kraft format of node " + id + " failed: " + f);
            List<String> cmd = new ArrayList<>(List.of(kraft, "node", "--data-dir", dataDir(id).toString(),
                "--listener", address(id)));
            cmd.addAll(nodeArgs.apply(id));
            nodeCommands.put(id, cmd);
        }
        for (int id : ids) restart(id);
        return initial;
    }

    /** Picks node {@code id}'s port now (e.g. to name it in an initial voter set) unless it has one. */
    int reservePort(int id) throws IOException {
        if (!ports.containsKey(id)) ports.put(id, KafkaQuorum.freePort());
        return ports.get(id);
    }

    /** The process id of node {@code id} (started with {@link #startJoiner}). */
    long pid(int id) {
        return nodes.get(id).pid();
    }

    Path nodeLog(int id) {
        return dir.resolve("node-" + id + ".log");
    }

    /** kill -9 of a node started with {@link #startJoiner}. */
    void kill(int id) throws InterruptedException {
        Procs.kill(nodes.remove(id));
    }

    /** (Re)starts a node started with {@link #startJoiner} on its data directory. */
    void restart(int id) throws Exception {
        Procs.waitForPort(launch(id), ports.get(id), 30_000, nodeLog(id));
    }

    /**
     * Restarts a killed node on its data directory on a new free port (its {@code --listener} changed, its log
     * still lists the old endpoint). Returns the new port.
     */
    int restartOnNewPort(int id) throws Exception {
        int port = KafkaQuorum.freePort();
        ports.put(id, port);
        List<String> cmd = new ArrayList<>(nodeCommands.get(id));
        int at = cmd.indexOf("--listener");
        if (at < 0) throw new IllegalStateException("node " + id + " was not started with --listener: " + cmd);
        cmd.set(at + 1, address(id));
        nodeCommands.put(id, cmd);
        restart(id);
        return port;
    }

    /** Starts a formatted node without waiting for it to listen (e.g. to kill it early in a download). */
    Process launch(int id) throws IOException {
        Process p = Procs.start(nodeCommands.get(id), nodeLog(id));
        nodes.put(id, p);
        return p;
    }

    private static int consecutiveFreePorts(int count) throws IOException {
        for (int attempt = 0; attempt < 50; attempt++) {
            int base = ThreadLocalRandom.current().nextInt(20_000, 40_000);
            boolean free = true;
            for (int i = 0; i < count && free; i++) {
                try (ServerSocket s = new ServerSocket(base + i)) {
                    s.setReuseAddress(true);
                } catch (IOException e) {
                    free = false;
                }
            }
            if (free) return base;
        }
        throw new IOException("no " + count + " consecutive free ports");
    }

    boolean running(int id) {
        Process p = nodes.get(id);
        return p != null && p.isAlive();
    }

    boolean allAlive() {
        return processes.stream().allMatch(Process::isAlive) && nodes.values().stream().allMatch(Process::isAlive);
    }

    @Override
    public void close() throws InterruptedException {
        for (Process p : processes) Procs.stop(p);
        for (Process p : nodes.values()) Procs.stop(p);
    }
}
