package kraft.interop;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

/**
 * (j) kill -9 of the leader while a VotersRecord is uncommitted, {@code runs} times with
 * seeds {@code seed}, {@code seed + 1}, ... on one quorum of voters {1, 2, 3} (Kafka) and {5, 6} ({@code kraft}).
 * Each run: the quorum is quiet; the leader of the kind whose turn it is (a Kafka leader on even runs, a
 * {@code kraft} leader on odd ones; a leader of the other kind is killed and restarted until one of the right
 * kind leads, at most twice) gets a membership change, chosen by the seed: removal of a random follower when there
 * are five voters, else the removed one is added back ({@code kraft remove-voter} / {@code add-voter}). Before the
 * request every voter of the new set but one random follower (the added replica itself, on an add) is paused
 * (SIGSTOP), so the new set cannot reach a majority and the VotersRecord stays uncommitted. Once the leader has
 * appended it (its end offset moved) the leader reports its HW (and, if a {@code kraft} node, a CommittedVoters
 * that must still be the old set), then after a random 0-200 ms it is killed (-9), the others resume, a new leader
 * is elected, the killed replica restarts and catches up. The change either survives or is gone, nothing else.
 * Then the end checks judge every (HW, CommittedVoters) reported and the logs, byte for byte.
 * {@code conformance/kafka/kill-loop.sh} runs it 100 times; {@code run.sh} twice.
 */
final class KillLoopScenario {
    private static final List<Integer> ALL = List.of(1, 2, 3, 5, 6);
    private final Report report;
    private final Tools tools;
    private final Path work;
    private final String kraft;
    private final int runs;
    private final long seed;

    KillLoopScenario(Report report, Tools tools, Path work, String kraft, int runs, long seed) {
        this.report = report;
        this.tools = tools;
        this.work = work;
        this.kraft = kraft;
        this.runs = runs;
        this.seed = seed;
    }

    void run() throws Exception {
        try (MixedQuorum m = new MixedQuorum(report, tools, work, kraft, KafkaJoinsScenario.KAFKA_TIMEOUTS)) {
            try {
                SelfRemovalScenario.startFiveVoters(m, "j");
                int[] seats = new int[2];
                int survived = 0;
                for (int r = 0; r < runs; r++) {
                    Boolean kept = oneRun(m, r, seed + r, seats);
                    if (Boolean.TRUE.equals(kept)) survived++;
                }
                report.check("j: " + runs + " runs; the killed leader was Kafka " + seats[0] + " times, kraft " + seats[1]
                    + " times; the uncommitted change survived " + survived + " times",
                    runs < 2 || (seats[0] > 0 && seats[1] > 0), "both kinds should have been killed as leader");
                EndChecks.run(m, "j end");
            } finally {
                report.check("j: every process still running at the end", m.allAlive(), "see " + work);
            }
        }
    }

    /** One run; returns whether the change survived, or null if the run could not set up its fault. */
    private Boolean oneRun(MixedQuorum m, int r, long runSeed, int[] seats) throws Exception {
        Random rnd = new Random(runSeed);
        String tag = "j run " + r + " (seed " + runSeed + ")";
        int[] l = m.steer(r % 2 == 1, 2, tag);
        int leader = l[0];
        String addr = m.address(leader);
        StringBuilder last = new StringBuilder();
        if (!report.check(tag + ": quiet before the change (leader " + leader + ", epoch " + l[1] + ")",
                m.allCaughtUp(addr, 1, 60_000, last, true), last.toString())) {
            return null;
        }
        List<Integer> before = m.currentVoters(addr);
        List<Integer> followers = new ArrayList<>(before);
        followers.remove(Integer.valueOf(leader));
        int target;
        List<Integer> after = new ArrayList<>(before);
        int unpaused;
        String[] command;
        if (before.size() == ALL.size()) {
            target = followers.get(rnd.nextInt(followers.size()));
            after.remove(Integer.valueOf(target));
            List<Integer> rest = new ArrayList<>(followers);
            rest.remove(Integer.valueOf(target));
            unpaused = rest.get(rnd.nextInt(rest.size()));
            command = new String[] {"remove-voter", "--bootstrap-controller", addr, "--node-id",
                Integer.toString(target), "--timeout-ms", "20000"};
        } else {
            target = ALL.stream().filter(id -> !before.contains(id)).findFirst().orElseThrow();
            TreeSet<Integer> grown = new TreeSet<>(after);
            grown.add(target);
            after = new ArrayList<>(grown);
            unpaused = target;
            command = new String[] {"add-voter", "--bootstrap-controller", addr, "--node-id", Integer.toString(target),
                "--directory-id=" + (m.isKraft(target) ? m.ours.directoryId(target)
                    : m.kafka.directoryIds.get(target)).toString(), "--endpoint", m.address(target),
                "--timeout-ms", "20000"};
        }
        List<Integer> paused = new ArrayList<>(after);
        paused.remove(Integer.valueOf(leader));
        paused.remove(Integer.valueOf(unpaused));
        String change = (before.size() == ALL.size() ? "remove " : "add ") + target + " (" + EndChecks.kind(m, target)
            + ") " + before + " -> " + after + ", leader " + leader + " (" + EndChecks.kind(m, leader) + "), paused "
            + paused + ", fetching " + unpaused;
        long leo = MixedQuorum.leo(m.replication(addr), "Leader", -1);
        for (int id : paused) m.pause(id, true);
        Process cli = null;
        boolean appended = false;
        try {
            List<String> cmd = new ArrayList<>(List.of(m.ours.kraft));
            cmd.addAll(List.of(command));
            cli = Procs.start(cmd, work.resolve("cli-run-" + r + ".log"));
            long deadline = System.currentTimeMillis() + 15_000;
            while (!appended && System.currentTimeMillis() < deadline) {
                appended = MixedQuorum.leo(m.replication(addr), "Leader", -1) > leo;
                if (!appended) Thread.sleep(50);
            }
            report.check(tag + ": leader appended the VotersRecord: " + change, appended,
                "its end offset stayed " + leo + "; see " + work.resolve("cli-run-" + r + ".log"));
            if (appended) {
                MixedQuorum.Sample s = m.sample(tag + ": uncommitted " + change, leader);
                if (s != null && s.committed() != null) {
                    report.equal(tag + ": the kraft leader's CommittedVoters is still the old set", before, s.committed());
                }
                Thread.sleep(rnd.nextInt(201));
                m.kill(leader);
                seats[m.isKraft(leader) ? 1 : 0]++;
            }
        } finally {
            for (int id : paused) m.pause(id, false);
            if (cli != null) Procs.stop(cli);
        }
        if (!appended) return null;
        int[] next = m.awaitLeader(l[1], tag + ": after kill -9 of leader " + leader + ", a new leader");
        m.sample(tag + ": new leader", next[0]);
        m.restart(leader);
        int[] now = m.awaitLeader(-1, tag + ": a leader after the restart");
        report.check(tag + ": the restarted " + leader + " catches up, every replica at the end offset",
            m.allCaughtUp(m.address(now[0]), 1, 60_000, last, true), last.toString());
        m.sample(tag + ": quiet again", now[0]);
        List<Integer> voters = m.currentVoters(m.address(now[0]));
        boolean kept = voters.equals(after);
        report.check(tag + ": the change either survived or is gone: voters " + voters + (kept ? " (kept)" : " (lost)"),
            kept || voters.equals(before), "before " + before + ", requested " + after);
        return kept;
    }
}
