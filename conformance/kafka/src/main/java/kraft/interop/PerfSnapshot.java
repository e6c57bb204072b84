package kraft.interop;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.DescribeQuorumResponseData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.requests.IncrementalAlterConfigsRequest;

/**
 * Row 5 of {@link PerfMain}: a new voter catching up from a leader's snapshot of at least {@link #SNAPSHOT_BYTES}.
 *
 * <p>Both leaders hold the same kind of content, Kafka metadata records (ConfigRecords of dynamic broker configs,
 * {@link #fill}), written through {@code bootstrap.controllers} to an Apache Kafka controller, the only writer of
 * metadata records: a {@code kraft} quorum replicates metadata, it does not produce it. The Kafka quorum: three
 * controllers that snapshot once {@link #SNAPSHOT_TRIGGER} bytes of records are committed. The {@code kraft}
 * quorum: a Kafka controller (node 10) filled the same way is left by its voters the way an operator replaces a
 * Kafka quorum by {@code kraft} nodes: three {@code kraft node}s join it (each fetches its snapshot with
 * FetchSnapshot), are added with AddRaftVoter, node 10 removes itself with RemoveRaftVoter and stops; the
 * {@code kraft} voters then lead and serve that snapshot.
 *
 * <p>Each sample, alternating kraft and Kafka: node 4 is formatted without initial controllers (not timed), then
 * launched; its first Fetch (offset 0) is answered with the leader's SnapshotId, it fetches the snapshot in chunks
 * (FetchSnapshot, 1 MiB on both: Kafka's default {@code controller.quorum.fetch.snapshot.max.bytes}), installs it
 * and fetches the log after it. "Caught up": the leader's DescribeQuorum lists node 4 (this directory id) as an
 * observer at the leader's end offset. Then AddRaftVoter v0 of node 4, answered at commit. Then RemoveRaftVoter,
 * kill, and its directory is deleted before the next sample.
 */
final class PerfSnapshot {
    static final long MIB = 1 << 20;
    /** The row's size: the leader's latest snapshot file is at least this large. */
    static final long SNAPSHOT_BYTES = 64 * MIB;
    /** {@code metadata.log.max.record.bytes.between.snapshots} of the filled Kafka controllers: one snapshot. */
    static final long SNAPSHOT_TRIGGER = 66 * MIB;
    static final int JOINER = 4;
    static final int SEED = 10;

    private final Path work;
    private final String kraftBinary;
    private final int electionTimeoutMs;
    private final int fetchTimeoutMs;
    private final Map<String, String> kafkaProps;

    PerfSnapshot(Path work, String kraftBinary, int electionTimeoutMs, int fetchTimeoutMs) {
        this.work = work;
        this.kraftBinary = kraftBinary;
        this.electionTimeoutMs = electionTimeoutMs;
        this.fetchTimeoutMs = fetchTimeoutMs;
        Map<String, String> p = new LinkedHashMap<>(PerfQuorum.Kafka.timeouts(electionTimeoutMs, fetchTimeoutMs));
        p.put("metadata.log.max.record.bytes.between.snapshots", Long.toString(SNAPSHOT_TRIGGER));
        this.kafkaProps = p;
    }

    /** Per implementation: {launch → caught up ms, AddRaftVoter ms, launch → committed ms} per sample. */
    record Samples(List<double[]> kraft, List<double[]> kafka, long kraftSnapshot, long kafkaSnapshot) {}

    Samples run(int n) throws Exception {
        KafkaQuorum kafka = PerfQuorum.Kafka.quorum(work.resolve("kafka-snap"), kafkaProps);
        KafkaQuorum seed = PerfQuorum.Kafka.quorum(work.resolve("seed"), kafkaProps);
        Kraft ours = new Kraft(work.resolve("kraft-snap"));
        try (kafka; seed; ours) {
            // The Kafka quorum, filled.
            kafka.startInitial(1, 2, 3);
            Side kSide = new Side("Apache Kafka", kafka.clusterId, kafka::address, List.of(1, 2, 3));
            int kLeader = kSide.leader(-1, 120_000).leaderId();
            fill(kSide, () -> latestSize(kafka.logDir(kSide.leader(-1, 30_000).leaderId())));
            long kafkaSnapshot = latestSize(kafka.logDir(kSide.leader(-1, 30_000).leaderId()));
            PerfMain.log("Kafka quorum filled: leader " + kLeader + " holds a snapshot of " + kafkaSnapshot + " bytes");

            // The kraft quorum: joins a filled Kafka controller, which then leaves.
            seed.startInitial(SEED);
            Side seedSide = new Side("seed", seed.clusterId, seed::address, List.of(SEED));
            seedSide.leader(-1, 120_000);
            fill(seedSide, () -> latestSize(seed.logDir(SEED)));
            ours.clusterId = seed.clusterId;
            for (int id : PerfQuorum.VOTERS) {
                ours.format(id, List.of("--initial-controllers", seed.initialControllers()));
                ours.launch(id, List.of());
                Procs.waitForPort(ours.processes.get(id), ours.ports.get(id), 30_000, ours.log(id));
                seedSide.caughtUp(id, ours.directoryId(id), 300_000);
                seedSide.change(true, id, ours.directoryId(id), ours.ports.get(id));
            }
            seedSide.change(false, SEED, seed.directoryIds.get(SEED), 0);
            Side kraftSide = new Side("kraft", ours.clusterId, ours::address, List.of(1, 2, 3));
            DescribeQuorumResponseData.PartitionData kraftLeader = kraftSide.leader(-1, 60_000);
            seed.kill(SEED);
            long kraftSnapshot = latestSize(ours.dataDir(kraftLeader.leaderId()));
            PerfMain.log("kraft quorum formed from the seed: leader " + kraftLeader.leaderId()
                + " holds a snapshot of " + kraftSnapshot + " bytes");
            if (kraftSnapshot < SNAPSHOT_BYTES || kafkaSnapshot < SNAPSHOT_BYTES) {
                throw new IOException("snapshots below " + SNAPSHOT_BYTES + " bytes: kraft " + kraftSnapshot
                    + ", Kafka " + kafkaSnapshot);
            }

            List<double[]> kraftSamples = new ArrayList<>(), kafkaSamples = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                kraftSamples.add(sample(kraftSide, () -> {
                    ours.format(JOINER, List.of("--no-initial-controllers"));
                    return ours.directoryId(JOINER);
                }, () -> ours.launch(JOINER, List.of("--bootstrap-servers", ours.address(1) + ","
                    + ours.address(2) + "," + ours.address(3))), () -> ours.ports.get(JOINER),
                    () -> latestSize(ours.dataDir(JOINER)), () -> {
                    ours.kill(JOINER);
                    Main.deleteTree(ours.dataDir(JOINER));
                }));
                PerfMain.log("kraft: snapshot catch-up " + (i + 1) + "/" + n + ": " + fmt(kraftSamples.get(i)));
                kafkaSamples.add(sample(kSide, () -> {
                    kafka.formatObserver(JOINER);
                    return kafka.directoryIds.get(JOINER);
                }, () -> kafka.launch(JOINER), () -> kafka.ports.get(JOINER),
                    () -> latestSize(kafka.logDir(JOINER)), () -> {
                    kafka.kill(JOINER);
                    Main.deleteTree(kafka.logDir(JOINER));
                }));
                PerfMain.log("Kafka: snapshot catch-up " + (i + 1) + "/" + n + ": " + fmt(kafkaSamples.get(i)));
            }
            return new Samples(kraftSamples, kafkaSamples, kraftSnapshot, kafkaSnapshot);
        }
    }

    private static String fmt(double[] s) {
        return String.format("caught up %.0f ms, AddRaftVoter %.1f ms, total %.0f ms", s[0], s[1], s[2]);
    }

    interface Step<T> {
        T get() throws Exception;
    }

    interface Action {
        void run() throws Exception;
    }

    /** One joiner: format (not timed), launch, caught up, AddRaftVoter; then removed, killed, deleted. */
    private static double[] sample(Side side, Step<Uuid> format, Action launch, Step<Integer> port, Step<Long> held,
            Action cleanup) throws Exception {
        Uuid dirId = format.get();
        long t0 = System.nanoTime();
        launch.run();
        side.caughtUp(JOINER, dirId, 300_000);
        long t1 = System.nanoTime();
        if (held.get() < SNAPSHOT_BYTES) {
            throw new IOException(side.name + ": node " + JOINER + " caught up without holding a snapshot of "
                + SNAPSHOT_BYTES + " bytes (its latest: " + held.get() + ")");
        }
        double add = side.change(true, JOINER, dirId, port.get());
        long t2 = System.nanoTime();
        side.change(false, JOINER, dirId, 0);
        cleanup.run();
        return new double[] {(t1 - t0) / 1e6, add, (t2 - t0) / 1e6};
    }

    /** The size of the latest snapshot file in a node's data directory (0: none). */
    static long latestSize(Path dataDir) throws IOException {
        List<SnapshotFiles.Snapshot> s = SnapshotFiles.snapshots(dataDir.resolve("__cluster_metadata-0"));
        return s.isEmpty() ? 0 : Files.size(s.get(s.size() - 1).path());
    }

    /**
     * Writes client-metrics subscriptions (KIP-714: one ConfigRecord per resource, its {@code metrics} list a
     * 7,000-character metric-name prefix) until {@code latest} reports a snapshot of at least {@link
     * #SNAPSHOT_BYTES}: per request 150 resources, about 1 MiB per committed batch, as IncrementalAlterConfigs v1 to
     * the active controller. Why these: broker configs need registered brokers (a controller-only quorum has
     * none), and Kafka's snapshot writer ({@code RaftSnapshotWriter}) cuts batches by record count (1024), so a
     * record above 8 KiB makes a snapshot batch over its 8 MiB limit and the snapshot fails
     * (RecordBatchTooLargeException).
     */
    static void fill(Side side, Step<Long> latest) throws Exception {
        String value = "m".repeat(7_000);
        long t0 = System.currentTimeMillis();
        int requests = (int) (SNAPSHOT_TRIGGER / MIB) + 2;
        int perRequest = 150;
        for (int i = 0; latest.get() < SNAPSHOT_BYTES; i++) {
            if (i > requests + 240) throw new IOException("no snapshot of " + SNAPSHOT_BYTES + " bytes after 2 min");
            var resources = new IncrementalAlterConfigsRequestData.AlterConfigsResourceCollection();
            // After the bulk, small commits until the snapshot is written: Kafka's generator checks its triggers
            // when it publishes a commit and skips the bytes trigger while its event queue is busy.
            for (int k = 0; k < (i < requests ? perRequest : 1); k++) {
                var configs = new IncrementalAlterConfigsRequestData.AlterableConfigCollection();
                configs.add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName("metrics")
                    .setConfigOperation(AlterConfigOp.OpType.SET.id()).setValue(i < requests ? value : "m" + i));
                resources.add(new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                    .setResourceType(ConfigResource.Type.CLIENT_METRICS.id())
                    .setResourceName("perf-fill-" + i + "-" + k).setConfigs(configs));
            }
            var data = new IncrementalAlterConfigsRequestData().setResources(resources);
            short version = 1;
            DescribeQuorumResponseData.PartitionData p = side.leader(-1, 30_000);
            try (PerfClient c = new PerfClient(side.address.apply(p.leaderId()), 30_000)) {
                ByteBuffer body = c.call(ApiKeys.INCREMENTAL_ALTER_CONFIGS, version,
                    new IncrementalAlterConfigsRequest.Builder(data).build(version));
                var r = new IncrementalAlterConfigsResponseData(new ByteBufferAccessor(body), version);
                for (var res : r.responses()) {
                    if (res.errorCode() != 0) {
                        throw new IOException(side.name + ": IncrementalAlterConfigs: error " + res.errorCode() + " "
                            + res.errorMessage());
                    }
                }
            }
            if (i >= requests) Thread.sleep(500);
        }
        PerfMain.log(side.name + ": filled in " + (System.currentTimeMillis() - t0) + " ms");
    }

    /** A quorum seen through DescribeQuorum v2 at its voters. */
    static final class Side {
        final String name;
        final String clusterId;
        final java.util.function.IntFunction<String> address;
        final List<Integer> voters;

        Side(String name, String clusterId, java.util.function.IntFunction<String> address, List<Integer> voters) {
            this.name = name;
            this.clusterId = clusterId;
            this.address = address;
            this.voters = voters;
        }

        /** The answer of a voter that leads an epoch above {@code afterEpoch} with a known HW. */
        DescribeQuorumResponseData.PartitionData leader(int afterEpoch, long timeoutMs) throws Exception {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (System.currentTimeMillis() < deadline) {
                for (int id : voters) {
                    try (PerfClient c = new PerfClient(address.apply(id), 1000)) {
                        DescribeQuorumResponseData.PartitionData p = PerfClient.partition(c.describeQuorum());
                        if (p != null && p.leaderId() == id && p.leaderEpoch() > afterEpoch && p.highWatermark() >= 0) {
                            return p;
                        }
                    } catch (IOException e) {
                        // not up or not answering yet
                    }
                }
                Thread.sleep(20);
            }
            throw new IOException(name + ": no leader among " + voters + " in " + timeoutMs + " ms");
        }

        /** Waits until the leader lists {@code id} with {@code dirId} at its end offset, as voter or observer. */
        void caughtUp(int id, Uuid dirId, long timeoutMs) throws Exception {
            long deadline = System.currentTimeMillis() + timeoutMs;
            String last = "";
            while (System.currentTimeMillis() < deadline) {
                DescribeQuorumResponseData.PartitionData p = leader(-1, 30_000);
                Map<Integer, Long> ends = new HashMap<>();
                long end = -1;
                long mine = -2;
                List<DescribeQuorumResponseData.ReplicaState> all = new ArrayList<>(p.currentVoters());
                all.addAll(p.observers());
                for (var r : all) {
                    ends.put(r.replicaId(), r.logEndOffset());
                    if (r.replicaId() == p.leaderId()) end = r.logEndOffset();
                    if (r.replicaId() == id && dirId.equals(r.replicaDirectoryId())) mine = r.logEndOffset();
                }
                if (end >= 0 && mine == end) return;
                last = "leader " + p.leaderId() + " HW " + p.highWatermark() + " ends " + ends;
                Thread.sleep(20);
            }
            throw new IOException(name + ": node " + id + " not caught up in " + timeoutMs + " ms: " + last);
        }

        /** AddRaftVoter (or RemoveRaftVoter) v0 at the leader, retried on errors; ms of the successful call. */
        double change(boolean add, int id, Uuid dirId, int port) throws Exception {
            for (int attempt = 0; attempt < 100; attempt++) {
                DescribeQuorumResponseData.PartitionData p = leader(-1, 30_000);
                try (PerfClient c = new PerfClient(address.apply(p.leaderId()), 35_000)) {
                    long t0 = System.nanoTime();
                    short error = add ? c.addVoter(clusterId, id, dirId, "127.0.0.1", port)
                        : c.removeVoter(clusterId, id, dirId);
                    long t1 = System.nanoTime();
                    if (error == 0) return (t1 - t0) / 1e6;
                    PerfMain.log(name + ": " + (add ? "AddRaftVoter" : "RemoveRaftVoter") + " of " + id + ": error "
                        + error + ", retrying");
                } catch (IOException e) {
                    PerfMain.log(name + ": " + (add ? "AddRaftVoter" : "RemoveRaftVoter") + " of " + id + ": " + e);
                }
                Thread.sleep(200);
            }
            throw new IOException(name + ": " + (add ? "AddRaftVoter" : "RemoveRaftVoter") + " of " + id
                + " kept failing");
        }
    }

    /** {@code kraft node}s by hand: formatted for another quorum or without initial controllers. */
    final class Kraft implements AutoCloseable {
        final Path dir;
        String clusterId;
        final Map<Integer, Integer> ports = new LinkedHashMap<>();
        final Map<Integer, Process> processes = new LinkedHashMap<>();

        Kraft(Path dir) {
            this.dir = dir;
        }

        Path dataDir(int id) {
            return dir.resolve("node-" + id);
        }

        Path log(int id) {
            return dir.resolve("node-" + id + ".log");
        }

        String address(int id) {
            return "127.0.0.1:" + ports.get(id);
        }

        Uuid directoryId(int id) throws IOException {
            return KafkaQuorum.readDirectoryId(dataDir(id));
        }

        void format(int id, List<String> mode) throws Exception {
            Files.createDirectories(dir);
            ports.put(id, KafkaQuorum.freePort());
            List<String> cmd = new ArrayList<>(List.of(kraftBinary, "format", "--data-dir", dataDir(id).toString(),
                "--cluster-id", clusterId, "--node-id", Integer.toString(id)));
            cmd.addAll(mode);
            Procs.Result r = Procs.run(cmd, 60);
            if (r.code() != 0) throw new IOException("kraft format of node " + id + " failed: " + r);
        }

        void launch(int id, List<String> extra) throws IOException {
            List<String> cmd = new ArrayList<>(List.of(kraftBinary, "node", "--data-dir", dataDir(id).toString(),
                "--listener", address(id), "--election-timeout-ms", Integer.toString(electionTimeoutMs),
                "--fetch-timeout-ms", Integer.toString(fetchTimeoutMs)));
            cmd.addAll(extra);
            processes.put(id, Procs.start(cmd, log(id)));
        }

        void kill(int id) throws InterruptedException {
            Procs.kill(processes.remove(id));
        }

        @Override
        public void close() throws InterruptedException {
            for (Process p : processes.values()) Procs.stop(p);
        }

        @Override
        public String toString() {
            return processes.keySet().stream().map(Object::toString).collect(Collectors.joining(","));
        }
    }
}
