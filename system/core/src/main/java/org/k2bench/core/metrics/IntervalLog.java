package org.k2bench.core.metrics;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;
import org.HdrHistogram.Recorder;

/**
 * Per-process measurements: one HdrHistogram {@link Recorder} per tag, written as tagged
 * interval histograms to an HdrHistogram log once per interval. The log is the raw data of
 * a run: distributions are merged from it across processes and intervals (never by
 * averaging percentiles), and its intervals give time series and the trimming of warm-up
 * and cool-down. Tags are created on first use.
 *
 * <p>Clients (system/ycsb) record {@code rot}, {@code wot}, {@code write}: latency in
 * microseconds from the intended start time; {@code rot_rounds}: one value per read-only
 * transaction, the wide-area rounds it took (0 = all-local); {@code staleness}:
 * microseconds, one value per key read; {@code snapshot_lag}: microseconds, one value per
 * read-only transaction of a system that reads snapshots in the past (K2, PaRiS*);
 * {@code <op>_error}: latency of failed operations; {@code schedule_lag}: microseconds, per
 * paced operation, how late it started against the pacing schedule; {@code cache_miss}: one
 * value per key read that is not replicated in the reader's datacenter, 1 if it was fetched
 * from another datacenter and 0 if a cache served it (K2, PaRiS*). Servers record
 * {@code replication_lag:<origin>><here>}: microseconds from a write's commit in its origin
 * datacenter to its visibility here. Every process's transport records
 * {@code lateness:<wan|local>:<path>}: microseconds, per delivered message, from its
 * emulated due time to its delivery ({@code lateness:faulted} for one a partition or
 * delay fault held back; see InChannel), and its JVM's heap once per
 * interval, in MB ({@code jvm:heap_*_mb}, see
 * {@link #recordJvmMemory}).
 */
public final class IntervalLog implements AutoCloseable, ProcessMetrics.Sink {
  /**
   * A fixed range, one hour in microseconds (larger values are clamped to it): an
   * auto-resizing histogram grows past the range its log header declares, which the
   * Python reader of the logs (hdrhistogram) cannot decode.
   */
  public static final long HIGHEST_VALUE = 3_600_000_000L;

  private final Map<String, Recorder> recorders = new ConcurrentHashMap<>();
  private final Map<String, Histogram> recycled = new ConcurrentHashMap<>();
  private final HistogramLogWriter writer;
  private final PrintStream out;
  private final Thread flusher;
  private final long intervalMs;
  private volatile boolean closed;
  private volatile boolean jvmGauges;
  private long intervalStartMs;
  /** Interval boundaries fall on {@code originMs + k * intervalMs}. */
  private volatile long originMs;

  public IntervalLog(Path log, long intervalMs) throws IOException {
    this.intervalMs = intervalMs;
    this.out = new PrintStream(new FileOutputStream(log.toFile()), false, "UTF-8");
    this.writer = new HistogramLogWriter(out);
    long now = System.currentTimeMillis();
    writer.outputLogFormatVersion();
    writer.outputStartTime(now);
    writer.setBaseTime(now);
    writer.outputBaseTime(now);
    writer.outputLegend();
    out.flush();
    this.intervalStartMs = now;
    this.originMs = now;
    this.flusher = new Thread(this::flushLoop, "k2bench-hlog");
    flusher.setDaemon(true);
    flusher.start();
  }

  @Override
  public void record(String tag, long value) {
    recorders.computeIfAbsent(tag, t -> new Recorder(1, HIGHEST_VALUE, 3))
        .recordValue(Math.min(HIGHEST_VALUE, Math.max(0, value)));
  }

  /**
   * Puts interval boundaries on {@code startMs + k * interval} (the run's common start), so
   * the measurement window, which starts and ends on whole intervals after the start,
   * contains whole intervals of every client.
   */
  public void alignTo(long startMs) {
    originMs = startMs;
    flusher.interrupt();
  }

  private void flushLoop() {
    while (!closed) {
      long now = System.currentTimeMillis();
      long origin = originMs;
      long next = origin + (Math.floorDiv(now - origin, intervalMs) + 1) * intervalMs;
      try {
        Thread.sleep(next - now);
      } catch (InterruptedException e) {
        if (closed) {
          return;
        }
        flush(); // re-aligned: close the interval that ran up to now
        continue;
      }
      flush();
    }
  }

  /**
   * Also records this JVM's heap once per interval (the log of the process's
   * {@link ProcessMetrics}, one per JVM): {@code jvm:heap_live_mb}, the heap in use after
   * the last collection (the live set plus what that collection left; before the first
   * collection, all of the heap in use), {@code jvm:heap_committed_mb} and
   * {@code jvm:heap_max_mb} (-Xmx).
   */
  void recordJvmMemory(boolean on) {
    jvmGauges = on;
  }

  static final String HEAP_LIVE = "jvm:heap_live_mb";
  static final String HEAP_COMMITTED = "jvm:heap_committed_mb";
  static final String HEAP_MAX = "jvm:heap_max_mb";

  private void recordHeap() {
    java.util.Set<String> heapPools = new java.util.HashSet<>();
    long used = 0;
    long committed = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP && pool.isValid()) {
        heapPools.add(pool.getName());
        MemoryUsage now = pool.getUsage();
        used += now.getUsed();
        committed += now.getCommitted();
      }
    }
    // The heap as the most recent collection of any collector left it: every pool, not only
    // the collected ones (a pool's own after-collection usage is only updated when that pool
    // is collected: G1's old generation not by young collections).
    com.sun.management.GcInfo last = null;
    for (var gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (gc instanceof com.sun.management.GarbageCollectorMXBean g) {
        com.sun.management.GcInfo info = g.getLastGcInfo();
        if (info != null && (last == null || info.getEndTime() > last.getEndTime())) {
          last = info;
        }
      }
    }
    long live = used; // before the first collection: all of the heap in use
    if (last != null) {
      live = 0;
      for (Map.Entry<String, MemoryUsage> e : last.getMemoryUsageAfterGc().entrySet()) {
        if (heapPools.contains(e.getKey())) {
          live += e.getValue().getUsed();
        }
      }
    }
    record(HEAP_LIVE, mb(live));
    record(HEAP_COMMITTED, mb(committed));
    long max = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getMax();
    if (max > 0) {
      record(HEAP_MAX, mb(max));
    }
  }

  private static long mb(long bytes) {
    return (bytes + (1 << 19)) >> 20; // to the nearest MB
  }

  /** Writes one interval histogram per tag that saw values since the last flush. */
  private synchronized void flush() {
    if (jvmGauges) {
      recordHeap();
    }
    long end = System.currentTimeMillis();
    for (Map.Entry<String, Recorder> e : recorders.entrySet()) {
      String tag = e.getKey();
      Histogram h = e.getValue().getIntervalHistogram(recycled.get(tag));
      recycled.put(tag, h);
      if (h.getTotalCount() == 0) {
        continue;
      }
      h.setTag(tag);
      h.setStartTimeStamp(intervalStartMs);
      h.setEndTimeStamp(end);
      writer.outputIntervalHistogram(h);
    }
    out.flush();
    intervalStartMs = end;
  }

  @Override
  public void close() {
    closed = true;
    flusher.interrupt();
    try {
      flusher.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    flush();
    out.close();
  }
}
