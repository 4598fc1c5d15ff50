package org.k2bench.core.transport;

import java.util.concurrent.ThreadLocalRandom;
import org.k2bench.core.topology.Topology;

/**
 * The emulated one-way delay of every directed datacenter pair: RTT/2 from the
 * matrix (kept in nanoseconds, never truncated to whole ms), the intra-datacenter delay
 * inside a datacenter, optional uniform jitter, and a per-link extra delay that tests and
 * fault injection can change at run time. Without WAN emulation (the network itself has the
 * latency) only the extra delays apply. Thread-safe.
 */
public final class LinkConditions {
  private final long[][] baseNanos;
  private final long[][] extraNanos;
  /** Partitioned links: messages are held until this System.nanoTime(), or dropped. */
  private final long[][] holdUntilNanos;
  private final boolean[][] dropping;
  private final long jitterNanos;

  public LinkConditions(Topology topology) {
    int d = topology.numDcs();
    baseNanos = new long[d][d];
    extraNanos = new long[d][d];
    holdUntilNanos = new long[d][d];
    dropping = new boolean[d][d];
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

  /**
   * The delay to apply to one message now: base + extra + a jitter sample; on a link
   * partitioned in hold mode, at least until the partition heals (then the base delay).
   */
  public long sampleDelayNanos(int fromDc, int toDc) {
    long d;
    long holdFor;
    synchronized (extraNanos) {
      d = baseNanos[fromDc][toDc] + extraNanos[fromDc][toDc];
      holdFor = holdUntilNanos[fromDc][toDc] - System.nanoTime();
    }
    if (jitterNanos > 0) {
      d += ThreadLocalRandom.current().nextLong(jitterNanos + 1);
    }
    return holdFor > 0 ? Math.max(d, holdFor + baseNanos[fromDc][toDc]) : d;
  }

  /** Whether messages on this link are being dropped (a partition in drop mode). */
  public boolean dropping(int fromDc, int toDc) {
    synchronized (extraNanos) {
      return dropping[fromDc][toDc];
    }
  }

  /**
   * Partitions two datacenters, both directions: until {@code untilNanos} (System.nanoTime)
   * their messages are held and then delivered in order ({@code drop} false), or dropped.
   */
  public void partition(int a, int b, long untilNanos, boolean drop) {
    synchronized (extraNanos) {
      holdUntilNanos[a][b] = holdUntilNanos[b][a] = drop ? 0 : untilNanos;
      dropping[a][b] = dropping[b][a] = drop;
    }
  }

  /** Heals every partition and removes every extra delay. */
  public void clearFaults() {
    synchronized (extraNanos) {
      for (int a = 0; a < extraNanos.length; a++) {
        java.util.Arrays.fill(extraNanos[a], 0);
        java.util.Arrays.fill(holdUntilNanos[a], 0);
        java.util.Arrays.fill(dropping[a], false);
      }
    }
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
