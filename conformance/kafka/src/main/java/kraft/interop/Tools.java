package kraft.interop;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.tools.FeatureCommand;
import org.apache.kafka.tools.MetadataQuorumCommand;

/**
 * Kafka's {@code kafka-metadata-quorum} and {@code kafka-features} (in this JVM) and our {@code kraft} CLI (a child
 * process).
 */
final class Tools {
    private final String kraft;

    Tools(String kraft) {
        this.kraft = kraft;
    }

    /** Runs {@code MetadataQuorumCommand} as {@code kafka-metadata-quorum} does, without its System.exit. */
    static Procs.Result kafka(String... args) throws Exception {
        return inProcess(MetadataQuorumCommand.class, args);
    }

    /** Runs {@code FeatureCommand} as {@code kafka-features} does, without its System.exit. */
    static Procs.Result features(String... args) throws Exception {
        return inProcess(FeatureCommand.class, args);
    }

    private static synchronized Procs.Result inProcess(Class<?> tool, String... args) throws Exception {
        Method main = tool.getDeclaredMethod("mainNoExit", String[].class);
        main.setAccessible(true);
        PrintStream out = System.out, err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream(), e = new ByteArrayOutputStream();
        int code;
        try {
            System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
            code = (int) main.invoke(null, (Object) args);
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
        return new Procs.Result(code, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    }

    /** The {@code kraft} binary (for a process the caller drives itself, e.g. {@code describe --watch}). */
    String kraftPath() {
        return kraft;
    }

    Procs.Result kraft(String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(kraft);
        cmd.addAll(List.of(args));
        return Procs.run(cmd, 120);
    }

    /** {@code Label:   value} lines of {@code describe --status}, by label. */
    static Map<String, String> statusFields(String text) {
        Map<String, String> fields = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            int colon = line.indexOf(':');
            if (colon <= 0 || line.startsWith(" ")) continue;
            fields.put(line.substring(0, colon), line.substring(colon + 1).trim());
        }
        return fields;
    }

    /** Rows of the {@code describe --replication} table, cells trimmed (the first row is the header). */
    static List<List<String>> table(String text) {
        List<List<String>> rows = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.isBlank()) continue;
            List<String> row = new ArrayList<>();
            for (String cell : line.split("\t")) row.add(cell.trim());
            rows.add(row);
        }
        return rows;
    }
}
