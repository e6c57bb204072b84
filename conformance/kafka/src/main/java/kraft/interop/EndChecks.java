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
            // A log may start past 0 (KIP-630): compare from the later of the two starts; below it, snapshots.
            long from = Math.max(first(ref), first(theirs));
            List<String> a = from(ref, from), b = from(theirs, from);
            boolean covered = !a.isEmpty() || snapshotEnd(m, id) >= Math.min(hw, first(ref));
            report.check(label + ": replica " + id + " (" + kind(m, id) + ") holds leader " + l[0] + "'s "
                + a.size() + " batches below HW " + hw + (from > 0 && from != Long.MAX_VALUE ? " from offset "
                + from : "") + " byte for byte", covered && a.equals(b), "first difference: "
                + MixedQuorum.firstDifference(a, b) + (covered ? "" : "; no batch to compare and no snapshot"
                + " reaching HW"));
        }

        boolean kept = true, forward = true;
        String lost = "", back = "";
        long previous = -1;
        for (MixedQuorum.Sample s : m.samples) {
            long from = Math.max(first(ref), first(s.batches()));
            List<String> then = from(s.batches(), from), now = from(ref, from);
            boolean prefix = s.hw() <= hw && then.size() <= now.size() && now.subList(0, then.size()).equals(then);
            if (!prefix && kept) {
                kept = false;
                lost = s + "\n first difference: " + MixedQuorum.firstDifference(then, now);
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

        snapshotsAgree(m, label);

        Scenarios.compareStatus(report, m.tools, label + ": DescribeQuorum via leader " + l[0] + " (" + kind(m, l[0])
            + "), Kafka's tool and ours", addr, addr, m.isKraft(l[0]), null);
    }

    /**
     * Every snapshot id held by two replicas or more: the same records in every copy (Kafka's reader: offset, key,
     * value and headers of every record; batch timestamps and CRCs aside, since each Kafka controller writes its
     * own snapshots with its own clock, so two controllers' snapshots of one id differ in those bytes). A copy
     * fetched with FetchSnapshot is checked byte for byte against its source where it was installed.
     */
    static void snapshotsAgree(MixedQuorum m, String label) throws Exception {
        List<Path> dirs = new ArrayList<>();
        for (int id : m.ids()) dirs.add(m.metadataDir(id));
        int shared = 0;
        String differ = "";
        for (Map.Entry<String, List<Path>> e : SnapshotFiles.byId(dirs).entrySet()) {
            if (e.getValue().size() < 2) continue;
            shared++;
            List<String> first = records(e.getValue().get(0));
            for (Path other : e.getValue().subList(1, e.getValue().size())) {
                List<String> theirs = records(other);
                if (differ.isEmpty() && first != null && theirs != null && !theirs.equals(first)) {
                    differ = e.getKey() + ": " + e.getValue().get(0) + " and " + other;
                }
            }
        }
        if (shared == 0) return;
        m.report.check(label + ": the same snapshot id holds the same records on every replica that has it ("
            + shared + " ids held by two replicas or more)", differ.isEmpty(), differ);
    }

    /**
     * The records of a snapshot file as Kafka reads them: offset, key, value, headers; every batch CRC-checked.
     * Null if the file is gone.
     */
    static List<String> records(Path file) throws Exception {
        List<String> out = new ArrayList<>();
        java.util.HexFormat hex = java.util.HexFormat.of();
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (java.nio.file.NoSuchFileException e) {
            return null; // deleted by retention since it was listed
        }
        for (MutableRecordBatch batch : MemoryRecords.readableRecords(ByteBuffer.wrap(bytes)).batches()) {
            batch.ensureValid();
            for (Record r : batch) {
                out.add(r.offset() + " " + batch.isControlBatch() + " " + (r.key() == null ? "-" : hex.formatHex(bytes(r.key())))
                    + " " + (r.value() == null ? "-" : hex.formatHex(bytes(r.value()))) + " " + r.headers().length);
            }
        }
        return out;
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** The base offset of a batch as {@link MixedQuorum#batchesBelow} describes it. */
    static long base(String batch) {
        return Long.parseLong(batch.substring(0, batch.indexOf('-')));
    }

    /** The first batch's base offset, or Long.MAX_VALUE if none. */
    static long first(List<String> batches) {
        return batches.isEmpty() ? Long.MAX_VALUE : base(batches.get(0));
    }

    static List<String> from(List<String> batches, long offset) {
        return batches.stream().filter(b -> base(b) >= offset).toList();
    }

    /** The end offset of replica {@code id}'s latest snapshot (bootstrap aside), or -1. */
    static long snapshotEnd(MixedQuorum m, int id) throws Exception {
        List<SnapshotFiles.Snapshot> all = SnapshotFiles.snapshots(m.metadataDir(id));
        return all.isEmpty() ? -1 : all.get(all.size() - 1).endOffset();
    }

    static String kind(MixedQuorum m, int id) {
        return m.isKraft(id) ? "kraft" : "Kafka";
    }

    /**
     * The voter sets of the final log below {@code hw}, by the offset where each takes effect: the bootstrap
     * snapshot's at -1 (the first replica whose snapshot has a Voters record; else a static quorum's configured
     * voters), then every VotersRecord.
     */
    static TreeMap<Long, List<Integer>> voterSets(MixedQuorum m, long hw) throws Exception {
        TreeMap<Long, List<Integer>> out = new TreeMap<>();
        for (int id : m.ids()) {
            Path snapshot = m.segment(id).resolveSibling("00000000000000000000-0000000000.checkpoint");
            // Kafka 4.0's --no-initial-controllers writes none (4.1+ one without voters).
            if (!Files.exists(snapshot)) continue;
            TreeMap<Long, List<Integer>> boot = voterRecords(snapshot, Long.MAX_VALUE);
            if (!boot.isEmpty()) {
                out.put(-1L, boot.lastEntry().getValue());
                break;
            }
        }
        // A static quorum (kraft.version 0): its bootstrap snapshots hold no voters; the configured ones govern.
        if (out.isEmpty() && m.staticVoters != null) out.put(-1L, m.staticVoters.stream().sorted().toList());
        // Every replica's snapshots (their voters at end offset - 1, as Kafka loads them) and logs: with log
        // starts past 0 no single file holds the whole history; the committed parts agree, which the checks above
        // judge.
        for (int id : m.ids()) {
            for (SnapshotFiles.Snapshot s : SnapshotFiles.snapshots(m.metadataDir(id))) {
                if (s.endOffset() > hw) continue;
                TreeMap<Long, List<Integer>> in = voterRecords(s.path(), Long.MAX_VALUE);
                if (!in.isEmpty()) out.put(s.endOffset() - 1, in.lastEntry().getValue());
            }
            out.putAll(voterRecords(m.segment(id), hw));
        }
        int[] leader = m.currentLeader();
        if (leader != null) out.putAll(voterRecords(m.segment(leader[0]), hw));
        return out;
    }

    /** The VotersRecords of a log or snapshot file below {@code hw}: offset to sorted voter ids. */
    static TreeMap<Long, List<Integer>> voterRecords(Path file, long hw) throws Exception {
        TreeMap<Long, List<Integer>> out = new TreeMap<>();
        boolean log = file.getFileName().toString().endsWith(".log");
        if (log ? !Files.isDirectory(file.getParent()) : !Files.exists(file)) return out;
        byte[] bytes;
        try {
            bytes = MixedQuorum.logBytes(file);
        } catch (java.nio.file.NoSuchFileException e) {
            return out; // a snapshot deleted by retention (a Kafka controller deletes even the bootstrap one)
        }
        for (MutableRecordBatch batch : MemoryRecords.readableRecords(ByteBuffer.wrap(bytes)).batches()) {
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
