package kraft.interop;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import org.apache.kafka.common.utils.internals.AppInfoParser;

/**
 * Apache Kafka as the oracle. Usage: {@code Main --kraft PATH_TO_KRAFT_BINARY --work DIR}, plus
 * {@code --only h,j} (scenario letters; a-f run together), {@code --runs N} and {@code --seed S} (scenario j's
 * kill loop: N runs, seeds S, S+1, ...), {@code --controller-classpath CP} (the Kafka release whose controllers,
 * {@code kafka.Kafka}, and storage tool run, e.g. 4.0.1; default: the driver's own, {@code pom.xml}'s),
 * {@code --python P} (the interpreter with kafka-python for scenario t).
 * Runs every scenario, prints one check per line and ends with
 * {@code kafka interop: S scenarios, C checks, D divergences (Apache Kafka V)}; exits 1 iff D > 0.
 * Work directories (with every controller's log) are deleted on success and kept on failure.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        String kraft = null;
        Path work = null;
        java.util.Set<String> only = new java.util.TreeSet<>();
        int runs = 2;
        long seed = 1;
        String python = null;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--kraft" -> kraft = args[i + 1];
                case "--work" -> work = Path.of(args[i + 1]).toAbsolutePath();
                case "--only" -> only.addAll(List.of(args[i + 1].split(",")));
                case "--runs" -> runs = Integer.parseInt(args[i + 1]);
                case "--seed" -> seed = Long.parseLong(args[i + 1]);
                case "--controller-classpath" -> controllerClasspath = args[i + 1];
                case "--python" -> python = args[i + 1];
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (kraft == null || work == null) {
            System.err.println("usage: Main --kraft PATH_TO_KRAFT_BINARY --work DIR [--only a,g,...] [--runs N] [--seed S]");
            System.exit(2);
        }
        Files.createDirectories(work);
        // If this JVM is stopped early (Ctrl-C, a CI timeout), stop the controllers and nodes it started.
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
            ProcessHandle.current().descendants().forEach(ProcessHandle::destroy)));
        String version = AppInfoParser.getVersion();
        String controllers = controllerVersion();
        if (!controllers.equals(version)) version = version + " tools, " + controllers + " controllers";
        Report report = new Report();
        Tools tools = new Tools(kraft);
        Scenarios scenarios = new Scenarios(report, tools, work, kraft);
        scenarios.only = only;
        scenarios.runs = runs;
        scenarios.seed = seed;
        scenarios.python = python;
        scenarios.runAll();
        int divergences = report.divergenceCount();
        if (divergences == 0) {
            deleteTree(work);
        } else {
            System.out.println("kept logs and data under " + work);
        }
        System.out.println(report.summary(version));
        System.exit(divergences == 0 ? 0 : 1);
    }

    /** A command line that runs {@code mainClass} in a new JVM with this JVM's class path (a Kafka tool). */
    static List<String> java(String mainClass, String... args) {
        List<String> cmd = new ArrayList<>(List.of(javaBinary(), "-Xshare:auto", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", System.getProperty("java.class.path"), mainClass));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** The class path of the Kafka release the controllers run (null: this JVM's). */
    static String controllerClasspath;

    private static String controllerClasspath() {
        return controllerClasspath != null ? controllerClasspath : System.getProperty("java.class.path");
    }

    /** The version of the Kafka release the controllers run, read from its kafka-clients jar. */
    static String controllerVersion() throws Exception {
        // Read the way Kafka's AppInfoParser does, from the jar's properties file.
        for (String entry : controllerClasspath().split(java.io.File.pathSeparator)) {
            if (!entry.contains("kafka-clients")) continue;
            try (var jar = new java.util.jar.JarFile(entry)) {
                var e = jar.getEntry("kafka/kafka-version.properties");
                if (e == null) continue;
                java.util.Properties p = new java.util.Properties();
                try (var in = jar.getInputStream(e)) {
                    p.load(in);
                }
                return p.getProperty("version", "unknown");
            }
        }
        return AppInfoParser.getVersion();
    }

    /** A command line that runs a Kafka tool of the controllers' release ({@code StorageTool}). */
    static List<String> javaController(String mainClass, String... args) {
        List<String> cmd = new ArrayList<>(List.of(javaBinary(), "-Xshare:auto", "-XX:TieredStopAtLevel=1",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", controllerClasspath(), mainClass));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** A Kafka server JVM of the controllers' release: small heap, C1 only (starts faster on 2 shared cores), logs at INFO. */
    static List<String> javaServer(String mainClass, String... args) {
        List<String> cmd = new ArrayList<>(List.of(javaBinary(), "-Xms64m", "-Xmx384m", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
            "-Dorg.slf4j.simpleLogger.showDateTime=true", "-cp", controllerClasspath(), mainClass));
        cmd.addAll(List.of(args));
        return cmd;
    }

    private static String javaBinary() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    static void deleteTree(Path root) throws Exception {
        if (!Files.exists(root)) return;
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        }
    }
}
