package org.k2bench.core.metrics;

import java.io.OutputStream;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;

/**
 * A latency distribution recorded in nanoseconds (HdrHistogram, 3 significant digits) and
 * reported in milliseconds. Distributions from several recorders are combined with
 * {@link #add}, never by averaging percentiles.
 */
public final class LatencyHistogram {
  private final Histogram h = new Histogram(3_600_000_000_000L, 3);

  public synchronized void recordNanos(long nanos) {
    h.recordValue(Math.max(0, Math.min(nanos, h.getHighestTrackableValue())));
  }

  public synchronized void add(LatencyHistogram other) {
    h.add(other.copy());
  }

  public synchronized Histogram copy() {
    return h.copy();
  }

  public synchronized long count() {
    return h.getTotalCount();
  }

  public synchronized double percentileMs(double p) {
    return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(p) / 1e6;
  }

  public synchronized double meanMs() {
    return h.getTotalCount() == 0 ? Double.NaN : h.getMean() / 1e6;
  }

  public synchronized double minMs() {
    return h.getTotalCount() == 0 ? Double.NaN : h.getMinValue() / 1e6;
  }

  public synchronized double maxMs() {
    return h.getTotalCount() == 0 ? Double.NaN : h.getMaxValue() / 1e6;
  }

  /** count, mean, min, p1, p50, p90, p99, p99.9, max (ms). */
  public synchronized Map<String, Object> summary() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("count", h.getTotalCount());
    m.put("mean", round(meanMs()));
    m.put("min", round(minMs()));
    m.put("p1", round(percentileMs(1)));
    m.put("p50", round(percentileMs(50)));
    m.put("p90", round(percentileMs(90)));
    m.put("p99", round(percentileMs(99)));
    m.put("p999", round(percentileMs(99.9)));
    m.put("max", round(maxMs()));
    return m;
  }

  static Double round(double v) {
    return Double.isNaN(v) ? null : Math.round(v * 1000) / 1000.0;
  }

  /** Appends this distribution to an HdrHistogram log (readable by the Python hdrhistogram package). */
  public synchronized void writeLog(OutputStream out, String tag, long startMs, long endMs) {
    HistogramLogWriter w = new HistogramLogWriter(new PrintStream(out, true));
    Histogram c = h.copy();
    c.setTag(tag);
    c.setStartTimeStamp(startMs);
    c.setEndTimeStamp(endMs);
    w.outputIntervalHistogram(c);
  }
}
