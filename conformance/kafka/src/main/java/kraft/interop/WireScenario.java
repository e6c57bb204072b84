package kraft.interop;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.DescribeClusterRequestData;
import org.apache.kafka.common.message.DescribeClusterResponseData;
import org.apache.kafka.common.message.DescribeClusterResponseDataJsonConverter;
import org.apache.kafka.common.message.DescribeQuorumResponseData;
import org.apache.kafka.common.message.DescribeQuorumResponseDataJsonConverter;
import org.apache.kafka.common.message.LeaderChangeMessage;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.ControlRecordUtils;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.DescribeClusterRequest;
import org.apache.kafka.common.requests.DescribeQuorumRequest;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.ResponseHeader;

/**
 * (d) Byte-level agreement, on the quorums left by (b) and (c) (three voters, node 4 an observer on both sides).
 * DescribeQuorum v0–2 and DescribeCluster v1–2 are sent as raw frames to a Kafka controller and to ours: each
 * answer must decode with Kafka's classes with no byte left over and re-encode to the same bytes; our decoder
 * must read Kafka's DescribeQuorum bytes to exactly Kafka's fields; and the two sides' answers must have the
 * same shape (every field but ids, offsets, epochs, timestamps, directory ids and addresses). Record batches:
 * our segment and bootstrap checkpoint parse with Kafka's MemoryRecords / ControlRecordUtils, Kafka's segment
 * with ours, and both readers agree record by record.
 */
final class WireScenario {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Report report;
    private final Tools tools;
    private final Path scratch;
    private int correlation;

    WireScenario(Report report, Tools tools, Path scratch) {
        this.report = report;
        this.tools = tools;
        this.scratch = scratch;
    }

    void run(KafkaQuorum kafka, KraftQuorum ours) throws Exception {
        Files.createDirectories(scratch);
        String kafkaLeader = leaderAddress(kafka.address(1));
        String ourLeader = leaderAddress(ours.address(1));
        for (short v = 0; v <= 2; v++) {
            ByteBuffer kafkaBody = roundTrip(kafkaLeader, ApiKeys.DESCRIBE_QUORUM, v, describeQuorum(v));
            ByteBuffer ourBody = roundTrip(ourLeader, ApiKeys.DESCRIBE_QUORUM, v, describeQuorum(v));
            JsonNode kafkaJson = describeQuorumByKafka("Kafka leader", kafkaBody, v);
            JsonNode ourJson = describeQuorumByKafka("our leader", ourBody, v);
            JsonNode oursOnKafkaBytes = describeQuorumByUs(kafkaBody, v);
            report.equal("DescribeQuorum v" + v + ": our decoder reads Kafka's bytes to Kafka's fields", kafkaJson,
                oursOnKafkaBytes);
            report.equal("DescribeQuorum v" + v + ": same shape from both leaders (values aside)",
                shape(kafkaJson), shape(ourJson));
        }
        for (short v = 1; v <= 2; v++) {
            DescribeClusterRequestData data = new DescribeClusterRequestData().setEndpointType((byte) 2)
                .setIncludeClusterAuthorizedOperations(true);
            AbstractRequest request = new DescribeClusterRequest.Builder(data).build(v);
            JsonNode kafkaJson = describeClusterByKafka("Kafka controller 1",
                roundTrip(kafka.address(1), ApiKeys.DESCRIBE_CLUSTER, v, request), v);
            JsonNode ourJson = describeClusterByKafka("our node 2",
                roundTrip(ours.address(2), ApiKeys.DESCRIBE_CLUSTER, v, request), v);
            // Kafka lists every registered controller, we list the voters and ourselves (a deliberate
            // difference, impl/src/node.rs): the lists are compared by the shape of their entries.
            report.equal("DescribeCluster v" + v + ": same shape and constants (values aside, entries deduplicated)",
                dedupBrokers(shape(kafkaJson)), dedupBrokers(shape(ourJson)));
            report.check("DescribeCluster v" + v + ": the active controller is among the listed controllers, both sides",
                listsController(kafkaJson) && listsController(ourJson), kafkaJson + " / " + ourJson);
            report.equal("DescribeCluster v" + v + ": ClusterAuthorizedOperations without an authorizer",
                kafkaJson.get("clusterAuthorizedOperations"), ourJson.get("clusterAuthorizedOperations"));
        }
        records("our segment (node 1)", ours.segment(1), "records");
        // The bootstrap snapshot both storage tools write: ours read by Kafka, Kafka's by us.
        records("our bootstrap snapshot (node 1, kraft format)", ours.dataDir(1).resolve("__cluster_metadata-0")
            .resolve(BOOTSTRAP_SNAPSHOT), "snapshot");
        records("Kafka's bootstrap snapshot (controller 1, kafka-storage format)", kafka.logDir(1)
            .resolve("__cluster_metadata-0").resolve(BOOTSTRAP_SNAPSHOT), "snapshot");
        records("Kafka's segment (controller 1)", kafka.segment(1), "records");
    }

    // ----- requests --------------------------------------------------------------------------------

    private static AbstractRequest describeQuorum(short v) {
        return new DescribeQuorumRequest.Builder(
            DescribeQuorumRequest.singletonRequest(new TopicPartition("__cluster_metadata", 0))).build(v);
    }

    /** The active controller's address, from DescribeCluster as Kafka's admin client learns it. */
    private String leaderAddress(String bootstrap) throws Exception {
        DescribeClusterRequestData data = new DescribeClusterRequestData().setEndpointType((byte) 2);
        ByteBuffer body = roundTrip(bootstrap, ApiKeys.DESCRIBE_CLUSTER, (short) 1,
            new DescribeClusterRequest.Builder(data).build((short) 1));
        DescribeClusterResponseData r = new DescribeClusterResponseData(new ByteBufferAccessor(body), (short) 1);
        for (DescribeClusterResponseData.DescribeClusterBroker b : r.brokers()) {
            if (b.brokerId() == r.controllerId()) return b.host() + ":" + b.port();
        }
        throw new IllegalStateException(bootstrap + " names no active controller: " + r);
    }

    /** Sends one request frame and returns the response body (header removed). */
    private ByteBuffer roundTrip(String address, ApiKeys api, short version, AbstractRequest request)
            throws IOException {
        int corr = ++correlation;
        ByteBuffer frame = request.serializeWithHeader(new RequestHeader(api, version, "kraft-interop", corr));
        String[] hostPort = address.split(":");
        try (Socket s = new Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
            s.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(frame.remaining());
            out.write(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            int size = in.readInt();
            if (size < 0 || size > (16 << 20)) throw new IOException("response frame size " + size);
            byte[] payload = new byte[size];
            in.readFully(payload);
            ByteBuffer buf = ByteBuffer.wrap(payload);
            ResponseHeader header = ResponseHeader.parse(buf, api.responseHeaderVersion(version));
            if (header.correlationId() != corr) throw new IOException("correlation " + header.correlationId());
            return buf.slice();
        }
    }

    // ----- DescribeQuorum / DescribeCluster --------------------------------------------------------

    private JsonNode describeQuorumByKafka(String who, ByteBuffer body, short v) throws Exception {
        byte[] bytes = bytes(body);
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        DescribeQuorumResponseData data = new DescribeQuorumResponseData(new ByteBufferAccessor(buf), v);
        String what = "DescribeQuorum v" + v + " from " + who;
        report.check(what + ": Kafka's classes decode it to the last byte", !buf.hasRemaining(),
            buf.remaining() + " bytes left");
        report.equal(what + ": Kafka re-encodes it to the same bytes", hex(bytes),
            hex(encoded(data, v)));
        report.equal(what + ": no error", 0, (int) data.errorCode()
            + data.topics().stream().flatMap(t -> t.partitions().stream()).mapToInt(p -> p.errorCode()).sum());
        return JSON.readTree(DescribeQuorumResponseDataJsonConverter.write(data, v).toString());
    }

    private JsonNode describeQuorumByUs(ByteBuffer body, short v) throws Exception {
        Path file = scratch.resolve("describe-quorum-v" + v + ".bin");
        Files.write(file, bytes(body));
        Procs.Result r = tools.kraft("decode", "describe-quorum-response", file.toString(), "--version",
            Short.toString(v));
        if (r.code() != 0) return new TextNode("kraft decode failed: " + r);
        return JSON.readTree(r.out());
    }

    private JsonNode describeClusterByKafka(String who, ByteBuffer body, short v) throws Exception {
        byte[] bytes = bytes(body);
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        DescribeClusterResponseData data = new DescribeClusterResponseData(new ByteBufferAccessor(buf), v);
        String what = "DescribeCluster v" + v + " from " + who;
        report.check(what + ": Kafka's classes decode it to the last byte", !buf.hasRemaining(),
            buf.remaining() + " bytes left");
        report.equal(what + ": Kafka re-encodes it to the same bytes", hex(bytes),
            hex(encoded(data, v)));
        return JSON.readTree(DescribeClusterResponseDataJsonConverter.write(data, v).toString());
    }

    /**
     * The JSON with every value that depends on the particular quorum replaced by its type: ids, epochs,
     * offsets, timestamps, directory ids, hosts, ports and the cluster id. Error codes, messages, names,
     * constants and list lengths stay.
     */
    static JsonNode shape(JsonNode node) {
        if (node.isObject()) {
            ObjectNode out = JSON.createObjectNode();
            Iterator<Map.Entry<String, JsonNode>> fields = node.fields();
            while (fields.hasNext()) {
                Map.Entry<String, JsonNode> f = fields.next();
                out.set(f.getKey(), VARIABLE.contains(f.getKey()) ? new TextNode("<" + f.getValue().getNodeType() + ">")
                    : shape(f.getValue()));
            }
            return out;
        }
        if (node.isArray()) {
            ArrayNode out = JSON.createArrayNode();
            node.forEach(e -> out.add(shape(e)));
            return out;
        }
        return node;
    }

    private static JsonNode dedupBrokers(JsonNode shape) {
        ObjectNode out = shape.deepCopy();
        ArrayNode unique = JSON.createArrayNode();
        shape.get("brokers").forEach(b -> {
            boolean seen = false;
            for (JsonNode u : unique) seen |= u.equals(b);
            if (!seen) unique.add(b);
        });
        out.set("brokers", unique);
        return out;
    }

    private static boolean listsController(JsonNode r) {
        int id = r.get("controllerId").asInt();
        for (JsonNode b : r.get("brokers")) if (b.get("brokerId").asInt() == id) return true;
        return false;
    }

    private static final List<String> VARIABLE = List.of("replicaId", "replicaDirectoryId", "logEndOffset",
        "lastFetchTimestamp", "lastCaughtUpTimestamp", "leaderId", "leaderEpoch", "highWatermark", "nodeId", "host",
        "port", "brokerId", "controllerId", "clusterId", "throttleTimeMs");

    // ----- records ---------------------------------------------------------------------------------

    static final String BOOTSTRAP_SNAPSHOT = "00000000000000000000-0000000000.checkpoint";

    /** Kafka's and our reading of {@code file} ({@code kind}: {@code records} or {@code snapshot}) agree. */
    private void records(String what, Path file, String kind) throws Exception {
        byte[] bytes = Files.readAllBytes(file);
        JsonNode kafka;
        try {
            kafka = recordsByKafka(ByteBuffer.wrap(bytes));
            report.check(what + ": Kafka's MemoryRecords / ControlRecordUtils parse every batch (CRC, control records)",
                true, "");
        } catch (Exception e) {
            report.check(what + ": Kafka's MemoryRecords / ControlRecordUtils parse every batch (CRC, control records)",
                false, e.toString());
            return;
        }
        Procs.Result r = tools.kraft("decode", kind, file.toString());
        if (!report.check(what + ": our decoder parses every batch", r.code() == 0, r.toString())) return;
        // Through text, so Kafka's long/short nodes and our parsed numbers compare by value.
        report.equal(what + ": both read the same batches and records", JSON.readTree(kafka.toString()),
            JSON.readTree(r.out()));
        if (kind.equals("snapshot")) {
            // Kafka's own tool on the file: kafka-dump-log --cluster-metadata-decoder.
            Procs.Result dump = Procs.run(Main.java("org.apache.kafka.tools.DumpLogSegments",
                "--cluster-metadata-decoder", "--files", file.toString()), 120);
            String out = dump.out();
            report.check(what + ": kafka-dump-log --cluster-metadata-decoder reads it (snapshot 0-0, header, "
                + "KRaftVersion, voters, footer, every batch valid)", dump.code() == 0
                && out.contains("Snapshot end offset: 0, epoch: 0") && out.contains("SnapshotHeader")
                && out.contains("KRaftVersion {") && out.contains("KRaftVoters {") && out.contains("SnapshotFooter")
                && out.contains("isvalid: true") && !out.contains("isvalid: false"), dump.toString());
        }
        report.check(what + ": has the control records under test", kafka.toString().contains("\"LeaderChange\"")
            || kafka.toString().contains("\"Voters\""), kafka.toString());
    }

    /** Kafka's reading of record batches, in the JSON shape `kraft decode records` prints. */
    private static JsonNode recordsByKafka(ByteBuffer buffer) {
        ArrayNode batches = JSON.createArrayNode();
        MemoryRecords records = MemoryRecords.readableRecords(buffer);
        for (MutableRecordBatch batch : records.batches()) {
            batch.ensureValid();
            ObjectNode b = JSON.createObjectNode();
            b.put("baseOffset", batch.baseOffset());
            b.put("lastOffset", batch.lastOffset());
            b.put("partitionLeaderEpoch", batch.partitionLeaderEpoch());
            b.put("control", batch.isControlBatch());
            ArrayNode list = b.putArray("records");
            for (Record record : batch) {
                ObjectNode r = list.addObject();
                if (!batch.isControlBatch()) {
                    r.put("type", "Data");
                    r.put("valueSize", record.valueSize());
                    continue;
                }
                ControlRecordType type = ControlRecordType.parse(record.key());
                switch (type) {
                    case SNAPSHOT_HEADER -> {
                        r.put("type", "SnapshotHeader");
                        r.put("lastContainedLogTimestamp",
                            ControlRecordUtils.deserializeSnapshotHeaderRecord(record).lastContainedLogTimestamp());
                    }
                    case SNAPSHOT_FOOTER -> {
                        ControlRecordUtils.deserializeSnapshotFooterRecord(record);
                        r.put("type", "SnapshotFooter");
                    }
                    case LEADER_CHANGE -> {
                        LeaderChangeMessage m = ControlRecordUtils.deserializeLeaderChangeMessage(record);
                        r.put("type", "LeaderChange");
                        r.put("leaderId", m.leaderId());
                        ArrayNode voters = r.putArray("voters");
                        m.voters().forEach(v -> voters.add(v.voterId()));
                        ArrayNode granting = r.putArray("grantingVoters");
                        m.grantingVoters().forEach(v -> granting.add(v.voterId()));
                    }
                    case KRAFT_VERSION -> {
                        r.put("type", "KRaftVersion");
                        r.put("kraftVersion", ControlRecordUtils.deserializeKRaftVersionRecord(record).kRaftVersion());
                    }
                    case KRAFT_VOTERS -> {
                        VotersRecord m = ControlRecordUtils.deserializeVotersRecord(record);
                        r.put("type", "Voters");
                        ArrayNode voters = r.putArray("voters");
                        for (VotersRecord.Voter v : m.voters()) {
                            ObjectNode o = voters.addObject();
                            o.put("id", v.voterId());
                            o.put("directoryId", v.voterDirectoryId().toString());
                            ArrayNode endpoints = o.putArray("endpoints");
                            v.endpoints().forEach(e -> endpoints.add(e.name() + "://" + e.host() + ":" + e.port()));
                            ArrayNode range = o.putArray("kraftVersion");
                            range.add(v.kRaftVersionFeature().minSupportedVersion());
                            range.add(v.kRaftVersionFeature().maxSupportedVersion());
                        }
                    }
                    default -> r.put("type", "other control record " + type);
                }
            }
            batches.add(b);
        }
        return batches;
    }

    private static byte[] encoded(org.apache.kafka.common.protocol.Message m, short v) {
        var cache = new org.apache.kafka.common.protocol.ObjectSerializationCache();
        ByteBuffer b = ByteBuffer.allocate(m.size(cache, v));
        m.write(new ByteBufferAccessor(b), cache, v);
        return b.array();
    }

    private static byte[] bytes(ByteBuffer b) {
        ByteBuffer d = b.duplicate();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }

    private static String hex(byte[] bytes) {
        StringBuilder sb = new StringBuilder();
        for (byte x : bytes) sb.append(String.format("%02x", x));
        return sb.toString();
    }
}
