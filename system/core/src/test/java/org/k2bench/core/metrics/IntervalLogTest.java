package org.k2bench.core.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

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
}
