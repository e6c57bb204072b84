package kraft.interop;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * (k) Partitions between the kinds, made with SIGSTOP / SIGCONT, on voters {1, 2, 3}
 * (Kafka) and {5, 6} ({@code kraft}) with the (g) timeouts, each part once with a Kafka and once with a
 * {@code kraft} leader:
 * <ul>
 * <li>pre-vote: a follower of the other kind is paused past its fetch and election timeouts and resumed; its
 * pre-votes are refused by followers that still fetch from the leader, so the leader and epoch stay;</li>
 * <li>a paused leader: the others elect a new leader at a higher epoch; resumed, the old leader stops answering
 * as leader and follows;</li>
 * <li>check-quorum: all followers but one are paused; the leader, still running, resigns (Kafka and
 * {@code kraft}: after 1.5 x its fetch timeout without fetches from a majority); resumed, they elect a leader at a
 * higher epoch.</li>
 * </ul>
 * Then the end checks.
 */
record PartitionScenario(Report report, Tools tools, Path work, String kraft) {
    void run() throws Exception {
        MixedQuorum.runScenario(report, tools, work, kraft, "k", m -> {
            SelfRemovalScenario.startFiveVoters(m, "k");
            for (boolean kraftLeader : new boolean[] {false, true}) {
                preVote(m, m.steer(kraftLeader, 3, "k pre-vote"));
                pausedLeader(m, m.steer(kraftLeader, 3, "k paused leader"));
                checkQuorum(m, m.steer(kraftLeader, 3, "k check-quorum"));
            }
        });
    }

    private static final long FETCH_TIMEOUT_KAFKA = 3000, FETCH_TIMEOUT_KRAFT = 5000;

    private static long fetchTimeout(MixedQuorum m, int id) {
        return m.isKraft(id) ? FETCH_TIMEOUT_KRAFT : FETCH_TIMEOUT_KAFKA;
    }

    private List<Integer> followers(MixedQuorum m, int leader) throws Exception {
        List<Integer> out = new ArrayList<>(m.currentVoters(m.address(leader)));
        out.remove(Integer.valueOf(leader));
        return out;
    }

    private void preVote(MixedQuorum m, int[] l) throws Exception {
        int leader = l[0];
        int f = followers(m, leader).stream().filter(id -> m.isKraft(id) != m.isKraft(leader)).findFirst().orElseThrow();
        String what = "k: " + m.kind(f) + " follower " + f + " paused past its timeouts under " + m.kind(leader)
            + " leader " + leader + " (epoch " + l[1] + ")";
        m.sample(what + ": before", leader);
        m.pause(f, true);
        Thread.sleep(fetchTimeout(m, f) * 2 + 2000);
        m.pause(f, false);
        // Its timers have all expired: it asks for pre-votes at once; wait out a whole pre-vote round and more.
        Thread.sleep(fetchTimeout(m, f) + 3000);
        int[] after = m.describeQuorumOf(leader);
        report.check(what + ", resumed: the leader and epoch stay (pre-votes refused)", after != null && after[0] == 0
            && after[1] == leader && after[2] == l[1], "leader " + leader + " answers " + java.util.Arrays.toString(after)
            + "; leaders seen " + m.leaders);
        m.awaitCaughtUp(m.address(leader), f, what + ", resumed: it follows the leader to its end offset");
        m.sample(what + ": after", leader);
    }

    private void pausedLeader(MixedQuorum m, int[] l) throws Exception {
        int leader = l[0];
        String what = "k: " + m.kind(leader) + " leader " + leader + " (epoch " + l[1] + ") paused";
        m.sample(what + ": before", leader);
        m.pause(leader, true);
        int[] next;
        try {
            next = m.awaitLeader(l[1], what + ": the others elect a leader at a higher epoch");
        } finally {
            m.pause(leader, false);
        }
        int[] seen = awaitNotLeader(m, leader, 30_000);
        report.check(what + ", resumed: it no longer answers as leader", seen != null,
            "still leader after 30 s: " + java.util.Arrays.toString(m.describeQuorumOf(leader)));
        m.awaitCaughtUp(m.address(next[0]), leader, what + ", resumed: it follows leader " + next[0]
            + " to its end offset");
        m.sample(what + ": after", next[0]);
    }

    private void checkQuorum(MixedQuorum m, int[] l) throws Exception {
        int leader = l[0];
        List<Integer> followers = followers(m, leader);
        List<Integer> stopped = followers.subList(1, followers.size());
        String what = "k: " + m.kind(leader) + " leader " + leader + " (epoch " + l[1] + ") with followers " + stopped
            + " paused (" + followers.get(0) + " still fetching)";
        m.sample(what + ": before", leader);
        long start = System.currentTimeMillis();
        for (int id : stopped) m.pause(id, true);
        int[] seen;
        long elapsed;
        try {
            seen = awaitNotLeader(m, leader, 30_000);
            elapsed = System.currentTimeMillis() - start;
        } finally {
            for (int id : stopped) m.pause(id, false);
        }
        // The window is 1.5 x the fetch timeout from the last time a majority had fetched, shortly before the pause.
        long window = fetchTimeout(m, leader) * 3 / 2;
        report.check(what + ": it resigns by check-quorum while running (after " + elapsed + " ms; window "
            + window + " ms, so not before " + fetchTimeout(m, leader) + " ms)", seen != null
            && elapsed >= fetchTimeout(m, leader), "answer " + java.util.Arrays.toString(seen) + " after " + elapsed + " ms");
        int[] next = m.awaitLeader(l[1], what + ", resumed: a leader at a higher epoch");
        m.awaitAllCaughtUp(m.address(next[0]), 3, what + ", resumed: the quorum commits again");
        m.sample(what + ": after", next[0]);
    }

    /**
     * Polls {@code id}'s own DescribeQuorum until it no longer answers as leader: an error (a Kafka controller that
     * does not lead) or another leader's answer (a {@code kraft} node sends it on to the leader it knows); null on
     * timeout.
     */
    private static int[] awaitNotLeader(MixedQuorum m, int id, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            int[] d = m.describeQuorumOf(id);
            if (d != null && (d[0] != 0 || d[1] != id)) return d;
            Thread.sleep(100);
        }
        return null;
    }
}
