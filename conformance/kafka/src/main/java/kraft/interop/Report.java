package kraft.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** Counts scenarios and checks; every failed check is a divergence from Apache Kafka, named by scenario. */
final class Report {
    private int scenarios;
    private int checks;
    private final List<String> divergences = new ArrayList<>();
    private String scenario = "(none)";
    private long started = -1;

    /** Prints the wall-clock time of the scenario that just ended, if any (for the README's cost line). */
    private void endScenario() {
        if (started >= 0) System.out.printf("   (%.1f s)%n", (System.currentTimeMillis() - started) / 1000.0);
        started = System.currentTimeMillis();
    }

    void scenario(String name) {
        endScenario();
        scenarios++;
        scenario = name;
        System.out.println("== scenario " + name);
    }

    /** One check: {@code ok} or a divergence with {@code detail}. Returns {@code ok}. */
    boolean check(String what, boolean ok, String detail) {
        checks++;
        if (ok) {
            System.out.println("   ok   " + what);
        } else {
            String line = scenario + ": " + what + ": " + detail;
            divergences.add(line);
            System.out.println("   DIVERGENCE " + what + ": " + detail);
        }
        return ok;
    }

    boolean equal(String what, Object kafka, Object ours) {
        return check(what, Objects.equals(kafka, ours), "Kafka " + kafka + " vs ours " + ours);
    }

    /** A scenario that could not run to the end: counted as one failed check, so it is never silent. */
    void aborted(Throwable e) {
        check("scenario ran to the end", false, e.toString());
        e.printStackTrace(System.out);
    }

    int divergenceCount() {
        return divergences.size();
    }

    String summary(String kafkaVersion) {
        endScenario();
        StringBuilder out = new StringBuilder();
        for (String d : divergences) out.append("divergence: ").append(d).append('\n');
        out.append(String.format("kafka interop: %d scenarios, %d checks, %d divergences (Apache Kafka %s)",
            scenarios, checks, divergences.size(), kafkaVersion));
        return out.toString();
    }
}
