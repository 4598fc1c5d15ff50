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
  /** Where a process's metrics go: its interval log, or a bench's own histograms. */
  public interface Sink {
    void record(String tag, long value);
  }

  private static volatile Sink log;

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
    IntervalLog l = new IntervalLog(path, intervalMs);
    l.recordJvmMemory(true);
    log = l;
  }

  /**
   * Records into a sink the caller owns until {@link #release}: a log the process already
   * writes (a client's workload log), or a bench's histograms.
   */
  public static synchronized void use(Sink existing) {
    if (log != null) {
      throw new IllegalStateException("the process metrics log is already open");
    }
    if (existing instanceof IntervalLog l) {
      l.recordJvmMemory(true); // the process's own log: its JVM's heap, too
    }
    log = existing;
  }

  /** Stops recording into a log given to {@link #use} (its owner closes it). */
  public static synchronized void release(Sink existing) {
    if (log == existing) {
      if (existing instanceof IntervalLog l) {
        l.recordJvmMemory(false);
      }
      log = null;
    }
  }

  public static void record(String tag, long value) {
    Sink l = log;
    if (l != null) {
      l.record(tag, value);
    }
  }

  /** Flushes and closes the log (at shutdown). */
  public static synchronized void close() {
    if (log instanceof IntervalLog l) {
      l.close();
    }
    log = null;
  }
}
