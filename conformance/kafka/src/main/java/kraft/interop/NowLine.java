package kraft.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code Now:} line {@code kraft add-voter} and {@code kraft remove-voter} print after a committed change:
 * {@code CommittedVoters [..]} served by a v3 leader or marked as computed from the metadata log, else
 * {@code CommittedVotersSource: not computed: <reason>}, never an empty list in its place.
 */
final class NowLine {
    private static final Pattern COMMITTED = Pattern.compile("Now: .*CommittedVoters \\[([0-9, ]*)\\]( \\(computed from the metadata log at HighWatermark \\d+\\))?");

    private NowLine() {}

    /** The committed ids the line lists when it marks them computed from the log; null if it lists none so. */
    static List<Integer> computedCommitted(String out) {
        Matcher m = COMMITTED.matcher(out);
        if (!m.find() || m.group(2) == null) return null;
        List<Integer> ids = new ArrayList<>();
        for (String s : m.group(1).split(",")) if (!s.isBlank()) ids.add(Integer.parseInt(s.trim()));
        return ids;
    }

    /**
     * Checks that a change's output lists {@code expected} as CommittedVoters computed from the log (a Kafka leader
     * serves DescribeQuorum v2 only).
     */
    static void check(Report report, String label, Procs.Result r, List<Integer> expected) {
        List<Integer> got = computedCommitted(r.out());
        report.check(label + ": the Now: line's CommittedVoters, computed from the log as describe does",
            expected.equals(got), "expected " + expected + ", got " + got + " in: " + r.out());
    }
}
