package kraft.interop;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Child processes: long-running servers with their output in a log file, and short commands. */
final class Procs {
    private Procs() {}

    record Result(int code, String out, String err) {
        @Override
        public String toString() {
            return "exit " + code + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    /** Runs a command to completion (killed after {@code timeoutSec}); stdout and stderr are captured. */
    static Result run(List<String> command, long timeoutSec) throws IOException, InterruptedException {
        Path out = Files.createTempFile("interop", ".out");
        Path err = Files.createTempFile("interop", ".err");
        try {
            Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!p.waitFor(timeoutSec, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor();
                return new Result(-1, Files.readString(out), Files.readString(err) + "\n(killed after " + timeoutSec + " s)");
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /** Starts a server whose stdout and stderr go to {@code log}. */
    static Process start(List<String> command, Path log) throws IOException {
        Files.createDirectories(log.getParent());
        return new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    }

    /** Waits until something accepts connections on 127.0.0.1:port or the process dies. */
    static void waitForPort(Process p, int port, long timeoutMs, Path log) throws IOException, InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            if (!p.isAlive()) throw new IOException("process exited with " + p.exitValue() + " before listening on " + port + "; see " + log);
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException e) {
                Thread.sleep(100);
            }
        }
        throw new IOException("nothing listening on port " + port + " after " + timeoutMs + " ms; see " + log);
    }

    /** SIGTERM, then SIGKILL after 10 s. */
    static void stop(Process p) throws InterruptedException {
        if (p == null || !p.isAlive()) return;
        p.destroy();
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** kill -9, waiting for the process to be gone; null is a no-op. */
    static void kill(Process p) throws InterruptedException {
        if (p == null) return;
        p.destroyForcibly();
        p.waitFor();
    }

    static List<String> list(String... parts) {
        return new ArrayList<>(List.of(parts));
    }
}
