package kraft.interop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * A metadata log directory ({@code __cluster_metadata-0}) as Kafka lays it out (KIP-630): segments
 * {@code %020d.log} named by base offset, snapshots {@code %020d-%010d.checkpoint} (end offset, epoch), a download
 * in progress {@code .checkpoint.part}, files waiting for deletion {@code .deleted}. Read the same way for both kinds.
 */
final class SnapshotFiles {
    private SnapshotFiles() {}

    static final String BOOTSTRAP = "00000000000000000000-0000000000.checkpoint";

    /** A snapshot file: its id (end offset, epoch) and path. */
    record Snapshot(long endOffset, int epoch, Path path) {
        String id() {
            return "(" + endOffset + ", " + epoch + ")";
        }
    }

    private static List<Path> list(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) return List.of();
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().toList();
        }
    }

    /** Every snapshot ({@code .checkpoint}) but the bootstrap one, oldest first. */
    static List<Snapshot> snapshots(Path dir) throws IOException {
        List<Snapshot> out = new ArrayList<>();
        for (Path p : list(dir)) {
            String name = p.getFileName().toString();
            if (!name.endsWith(".checkpoint") || name.equals(BOOTSTRAP) || name.length() != 20 + 1 + 10 + 11) continue;
            out.add(new Snapshot(Long.parseLong(name.substring(0, 20)), Integer.parseInt(name.substring(21, 31)), p));
        }
        return out;
    }

    /** Downloads in progress ({@code .checkpoint.part}). */
    static List<Path> parts(Path dir) throws IOException {
        return list(dir).stream().filter(p -> p.getFileName().toString().endsWith(".checkpoint.part")).toList();
    }

    /** The live segments ({@code .log}, not {@code .log.deleted}), by base offset. */
    static TreeMap<Long, Path> segments(Path dir) throws IOException {
        TreeMap<Long, Path> out = new TreeMap<>();
        for (Path p : list(dir)) {
            String name = p.getFileName().toString();
            if (name.length() == 24 && name.endsWith(".log")) out.put(Long.parseLong(name.substring(0, 20)), p);
        }
        return out;
    }

    /**
     * The log start offset as Kafka reads it on start-up: the base offset of the first live segment (-1 if none).
     * Kafka moves it only to a snapshot's end offset and deletes the segments wholly below it.
     */
    static long logStart(Path dir) throws IOException {
        TreeMap<Long, Path> s = segments(dir);
        return s.isEmpty() ? -1 : s.firstKey();
    }

    /** A one-line picture of the directory: log start, segments, snapshots, downloads. */
    static String describe(Path dir) throws IOException {
        List<String> snaps = snapshots(dir).stream().map(Snapshot::id).toList();
        return "log start " + logStart(dir) + ", " + segments(dir).size() + " segment(s) " + segments(dir).keySet()
            + ", snapshots " + snaps + ", .part " + parts(dir).size();
    }

    /** Every snapshot file of these directories by id, with the bytes of each copy: for "same id, same bytes". */
    static Map<String, List<Path>> byId(List<Path> dirs) throws IOException {
        Map<String, List<Path>> out = new TreeMap<>();
        for (Path d : dirs) {
            for (Snapshot s : snapshots(d)) out.computeIfAbsent(s.id(), k -> new ArrayList<>()).add(s.path());
        }
        return out;
    }

    /**
     * Kafka's {@code kafka-dump-log --cluster-metadata-decoder --files F1,F2,...} (class
     * {@code org.apache.kafka.tools.DumpLogSegments} of kafka-tools) in a child JVM.
     */
    static Procs.Result dump(List<Path> files) throws Exception {
        String joined = String.join(",", files.stream().map(Path::toString).toList());
        return Procs.run(Main.java("org.apache.kafka.tools.DumpLogSegments", "--cluster-metadata-decoder",
            "--files", joined), 120);
    }

    /**
     * Whether Kafka's dump of {@code snapshot} (one section of {@link #dump}'s output) reads it whole: Kafka's
     * "Snapshot end offset: E, epoch: P" line, a header, a footer and every batch valid. Null if fine, else why not.
     */
    static String judgeDump(String output, Snapshot snapshot) {
        int start = output.indexOf("Dumping " + snapshot.path());
        if (start < 0) return "no 'Dumping " + snapshot.path() + "' section";
        int end = output.indexOf("Dumping ", start + 8);
        String section = output.substring(start, end < 0 ? output.length() : end);
        if (!section.contains("Snapshot end offset: " + snapshot.endOffset() + ", epoch: " + snapshot.epoch())) {
            return "no 'Snapshot end offset: " + snapshot.endOffset() + ", epoch: " + snapshot.epoch() + "' line";
        }
        if (!section.contains("SnapshotHeader")) return "no SnapshotHeader";
        if (!section.contains("SnapshotFooter")) return "no SnapshotFooter";
        if (!section.contains("isvalid: true") || section.contains("isvalid: false")) return "a batch is not valid";
        return null;
    }
}
