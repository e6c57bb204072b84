package kraft.interop;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.Uuid;

/**
 * (i) Leader self-removal in both directions: voters {1, 2, 3} (Kafka) and {5, 6}
 * ({@code kraft}, formatted by Kafka's storage tool, added with {@code kraft add-voter}). Each step removes the
 * current leader and checks that it steps down once the removal commits, that the others elect a new leader at
 * a higher epoch, and that the removed replica keeps running (as an observer). The steps, in whatever order the
 * elections allow: a Kafka leader removed by {@code kraft remove-voter}; a Kafka leader removed by Kafka's
 * {@code remove-controller}; a {@code kraft} leader removed by Kafka's {@code remove-controller}. When the leader
 * is not of the kind the next open step needs, it is killed (-9) and restarted ({@link MixedQuorum#steer}):
 * with the (g) timeouts a {@code kraft} node usually wins after a Kafka leader's death (see
 * conformance/kafka/README.md); after a {@code kraft} leader's, either kind may. Then the end checks.
 */
record SelfRemovalScenario(Report report, Tools tools, Path work, String kraft) {
    private static final List<Integer> KAFKA = List.of(1, 2, 3);
    private static final List<Integer> KRAFT = List.of(5, 6);

    void run() throws Exception {
        MixedQuorum.runScenario(report, tools, work, kraft, "i", m -> {
            startFiveVoters(m, "i");
            steps(m);
        });
    }

    /**
     * Kafka controllers 1-3 elect a leader; {@code kraft} nodes 5 and 6, formatted by Kafka's storage tool with the
     * (g) timeouts, join as observers and are added with {@code kraft add-voter}: voters {1, 2, 3, 5, 6}.
     */
    static void startFiveVoters(MixedQuorum m, String tag) throws Exception {
        m.kafka.startInitial(1, 2, 3);
        int[] first = m.awaitLeader(-1, tag + ": the Kafka controllers elect a leader");
        for (int id : KRAFT) {
            m.ours.startJoinerFormattedByKafka(id, m.kafka.clusterId, m.kafka.initialControllers(),
                "--election-timeout-ms", "1000", "--fetch-timeout-ms", "5000", "--seed", Integer.toString(id));
            m.awaitCaughtUp(m.kafka.address(first[0]), id, tag + ": kraft node " + id + " catches up as an observer");
            Procs.Result add = m.tools.kraft("add-voter", "--bootstrap-controller", m.kafka.address(first[0]),
                "--node-id", Integer.toString(id), "--directory-id=" + m.ours.directoryId(id), "--endpoint",
                m.ours.address(id), "--timeout-ms", "30000");
            m.report.check(tag + ": kraft add-voter " + id + " via Kafka leader " + first[0] + " (exit 0)",
                add.code() == 0, add.toString());
            List<Integer> committed = NowLine.computedCommitted(add.out());
            m.report.check(tag + ": kraft add-voter " + id + ": its Now: line lists it among CommittedVoters computed"
                + " from the log", committed != null && committed.contains(id), add.out());
        }
        m.awaitAllCaughtUp(m.kafka.address(first[0]), 4, tag + ": voters {1, 2, 3, 5, 6} at the leader's end offset");
        m.report.equal(tag + ": voters", List.of(1, 2, 3, 5, 6), m.currentVoters(m.kafka.address(first[0])));
        m.sample(tag + ": five voters", first[0]);
    }

    private Uuid directoryId(MixedQuorum m, int id) throws Exception {
        return m.isKraft(id) ? m.ours.directoryId(id) : m.kafka.directoryIds.get(id);
    }

    private void steps(MixedQuorum m) throws Exception {
        boolean kafkaByKraft = false, kafkaByKafka = false, kraftByKafka = false;
        List<Integer> voters = new ArrayList<>(List.of(1, 2, 3, 5, 6));
        for (int step = 0; step < 8 && !(kafkaByKraft && kafkaByKafka && kraftByKafka); step++) {
            int[] l = m.awaitLeader(-1, "i: leader before step " + step);
            int leader = l[0];
            boolean kraftLeads = m.isKraft(leader);
            String tool;
            if (!kraftLeads && !kafkaByKraft) {
                tool = "kraft remove-voter";
                kafkaByKraft = true;
            } else if (!kraftLeads && !kafkaByKafka) {
                tool = "Kafka's remove-controller";
                kafkaByKafka = true;
            } else if (kraftLeads && !kraftByKafka) {
                tool = "Kafka's remove-controller";
                kraftByKafka = true;
            } else {
                // The leader is not of the kind the next open step needs: kill -9 and restart it.
                m.kill(leader);
                int[] next = m.awaitLeader(l[1], "i: after kill -9 of " + EndChecks.kind(m, leader) + " leader " + leader
                    + ": a new leader (to change the leader's kind)");
                m.restart(leader);
                m.awaitAllCaughtUp(m.address(next[0]), 1, "i: restarted " + leader + " catches up");
                continue;
            }
            String addr = m.address(leader);
            Procs.Result r = tool.startsWith("kraft")
                ? tools.kraft("remove-voter", "--bootstrap-controller", addr, "--node-id", Integer.toString(leader),
                    "--timeout-ms", "30000")
                : Tools.kafka("--bootstrap-controller", addr, "remove-controller", "--controller-id",
                    Integer.toString(leader), "--controller-directory-id=" + directoryId(m, leader));
            String what = EndChecks.kind(m, leader) + " leader " + leader + " (epoch " + l[1] + ") removed by " + tool;
            report.check(what + " (exit 0)", r.code() == 0, r.toString());
            voters.remove(Integer.valueOf(leader));
            int[] next = m.awaitLeader(l[1], what + ": the rest elect a new leader at a higher epoch");
            report.check(what + ": the new leader is another replica", next[0] != leader, "leader " + next[0]);
            m.awaitAllCaughtUp(m.address(next[0]), 1, what + ": the quorum commits again");
            report.equal(what + ": voters", voters, m.currentVoters(m.address(next[0])));
            report.check(what + ": the removed replica keeps running", m.running(leader), "see " + work);
            m.sample("i: after " + what, next[0]);
        }
        report.check("i: all three removals happened (Kafka leader by kraft, Kafka leader by Kafka, kraft leader by"
            + " Kafka)", kafkaByKraft && kafkaByKafka && kraftByKafka, kafkaByKraft + " " + kafkaByKafka + " " + kraftByKafka);
    }
}
