package org.k2bench.core.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IntervalLogTest {
  @TempDir
  Path dir;

  /**
   * Long latencies (an overloaded run) stay inside the range the log header declares, so
   * the Python reader can decode every interval; values past an hour are clamped.
   */
  @Test
  void largeValuesKeepTheDeclaredRange() throws Exception {
    Path log = dir.resolve("c.hlog");
    try (IntervalLog r = new IntervalLog(log, 10_000)) {
      r.record("rot", 250);
      r.record("rot", 600_000_000L); // ten minutes
      r.record("rot", 7_200_000_000L); // two hours: clamped
    }
    Histogram h = (Histogram) new HistogramLogReader(log.toFile()).nextIntervalHistogram();
    assertNotNull(h);
    assertEquals(3, h.getTotalCount());
    assertEquals(IntervalLog.HIGHEST_VALUE, h.getHighestTrackableValue(), "no auto-resize past the header");
    assertEquals(IntervalLog.HIGHEST_VALUE, h.getMaxValue(), IntervalLog.HIGHEST_VALUE / 1000.0);
    assertEquals(600_000_000L, h.getValueAtPercentile(50), 600_000);
  }

  /**
   * A process's own log (ProcessMetrics.open, or a client's log while ProcessMetrics.use has
   * it) carries its JVM's heap; a log ProcessMetrics has released, or never had (a client
   * inside the servers' process), does not, or the JVM would be counted twice.
   */
  @Test
  void onlyTheProcessLogRecordsTheHeap() throws Exception {
    byte[][] retained = new byte[64][];
    for (int i = 0; i < retained.length; i++) {
      retained[i] = new byte[1 << 20];
    }
    System.gc();
    Path own = dir.resolve("server.hlog");
    ProcessMetrics.open(own, 10_000);
    ProcessMetrics.close(); // its last interval is written at close
    java.util.Map<String, Long> ownTags = maxByTag(own);
    assertEquals(java.util.Set.of("jvm:heap_live_mb", "jvm:heap_committed_mb", "jvm:heap_max_mb"), ownTags.keySet());
    long maxMb = Runtime.getRuntime().maxMemory() >> 20;
    long live = ownTags.get("jvm:heap_live_mb");
    assertTrue(live >= 64 && live <= maxMb, "the 64 MB held survive the collection: " + ownTags);
    assertTrue(ownTags.get("jvm:heap_committed_mb") >= live, ownTags.toString());
    assertEquals(maxMb, ownTags.get("jvm:heap_max_mb"), maxMb / 100.0);

    Path used = dir.resolve("own-client.hlog");
    IntervalLog u = new IntervalLog(used, 10_000);
    ProcessMetrics.use(u);
    u.record("rot", 250);
    u.close(); // while used: the client's own JVM
    ProcessMetrics.release(u);
    assertTrue(maxByTag(used).containsKey("jvm:heap_live_mb"), maxByTag(used).toString());

    Path released = dir.resolve("released.hlog");
    IntervalLog r = new IntervalLog(released, 10_000);
    ProcessMetrics.use(r);
    ProcessMetrics.release(r);
    r.record("rot", 250);
    r.close();
    assertEquals(java.util.Set.of("rot"), maxByTag(released).keySet());
    assertTrue(retained[63].length > 0);
  }

  private static java.util.Map<String, Long> maxByTag(Path log) throws Exception {
    java.util.Map<String, Long> out = new java.util.HashMap<>();
    HistogramLogReader r = new HistogramLogReader(log.toFile());
    for (Histogram h; (h = (Histogram) r.nextIntervalHistogram()) != null; ) {
      out.merge(h.getTag(), h.getMaxValue(), Math::max);
    }
    return out;
  }
}
