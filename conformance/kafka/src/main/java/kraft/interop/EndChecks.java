package kraft.interop;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.ControlRecordUtils;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;

/**
 * The checks every mixed-quorum scenario ends with, in one place: once the quorum is quiet (a leader,
 * every running replica at its end offset, HW = end offset),
 * <ul>
 * <li>one leader per epoch over every (epoch, leader) either kind reported;</li>
 * <li>every running replica's log holds the leader's batches below the final HW, byte for byte (CRC and bytes);</li>
 * <li>no committed entry lost: the batches below every HW a leader ever reported are, byte for byte, the first
 * batches of the final log, and the reported HWs never went back;</li>
 * <li>committed voter sets: every CommittedVoters a {@code kraft} leader reported is the voter set at HW - 1 in the
 * final log (Kafka's DescribeQuorum v2 has no such field), and in the order reported they never go back to an
 * older VotersRecord;</li>
 * <li>DescribeQuorum from both kinds agreeing: Kafka's {@code describe --status} and ours against the leader.</li>
 * </ul>
 */
final class EndChecks {
    private EndChecks() {}

    static void run(MixedQuorum m, String label) throws Exception {
        Report report = m.report;
        int[] l = m.awaitLeader(-1, label + ": a leader");
        String addr = m.address(l[0]);
        StringBuilder last = new StringBuilder();
        boolean quiet = m.allCaughtUp(addr, 1, 60_000, last, true);
        report.check(label + ": every running replica listed by the leader and at its end offset, HW = end offset",
            quiet, last.toString());
        MixedQuorum.Sample end = m.sample(label + ": end", l[0]);
        if (end == null) {
            report.check(label + ": the leader answers at the end", false, "leader " + l[0] + " moved");
            return;
        }
        long hw = end.hw();
        List<String> ref = end.batches();

        report.check(label + ": one leader per epoch, as either kind reported it " + m.leaders,
            m.leaders.size() > 0, "no leader seen");

        List<Integer> listed = new ArrayList<>();
        for (List<String> row : m.replication(addr)) {
            if (row.size() == 7 && !row.get(0).equals("NodeId")) listed.add(Integer.parseInt(row.get(0)));
        }
        List<Integer> missing = m.ids().stream().filter(id -> m.running(id) && !listed.contains(id)).toList();
        report.check(label + ": every running replica is a voter or observer in leader " + l[0] + "'s DescribeQuorum "
            + listed, missing.isEmpty(), "missing: " + missing);
        for (int id : listed) {
            if (id == l[0] || !m.running(id)) continue;
            List<String> theirs = MixedQuorum.batchesBelow(m.segment(id), hw);
            report.check(label + ": replica " + id + " (" + kind(m, id) + ") holds leader " + l[0] + "'s "
                + ref.size() + " batches below HW " + hw + " byte for byte", !ref.isEmpty() && ref.equals(theirs),
                "first difference: " + MixedQuorum.firstDifference(ref, theirs));
        }

        boolean kept = true, forward = true;
        String lost = "", back = "";
        long previous = -1;
        for (MixedQuorum.Sample s : m.samples) {
            boolean prefix = s.hw() <= hw && s.batches().size() <= ref.size()
                && ref.subList(0, s.batches().size()).equals(s.batches());
            if (!prefix && kept) {
                kept = false;
                lost = s + "\n first difference: " + MixedQuorum.firstDifference(s.batches(), ref);
            }
            if (s.hw() >= 0 && s.hw() < previous && forward) {
                forward = false;
                back = "HW " + previous + " then " + s.hw() + " (" + s.label() + ")";
            }
            if (s.hw() >= 0) previous = Math.max(previous, s.hw());
        }
        report.check(label + ": no committed entry lost (" + m.samples.size() + " reported HWs; the batches below each"
            + " are the final log's, byte for byte)", kept, lost);
        report.check(label + ": reported HWs never went back", forward, back);

        TreeMap<Long, List<Integer>> voters = voterSets(m, hw);
        boolean match = true, monotonic = true;
        String mismatch = "";
        long governing = Long.MIN_VALUE;
        int judged = 0;
        for (MixedQuorum.Sample s : m.samples) {
            if (s.committed() == null || s.hw() <= 0) continue;
            judged++;
            Map.Entry<Long, List<Integer>> at = voters.floorEntry(s.hw() - 1);
            if (at == null || !at.getValue().equals(s.committed())) {
                if (match) mismatch = s.label() + ": HW " + s.hw() + " CommittedVoters " + s.committed()
                    + " but the final log's voter set at " + (s.hw() - 1) + " is " + (at == null ? "unknown" : at);
                match = false;
            } else if (at.getKey() < governing) {
                monotonic = false;
            } else {
                governing = at.getKey();
            }
        }
        report.check(label + ": every (HW, CommittedVoters) a kraft leader reported (" + judged + ") is the voter set"
            + " at HW - 1 in the final log " + voters, match && judged > 0, judged == 0 ? "none reported" : mismatch);
        report.check(label + ": committed voter sets never went back to an older VotersRecord", monotonic, voters.toString());

        Scenarios.compareStatus(report, m.tools, label + ": DescribeQuorum via leader " + l[0] + " (" + kind(m, l[0])
            + "), Kafka's tool and ours", addr, addr, m.isKraft(l[0]), null);
    }

    static String kind(MixedQuorum m, int id) {
        return m.isKraft(id) ? "kraft" : "Kafka";
    }

    /**
     * The voter sets of the final log below {@code hw}, by the offset where each takes effect: the bootstrap
     * snapshot's at -1 (the first replica whose snapshot has a Voters record), then every VotersRecord.
     */
    static TreeMap<Long, List<Integer>> voterSets(MixedQuorum m, long hw) throws Exception {
        TreeMap<Long, List<Integer>> out = new TreeMap<>();
        for (int id : m.ids()) {
            Path snapshot = m.segment(id).resolveSibling("00000000000000000000-0000000000.checkpoint");
            TreeMap<Long, List<Integer>> boot = voterRecords(snapshot, Long.MAX_VALUE);
            if (!boot.isEmpty()) {
                out.put(-1L, boot.lastEntry().getValue());
                break;
            }
        }
        int[] leader = m.currentLeader();
        if (leader != null) out.putAll(voterRecords(m.segment(leader[0]), hw));
        return out;
    }

    /** The VotersRecords of a log or snapshot file below {@code hw}: offset to sorted voter ids. */
    static TreeMap<Long, List<Integer>> voterRecords(Path file, long hw) throws Exception {
        TreeMap<Long, List<Integer>> out = new TreeMap<>();
        if (!Files.exists(file)) return out;
        for (MutableRecordBatch batch : MemoryRecords.readableRecords(ByteBuffer.wrap(MixedQuorum.logBytes(file))).batches()) {
            if (batch.lastOffset() >= hw) break;
            if (!batch.isControlBatch()) continue;
            for (Record record : batch) {
                if (ControlRecordType.parse(record.key()) != ControlRecordType.KRAFT_VOTERS) continue;
                VotersRecord v = ControlRecordUtils.deserializeVotersRecord(record);
                out.put(record.offset(), v.voters().stream().map(VotersRecord.Voter::voterId).sorted().toList());
            }
        }
        return out;
    }
}
