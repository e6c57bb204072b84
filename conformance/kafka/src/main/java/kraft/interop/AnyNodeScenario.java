package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.QuorumInfo;

/**
 * (t) DescribeQuorum from any one address of a {@code kraft} quorum, as clients that take our node for a broker
 * (it serves Metadata) ask it: kafka-python 3.0.12's {@code KafkaAdminClient.describe_metadata_quorum()} and
 * Kafka's Admin {@code describeMetadataQuorum} (with {@code bootstrap.servers} and with
 * {@code bootstrap.controllers}), each bootstrapped to one node, leader and followers, give the leader's quorum.
 * The Python interpreter is {@code --python} (run.sh installs kafka-python in a venv); a missing interpreter or
 * package fails the scenario.
 */
final class AnyNodeScenario {
    private final Report report;
    private final Tools tools;
    private final Path work;
    private final String kraft;
    private final String python;

    AnyNodeScenario(Report report, Tools tools, Path work, String kraft, String python) {
        this.report = report;
        this.tools = tools;
        this.work = work;
        this.kraft = kraft;
        this.python = python;
    }

    void run() throws Exception {
        boolean havePython = python != null && Files.isExecutable(Path.of(python));
        report.check("kafka-python's interpreter is installed (run.sh makes the venv)", havePython,
            "no Python interpreter at " + python);
        if (havePython) {
            Procs.Result v = Procs.run(List.of(python, "-c", "import kafka; print(kafka.__version__)"), 60);
            report.equal("kafka-python version", "3.0.12", v.out().trim());
        }
        try (KraftQuorum ours = new KraftQuorum(work, kraft)) {
            ours.startCluster(3);
            Map<String, String> leader = leaderStatus(ours);
            int leaderId = Integer.parseInt(leader.get("LeaderId"));
            String voters = String.join(",", Scenarios.ids(leader.get("CurrentVoters")).stream().sorted()
                .map(String::valueOf).toList());
            report.equal("the quorum has three voters", "1,2,3", voters);
            for (int id = 1; id <= 3; id++) {
                String role = id == leaderId ? "leader" : "follower";
                String addr = ours.address(id);
                if (havePython) {
                    Procs.Result py = Procs.run(List.of(python, script().toString(), addr), 60);
                    String expected = "leader=" + leaderId + " epoch=" + leader.get("LeaderEpoch") + " voters="
                        + voters + " error=None";
                    report.equal("kafka-python describe_metadata_quorum via node " + id + " (" + role + ")",
                        expected, py.code() == 0 ? withoutHw(py.out().trim()) : py.toString());
                }
                for (String bootstrap : List.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                        AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG)) {
                    QuorumInfo q = quorum(bootstrap, addr);
                    String label = "Admin describeMetadataQuorum, " + bootstrap + " = node " + id + " (" + role + ")";
                    report.equal(label + ": leaderId", leaderId, q.leaderId());
                    report.equal(label + ": leaderEpoch", leader.get("LeaderEpoch"), Long.toString(q.leaderEpoch()));
                    report.equal(label + ": voters", voters, String.join(",", q.voters().stream()
                        .map(QuorumInfo.ReplicaState::replicaId).sorted().map(String::valueOf).toList()));
                }
            }
            report.check("kraft nodes still running at the end", ours.allAlive(), "a node exited; see " + ours.dir);
        }
    }

    /** The leader's {@code describe --status}, once a leader is elected. */
    private Map<String, String> leaderStatus(KraftQuorum ours) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        Procs.Result r = null;
        while (System.currentTimeMillis() < deadline) {
            r = tools.kraft("describe", "--bootstrap-controller", ours.address(1) + "," + ours.address(2) + ","
                + ours.address(3), "--status");
            Map<String, String> fields = Tools.statusFields(r.out());
            if (r.code() == 0 && fields.containsKey("LeaderId")) return fields;
            Thread.sleep(300);
        }
        throw new IllegalStateException("no leader: " + r);
    }

    /** The high watermark moves with the leader's epoch commits: left out of the comparison. */
    private static String withoutHw(String line) {
        return line.replaceAll(" hw=\\S+", "");
    }

    private static Path script() {
        return Path.of("python", "describe_quorum.py").toAbsolutePath();
    }

    private static QuorumInfo quorum(String bootstrapConfig, String addr) throws Exception {
        Properties props = new Properties();
        props.put(bootstrapConfig, addr);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        try (Admin admin = Admin.create(props)) {
            return admin.describeMetadataQuorum().quorumInfo().get();
        }
    }
}
