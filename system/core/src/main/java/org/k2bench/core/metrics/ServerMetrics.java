package org.k2bench.core.metrics;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The interval log of a server process (all its servers share it), if one was asked for
 * ({@code k2bench-server serve --metrics-log}); recording is a no-op otherwise, as in tests.
 */
public final class ServerMetrics {
  private static volatile IntervalLog log;

  private ServerMetrics() {}

  /** Starts logging to {@code path}, one interval per {@code intervalMs}. */
  public static synchronized void open(Path path, long intervalMs) throws IOException {
    if (log != null) {
      throw new IllegalStateException("the server metrics log is already open");
    }
    Path parent = path.toAbsolutePath().getParent();
    if (parent != null) {
      java.nio.file.Files.createDirectories(parent);
    }
    log = new IntervalLog(path, intervalMs);
  }

  public static void record(String tag, long value) {
    IntervalLog l = log;
    if (l != null) {
      l.record(tag, value);
    }
  }

  /** Flushes and closes the log (at shutdown). */
  public static synchronized void close() {
    if (log != null) {
      log.close();
      log = null;
    }
  }
}
