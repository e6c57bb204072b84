package kraft.interop;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * (pm) A real Prometheus server (Debian's {@code prometheus} package, {@code /usr/bin/prometheus}, or
 * {@code $PROMETHEUS}) scrapes {@code kraft node --metrics-listener} (a kraft node joined to three Apache Kafka
 * controllers) and {@code kraft describe --watch --metrics-listener} once a second, with its own configuration and
 * data directory on free loopback ports. Its query API ({@code /api/v1/query}) must give, for both targets, the
 * leader and the HW Kafka's own {@code kafka-metadata-quorum describe --status} reports and a growing age of the
 * uncommitted voter change while Kafka's {@code add-controller} of the kraft node waits with both Kafka followers
 * stopped (SIGSTOP), then age 0 and four committed voters after SIGCONT. A missing Prometheus is a failed check.
 */
record PrometheusScenario(Report report, Tools tools, Path work, String kraft) {
    private static final int OURS = 5;
    private static final String P = "kafka_server_raft_metrics_";
    private static final List<String> JOBS = List.of("kraft-node", "kraft-watch");
    /** As scenario r: Kafka's check-quorum (1.5 x fetch timeout) outlasts the pause. */
    private static final Map<String, String> KAFKA_TIMEOUTS = Map.of("controller.quorum.election.timeout.ms", "6000",
        "controller.quorum.fetch.timeout.ms", "12000");

    /** The example alert rules of impl/README.md (the driver runs in conformance/kafka). */
    private static final Path ALERTS = Path.of("../../impl/prometheus/kraft-alerts.yml");

    static String prometheusBinary() {
        return System.getenv().getOrDefault("PROMETHEUS", "/usr/bin/prometheus");
    }

    void run() throws Exception {
        if (!Files.isExecutable(Path.of(prometheusBinary()))) {
            report.check("pm: Prometheus installed", false, prometheusBinary() + " not found (apt-get install prometheus;"
                + " run.sh installs it when it runs as root)");
            return;
        }
        try (MixedQuorum m = new MixedQuorum(report, tools, work, kraft, KAFKA_TIMEOUTS)) {
            List<Process> started = new ArrayList<>();
            try {
                steps(m, started);
            } finally {
                for (Process p : started) Procs.stop(p);
            }
        }
    }

    /** One instant query: value per {@code job} label. */
    private static Map<String, Double> query(HttpClient http, int port, String promql) throws Exception {
        URI uri = URI.create("http://127.0.0.1:" + port + "/api/v1/query?query="
            + URLEncoder.encode(promql, StandardCharsets.UTF_8));
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build(),
            HttpResponse.BodyHandlers.ofString());
        JsonNode root = new ObjectMapper().readTree(r.body());
        Map<String, Double> out = new TreeMap<>();
        if (!"success".equals(root.path("status").asText())) return out;
        for (JsonNode series : root.path("data").path("result")) {
            out.put(series.path("metric").path("job").asText(), Double.parseDouble(series.path("value").get(1).asText()));
        }
        return out;
    }

    /** Polls {@code promql} (30 s) until both jobs answer and {@code ok} holds for every value; returns the last. */
    private Map<String, Double> await(HttpClient http, int port, String promql, Predicate<Double> ok, String label)
            throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        Map<String, Double> last = Map.of();
        while (System.currentTimeMillis() < deadline) {
            last = query(http, port, promql);
            if (last.keySet().containsAll(JOBS) && last.values().stream().allMatch(ok)) {
                report.check("Prometheus: " + label, true, "");
                return last;
            }
            Thread.sleep(300);
        }
        report.check("Prometheus: " + label, false, promql + " -> " + last);
        return last;
    }

    /** The example alert rules pass promtool and Prometheus evaluates both without error. */
    private void rulesLoaded(HttpClient http, int port) throws Exception {
        Path promtool = Path.of(prometheusBinary()).resolveSibling("promtool");
        Procs.Result check = Procs.run(List.of(promtool.toString(), "check", "rules", ALERTS.toString()), 30);
        report.check("promtool check rules " + ALERTS.getFileName(), check.code() == 0, check.toString());
        long deadline = System.currentTimeMillis() + 15_000;
        List<String> healthy = List.of();
        while (System.currentTimeMillis() < deadline) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/api/v1/rules")).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
            List<String> names = new ArrayList<>();
            for (JsonNode group : new ObjectMapper().readTree(r.body()).path("data").path("groups")) {
                for (JsonNode rule : group.path("rules")) {
                    if ("ok".equals(rule.path("health").asText())) names.add(rule.path("name").asText());
                }
            }
            healthy = names;
            if (names.size() == 2) break;
            Thread.sleep(300);
        }
        report.equal("Prometheus evaluates the example alert rules", List.of("KRaftVoterChangeUncommitted",
            "KRaftNoLeader"), healthy);
    }

    private void steps(MixedQuorum m, List<Process> started) throws Exception {
        KafkaQuorum kafka = m.kafka;
        kafka.startInitial(1, 2, 3);
        int leader = m.awaitLeader(-1, "the Kafka controllers elect a leader")[0];
        String addr = kafka.address(leader);
        String all = String.join(",", kafka.address(1), kafka.address(2), kafka.address(3));
        int nodePort = KafkaQuorum.freePort();
        int watchPort = KafkaQuorum.freePort();
        int promPort = KafkaQuorum.freePort();
        m.ours.startJoinerFormattedByKafka(OURS, kafka.clusterId, kafka.initialControllers(), "--election-timeout-ms",
            "1000", "--fetch-timeout-ms", "14000", "--metrics-listener", "127.0.0.1:" + nodePort);
        Process watch = Procs.start(List.of(kraft, "describe", "--watch", "--bootstrap-controller", all,
            "--metrics-listener", "127.0.0.1:" + watchPort), work.resolve("watch.log"));
        started.add(watch);
        Path config = work.resolve("prometheus.yml");
        Files.writeString(config, String.join("\n", "global:", "  scrape_interval: 1s", "  scrape_timeout: 1s",
            "  evaluation_interval: 1s", "rule_files: ['" + ALERTS.toAbsolutePath() + "']", "scrape_configs:",
            "  - job_name: kraft-node", "    static_configs: [{targets: ['127.0.0.1:" + nodePort + "']}]",
            "  - job_name: kraft-watch", "    static_configs: [{targets: ['127.0.0.1:" + watchPort + "']}]", ""));
        Path log = work.resolve("prometheus.log");
        Process prom = Procs.start(List.of(prometheusBinary(), "--config.file=" + config,
            "--storage.tsdb.path=" + work.resolve("prometheus-data"), "--web.listen-address=127.0.0.1:" + promPort,
            "--log.level=warn"), log);
        started.add(prom);
        Procs.waitForPort(prom, promPort, 30_000, log);
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        m.awaitCaughtUp(addr, OURS, "the kraft node fetches Kafka's log as an observer");
        await(http, promPort, "up", v -> v == 1.0, "both targets up");
        await(http, promPort, P + "current_leader", v -> v == leader, "current_leader is Kafka's leader " + leader);
        await(http, promPort, P + "committed_voters", v -> v == 3.0, "committed_voters 3 on a quiet quorum");
        await(http, promPort, P + "uncommitted_voter_change_age_seconds", v -> v == 0.0, "no uncommitted change: age 0");
        rulesLoaded(http, promPort);

        // add-controller of the kraft node with both Kafka followers stopped: appended, not committed.
        List<Integer> followers = new ArrayList<>(List.of(1, 2, 3));
        followers.remove(Integer.valueOf(leader));
        for (int f : followers) m.pause(f, true);
        Process add;
        try {
            Path props = m.ours.dir.resolve("controller-" + OURS + ".properties");
            Files.writeString(props, String.join("\n", "process.roles=controller", "node.id=" + OURS,
                "controller.listener.names=CONTROLLER", "listeners=CONTROLLER://" + m.ours.address(OURS),
                "metadata.log.dir=" + m.ours.dataDir(OURS), ""));
            add = Procs.start(Main.java("org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-controller", addr,
                "--command-config", props.toString(), "add-controller"), work.resolve("add-controller.log"));
            started.add(add);
            Map<String, Double> age = await(http, promPort, P + "uncommitted_voter_change_age_seconds",
                v -> v >= 2.0, "the uncommitted add-controller ages (>= 2 s) on both targets");
            Map<String, String> kafkaView = Tools.statusFields(Tools.kafka("--bootstrap-controller", addr, "describe",
                "--status").out());
            Map<String, Double> hw = query(http, promPort, P + "high_watermark");
            Map<String, Double> lead = query(http, promPort, P + "current_leader");
            for (String job : JOBS) {
                report.equal("Prometheus " + job + ": high_watermark = Kafka's HighWatermark while uncommitted",
                    kafkaView.get("HighWatermark"), hw.containsKey(job) ? Long.toString(hw.get(job).longValue()) : null);
                report.equal("Prometheus " + job + ": current_leader = Kafka's LeaderId",
                    kafkaView.get("LeaderId"), lead.containsKey(job) ? Integer.toString(lead.get(job).intValue()) : null);
            }
            await(http, promPort, P + "number_of_voters", v -> v == 4.0, "number_of_voters 4 (the add appended)");
            await(http, promPort, P + "committed_voters", v -> v == 3.0, "committed_voters still 3");
            await(http, promPort, P + "last_voters_record_committed", v -> v == 0.0, "last VotersRecord uncommitted");
            // Prometheus answers with its latest scrape (one a second): wait for one past the first reading.
            double first = age.values().stream().mapToDouble(Double::doubleValue).max().orElse(0.0);
            Map<String, Double> later = await(http, promPort, P + "uncommitted_voter_change_age_seconds",
                v -> v > first, "age queried again after a later scrape");
            for (String job : JOBS) {
                report.check("Prometheus " + job + ": the age grows", later.getOrDefault(job, 0.0)
                    > age.getOrDefault(job, 0.0), age + " then " + later);
            }
        } finally {
            for (int f : followers) m.pause(f, false);
        }
        add.waitFor(60, java.util.concurrent.TimeUnit.SECONDS);
        await(http, promPort, P + "committed_voters", v -> v == 4.0, "committed_voters 4 after SIGCONT");
        await(http, promPort, P + "uncommitted_voter_change_age_seconds", v -> v == 0.0, "age 0 once committed");
        report.check("pm: every process still running at the end", m.allAlive() && watch.isAlive() && prom.isAlive(),
            "see " + work);
    }
}
