package org.k2bench.core.metrics;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The interval log of a process, if it has one: a server process's (all its servers share
 * it, {@code k2bench-server serve --metrics-log}) or a client process's (the workload's log,
 * see {@link #use}). The protocols record replication lag here and the transport the
 * emulation's lateness; recording is a no-op without a log, as in tests.
 */
public final class ProcessMetrics {
  private static volatile IntervalLog log;

  private ProcessMetrics() {}

  /** Starts logging to {@code path}, one interval per {@code intervalMs}. */
  public static synchronized void open(Path path, long intervalMs) throws IOException {
    if (log != null) {
      throw new IllegalStateException("the process metrics log is already open");
    }
    Path parent = path.toAbsolutePath().getParent();
    if (parent != null) {
      java.nio.file.Files.createDirectories(parent);
    }
    log = new IntervalLog(path, intervalMs);
  }

  /** Records into a log the process already writes (a client's workload log) until {@link #release}. */
  public static synchronized void use(IntervalLog existing) {
    if (log != null) {
      throw new IllegalStateException("the process metrics log is already open");
    }
    log = existing;
  }

  /** Stops recording into a log given to {@link #use} (its owner closes it). */
  public static synchronized void release(IntervalLog existing) {
    if (log == existing) {
      log = null;
    }
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
