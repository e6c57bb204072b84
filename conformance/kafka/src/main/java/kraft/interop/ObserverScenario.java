package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * (r) CommittedVoters for a Kafka quorum, computed by {@code kraft describe} from the metadata log it fetches as an
 * observer with replica id -1 (Kafka's leaders serve DescribeQuorum v0-2 only). Three Kafka controllers; a
 * {@code kraft} node formatted by Kafka's storage tool joins as an observer; {@code kraft describe --watch} runs
 * throughout. Kafka's {@code add-controller} with both Kafka followers stopped (SIGSTOP): the leader appends the
 * VotersRecord and cannot commit it; after SIGCONT it commits. Kafka's {@code remove-controller} of the
 * {@code kraft} node with every follower stopped (after their parked fetches expired, so none holds the record):
 * kill -9 of the leader, SIGCONT, a new leader without the record truncates it. Then a {@code kraft} leader: the
 * set our CLI computes from its log equals the one it serves in DescribeQuorum v3. The leader is paused only
 * through its followers: a stopped leader would answer no one, the observer included.
 */
record ObserverScenario(Report report, Tools tools, Path work, String kraft) {
    private static final int OURS = 5;

    /**
     * Kafka's check-quorum (1.5 x the fetch timeout) must outlast the pauses, which include starting Kafka's tool
     * in a JVM: fetch timeout 12 s. The kraft node's is 14 s: after the leader's death it refuses the Kafka
     * controllers' pre-votes (it fetched more recently than its timeout), which they need (3 of 4 voters), until it
     * stands itself and they grant, as in (g).
     */
    private static final Map<String, String> KAFKA_TIMEOUTS = Map.of("controller.quorum.election.timeout.ms", "6000",
        "controller.quorum.fetch.timeout.ms", "12000");

    void run() throws Exception {
        try (MixedQuorum m = new MixedQuorum(report, tools, work, kraft, KAFKA_TIMEOUTS)) {
            try {
                steps(m);
                EndChecks.run(m, "r end");
            } finally {
                report.check("r: every process still running at the end", m.allAlive(), "see " + work);
            }
        }
    }

    /** {@code kraft describe --status} via {@code addr} with {@code extra} flags: its fields (empty on failure). */
    private Map<String, String> describe(String addr, String... extra) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("describe", "--bootstrap-controller", addr, "--status",
            "--timeout-ms", "5000"));
        cmd.addAll(List.of(extra));
        Procs.Result r = tools.kraft(cmd.toArray(String[]::new));
        return r.code() == 0 ? Tools.statusFields(r.out()) : Map.of();
    }

    /**
     * Waits (30 s) until our answer via {@code addr}, asked at DescribeQuorum v2 (what Kafka serves; a kraft leader
     * then gets the same treatment), has these current and committed ids.
     */
    private Map<String, String> awaitComputed(String addr, List<Integer> current, List<Integer> committed,
            String label) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        Map<String, String> f = Map.of();
        while (System.currentTimeMillis() < deadline) {
            f = describe(addr, "--api-version", "2");
            if (sorted(f.get("CurrentVoters")).equals(current) && sorted(f.get("CommittedVoters")).equals(committed)) {
                report.check(label + ": CurrentVoters " + current + ", CommittedVoters " + committed, true, "");
                report.check(label + ": marked as computed by kraft", f.getOrDefault("CommittedVotersSource", "")
                    .startsWith("computed by kraft from the metadata log"), f.toString());
                return f;
            }
            Thread.sleep(200);
        }
        report.check(label + ": CurrentVoters " + current + ", CommittedVoters " + committed, false, f.toString());
        return f;
    }

    private static List<Integer> sorted(String list) {
        return Scenarios.ids(list).stream().sorted().toList();
    }

    private static String ids(List<Integer> ids) {
        return ids.toString();
    }

    /** Waits (20 s) until the watch printed a line containing {@code text}. */
    private void awaitWatch(Path file, String text, String label) throws Exception {
        long deadline = System.currentTimeMillis() + 20_000;
        String all = "";
        while (System.currentTimeMillis() < deadline) {
            all = Files.exists(file) ? Files.readString(file) : "";
            if (all.contains(text)) {
                report.check("--watch: " + label, true, "");
                return;
            }
            Thread.sleep(200);
        }
        report.check("--watch: " + label, false, "no line with '" + text + "' in:\n" + all);
    }

    /** Kafka's {@code kafka-metadata-quorum} in its own JVM (it blocks until the change commits). */
    private Process kafkaTool(String name, String... args) throws Exception {
        return Procs.start(Main.java("org.apache.kafka.tools.MetadataQuorumCommand", args), work.resolve(name + ".log"));
    }

    private void steps(MixedQuorum m) throws Exception {
        KafkaQuorum kafka = m.kafka;
        kafka.startInitial(1, 2, 3);
        int[] first = m.awaitLeader(-1, "the Kafka controllers elect a leader");
        int leader = first[0];
        String addr = kafka.address(leader);
        String all = String.join(",", kafka.address(1), kafka.address(2), kafka.address(3));
        m.ours.startJoinerFormattedByKafka(OURS, kafka.clusterId, kafka.initialControllers(), "--election-timeout-ms",
            "1000", "--fetch-timeout-ms", "14000");
        m.awaitCaughtUp(addr, OURS, "the kraft node fetches Kafka's log as an observer");
        List<Integer> three = List.of(1, 2, 3);
        List<Integer> four = List.of(1, 2, 3, OURS);
        awaitComputed(addr, three, three, "quiet Kafka quorum");
        Map<String, String> served = describe(addr, "--served-only");
        report.equal("--served-only: CommittedVoters as Kafka serves it (DescribeQuorum v2: none)", "[]",
            served.get("CommittedVoters"));

        Path watchFile = work.resolve("watch.txt");
        List<String> watchCmd = List.of(kraft, "describe", "--watch", "--bootstrap-controller", all);
        Process watch = new ProcessBuilder(watchCmd).redirectOutput(watchFile.toFile())
            .redirectError(work.resolve("watch.err").toFile()).start();
        try {
            awaitWatch(watchFile, "CurrentVoters: " + ids(three) + " CommittedVoters: " + ids(three), "first line");

            // 1. add-controller with both Kafka followers stopped: appended, not committed.
            List<Integer> followers = new ArrayList<>(three);
            followers.remove(Integer.valueOf(leader));
            for (int f : followers) m.pause(f, true);
            Path config = m.ours.dir.resolve("controller-" + OURS + ".properties");
            Files.writeString(config, String.join("\n", "process.roles=controller", "node.id=" + OURS,
                "controller.listener.names=CONTROLLER", "listeners=CONTROLLER://" + m.ours.address(OURS),
                "metadata.log.dir=" + m.ours.dataDir(OURS), ""));
            Process add = kafkaTool("add-controller", "--bootstrap-controller", addr, "--command-config",
                config.toString(), "add-controller");
            Map<String, String> during = awaitComputed(addr, four, three,
                "add-controller with the Kafka followers stopped");
            report.equal("Kafka's own describe --status shows the new voter in CurrentVoters too",
                sorted(during.get("CurrentVoters")), sorted(Tools.statusFields(Tools.kafka("--bootstrap-controller",
                    addr, "describe", "--status").out()).get("CurrentVoters")));
            report.check("the reconfiguration line names the voter being added", during.getOrDefault(
                "Reconfiguration", "").startsWith("adding {\"id\": " + OURS + ","), during.toString());
            awaitWatch(watchFile, "CurrentVoters: " + ids(four) + " CommittedVoters: " + ids(three)
                + " Reconfiguration: adding " + OURS, "the add appended, not committed");
            for (int f : followers) m.pause(f, false);
            // Kafka's leader answers REQUEST_TIMED_OUT once its request timeout (2 s) passes with the record
            // uncommitted; the record stays and commits after the resume either way.
            boolean ended = add.waitFor(60, java.util.concurrent.TimeUnit.SECONDS);
            String addLog = Files.readString(work.resolve("add-controller.log"));
            report.check("add-controller ends: exit 0, or Kafka's REQUEST_TIMED_OUT while the followers were stopped",
                ended && (add.exitValue() == 0 || addLog.contains("The request timed out.")), addLog);
            awaitComputed(addr, four, four, "after SIGCONT");
            awaitWatch(watchFile, "CurrentVoters: " + ids(four) + " CommittedVoters: " + ids(four), "the add committed");
            m.awaitAllCaughtUp(addr, 3, "every voter at the leader's end offset");

            // 2. remove-controller of the kraft node with every follower stopped, then kill -9 of the leader.
            int[] still = m.awaitLeader(-1, "a leader before the removal");
            report.equal("the same Kafka leader before the removal", leader, still[0]);
            List<Integer> stopped = new ArrayList<>(four);
            stopped.remove(Integer.valueOf(leader));
            for (int f : stopped) m.pause(f, true);
            // A fetch parked at the leader would carry the record into the stopped follower's socket: let every
            // parked fetch (MaxWaitMs 500) expire first.
            Thread.sleep(1500);
            String dir5 = m.ours.directoryId(OURS).toString();
            Process remove = kafkaTool("remove-controller", "--bootstrap-controller", addr, "remove-controller",
                "--controller-id", Integer.toString(OURS), "--controller-directory-id=" + dir5);
            awaitComputed(addr, three, four, "remove-controller with every follower stopped");
            awaitWatch(watchFile, "CurrentVoters: " + ids(three) + " CommittedVoters: " + ids(four)
                + " Reconfiguration: removing " + OURS, "the removal appended, not committed");
            m.kill(leader);
            for (int f : stopped) m.pause(f, false);
            Procs.stop(remove);
            int[] next = m.awaitLeader(first[1], "after kill -9 of Kafka leader " + leader + ": a new leader");
            awaitComputed(m.address(next[0]), four, four, "the new leader (" + next[0] + ") truncated the removal");
            awaitWatch(watchFile, "LeaderId: " + next[0] + " LeaderEpoch: " + next[1], "follows the new leader");
            String text = Files.readString(watchFile);
            String afterCommit = text.substring(text.indexOf("CommittedVoters: " + ids(four)));
            report.check("--watch: the truncated removal never shown as committed", !afterCommit.contains(
                "CommittedVoters: " + ids(three)), text);

            // 3. The same log under a kraft leader: computed (v2 asked) = served (v3).
            int[] k = next;
            if (!m.isKraft(k[0])) {
                m.restart(leader);
                k = m.steer(true, 2, "r");
            }
            if (m.isKraft(k[0])) {
                m.sample("r: kraft leader after the truncation", k[0]);
                String ours = m.ours.address(OURS);
                boolean compared = false;
                for (int attempt = 0; attempt < 10 && !compared; attempt++) {
                    Map<String, String> v3 = describe(ours);
                    Map<String, String> v2 = describe(ours, "--api-version", "2");
                    Map<String, String> again = describe(ours);
                    if (v3.isEmpty() || !v3.get("HighWatermark").equals(again.get("HighWatermark"))
                            || !v3.get("HighWatermark").equals(v2.get("HighWatermark"))) {
                        Thread.sleep(300);
                        continue;
                    }
                    compared = true;
                    report.equal("kraft leader: CommittedVoters computed from its log = served in v3",
                        v3.get("CommittedVoters"), v2.get("CommittedVoters"));
                    report.check("kraft leader: v3 is served, v2 computed", !v3.containsKey("CommittedVotersSource")
                        && v2.getOrDefault("CommittedVotersSource", "").startsWith("computed"), v2.toString());
                }
                report.check("kraft leader: a stable answer to compare", compared, "HW kept moving");
            } else {
                report.check("a kraft leader for the v3 comparison", false, "leader " + k[0]);
            }
            // The killed leader returns and truncates the removal it alone held (the end checks read its log).
            if (!m.running(leader)) m.restart(leader);
        } finally {
            watch.destroy();
            watch.waitFor();
            // What an operator saw (the README's example is taken from here).
            for (String line : Files.readString(watchFile).split("\n")) System.out.println("   watch| " + line);
        }
    }
}
