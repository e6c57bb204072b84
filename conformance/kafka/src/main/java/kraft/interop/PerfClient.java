package kraft.interop;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AddRaftVoterRequestData;
import org.apache.kafka.common.message.AddRaftVoterResponseData;
import org.apache.kafka.common.message.DescribeQuorumResponseData;
import org.apache.kafka.common.message.RemoveRaftVoterRequestData;
import org.apache.kafka.common.message.RemoveRaftVoterResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AddRaftVoterRequest;
import org.apache.kafka.common.requests.DescribeQuorumRequest;
import org.apache.kafka.common.requests.RemoveRaftVoterRequest;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.ResponseHeader;

/**
 * One open connection to a controller, speaking Kafka's wire protocol with Kafka's own generated classes (so the
 * client costs the same whichever implementation answers): DescribeQuorum v2 (the highest both serve),
 * AddRaftVoter v0 and RemoveRaftVoter v0 (both answer once the VotersRecord is committed).
 */
final class PerfClient implements AutoCloseable {
    static final short DESCRIBE_QUORUM_VERSION = 2;
    private final Socket socket;
    private final DataOutputStream out;
    private final DataInputStream in;
    private int correlation;

    PerfClient(String address, int timeoutMs) throws IOException {
        String[] hostPort = address.split(":");
        socket = new Socket();
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(timeoutMs);
        socket.connect(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])), timeoutMs);
        out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
    }

    /** Sends one request and returns the response body (header checked and removed). */
    ByteBuffer call(ApiKeys api, short version, AbstractRequest request) throws IOException {
        int corr = ++correlation;
        ByteBuffer frame = request.serializeWithHeader(new RequestHeader(api, version, "kraft-perf", corr));
        out.writeInt(frame.remaining());
        out.write(frame.array(), frame.arrayOffset() + frame.position(), frame.remaining());
        out.flush();
        int size = in.readInt();
        if (size < 0 || size > (16 << 20)) throw new IOException("response frame size " + size);
        byte[] payload = new byte[size];
        in.readFully(payload);
        ByteBuffer buf = ByteBuffer.wrap(payload);
        ResponseHeader header = ResponseHeader.parse(buf, api.responseHeaderVersion(version));
        if (header.correlationId() != corr) throw new IOException("correlation " + header.correlationId() + " != " + corr);
        return buf.slice();
    }

    DescribeQuorumResponseData describeQuorum() throws IOException {
        AbstractRequest request = new DescribeQuorumRequest.Builder(
            DescribeQuorumRequest.singletonRequest(new TopicPartition("__cluster_metadata", 0)))
            .build(DESCRIBE_QUORUM_VERSION);
        ByteBuffer body = call(ApiKeys.DESCRIBE_QUORUM, DESCRIBE_QUORUM_VERSION, request);
        return new DescribeQuorumResponseData(new ByteBufferAccessor(body), DESCRIBE_QUORUM_VERSION);
    }

    /** AddRaftVoter v0; returns the error code (0 once the new voter set is committed). */
    short addVoter(String clusterId, int id, Uuid directoryId, String host, int port) throws IOException {
        AddRaftVoterRequestData.ListenerCollection listeners = new AddRaftVoterRequestData.ListenerCollection();
        listeners.add(new AddRaftVoterRequestData.Listener().setName("CONTROLLER").setHost(host).setPort(port));
        AddRaftVoterRequestData data = new AddRaftVoterRequestData().setClusterId(clusterId).setTimeoutMs(30_000)
            .setVoterId(id).setVoterDirectoryId(directoryId).setListeners(listeners);
        ByteBuffer body = call(ApiKeys.ADD_RAFT_VOTER, (short) 0, new AddRaftVoterRequest.Builder(data).build((short) 0));
        return new AddRaftVoterResponseData(new ByteBufferAccessor(body), (short) 0).errorCode();
    }

    /** RemoveRaftVoter v0; returns the error code (0 once the new voter set is committed). */
    short removeVoter(String clusterId, int id, Uuid directoryId) throws IOException {
        RemoveRaftVoterRequestData data = new RemoveRaftVoterRequestData().setClusterId(clusterId).setVoterId(id)
            .setVoterDirectoryId(directoryId);
        ByteBuffer body = call(ApiKeys.REMOVE_RAFT_VOTER, (short) 0,
            new RemoveRaftVoterRequest.Builder(data).build((short) 0));
        return new RemoveRaftVoterResponseData(new ByteBufferAccessor(body), (short) 0).errorCode();
    }

    /** The partition of a DescribeQuorum answer, or null if the answer is an error at either level. */
    static DescribeQuorumResponseData.PartitionData partition(DescribeQuorumResponseData r) {
        if (r.errorCode() != 0 || r.topics().isEmpty() || r.topics().get(0).partitions().isEmpty()) return null;
        DescribeQuorumResponseData.PartitionData p = r.topics().get(0).partitions().get(0);
        return p.errorCode() == 0 ? p : null;
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing a connection to a killed process
        }
    }
}
