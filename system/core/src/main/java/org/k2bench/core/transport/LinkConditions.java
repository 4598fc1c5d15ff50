package org.k2bench.core.transport;

import java.util.concurrent.ThreadLocalRandom;
import org.k2bench.core.topology.Topology;

/**
 * The emulated one-way delay of every directed datacenter pair (SPEC §5): RTT/2 from the
 * matrix (kept in nanoseconds, never truncated to whole ms), the intra-datacenter delay
 * inside a datacenter, optional uniform jitter, and a per-link extra delay that tests and
 * fault injection can change at run time. Without WAN emulation (the network itself has the
 * latency) only the extra delays apply. Thread-safe.
 */
public final class LinkConditions {
  private final long[][] baseNanos;
  private final long[][] extraNanos;
  private final long jitterNanos;

  public LinkConditions(Topology topology) {
    int d = topology.numDcs();
    baseNanos = new long[d][d];
    extraNanos = new long[d][d];
    for (int a = 0; a < d; a++) {
      for (int b = 0; b < d; b++) {
        double ms = a == b ? topology.intraDcDelayMs() : topology.rttMs(a, b) / 2.0;
        baseNanos[a][b] = topology.wanEmulation() ? Math.round(ms * 1_000_000.0) : 0;
      }
    }
    jitterNanos = topology.wanEmulation() ? Math.round(topology.jitterMs() * 1_000_000.0) : 0;
  }

  /** The configured one-way delay, without jitter. */
  public long baseDelayNanos(int fromDc, int toDc) {
    return baseNanos[fromDc][toDc];
  }

  /** The delay to apply to one message now: base + extra + a jitter sample. */
  public long sampleDelayNanos(int fromDc, int toDc) {
    long d;
    synchronized (extraNanos) {
      d = baseNanos[fromDc][toDc] + extraNanos[fromDc][toDc];
    }
    if (jitterNanos > 0) {
      d += ThreadLocalRandom.current().nextLong(jitterNanos + 1);
    }
    return d;
  }

  /** Adds {@code ms} of one-way delay from {@code fromDc} to {@code toDc} (0 to clear). */
  public void setExtraDelayMs(int fromDc, int toDc, double ms) {
    synchronized (extraNanos) {
      extraNanos[fromDc][toDc] = Math.round(ms * 1_000_000.0);
    }
  }

  public void clearExtraDelays() {
    synchronized (extraNanos) {
      for (long[] row : extraNanos) {
        java.util.Arrays.fill(row, 0);
      }
    }
  }
}
