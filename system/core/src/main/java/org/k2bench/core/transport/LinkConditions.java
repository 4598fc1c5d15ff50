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
  /**
   * Where each datacenter's clients send their requests: their own datacenter, or while its
   * storage is down another one (a kill with {@code clients: redirect}; the replica-placement
   * paper's failure, §VIII-E). Replaced whole, never written in place.
   */
  private volatile int[] servingDc;

  public LinkConditions(Topology topology) {
    int d = topology.numDcs();
    servingDc = identity(d);
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

  /** Whether a fault holds (partition) or slows (extra delay) this link now. */
  public boolean faulted(int fromDc, int toDc) {
    synchronized (extraNanos) {
      return extraNanos[fromDc][toDc] != 0 || holdUntilNanos[fromDc][toDc] - System.nanoTime() > 0;
    }
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

  /** Heals every partition and removes every extra delay (redirects stay: {@link #redirect}). */
  public void clearFaults() {
    synchronized (extraNanos) {
      for (int a = 0; a < extraNanos.length; a++) {
        java.util.Arrays.fill(extraNanos[a], 0);
        java.util.Arrays.fill(holdUntilNanos[a], 0);
        java.util.Arrays.fill(dropping[a], false);
      }
    }
  }

  /** The datacenter whose servers the clients of {@code dc} use now. */
  public int servingDc(int dc) {
    return servingDc[dc];
  }

  /**
   * From now on the clients of each key datacenter use the servers of its value, every
   * other datacenter's their own: one replacement, so a client never sees a redirect lapse
   * while the faults file is applied again.
   */
  public void redirect(java.util.Map<Integer, Integer> to) {
    int[] next = identity(servingDc.length);
    to.forEach((from, dc) -> next[from] = dc);
    servingDc = next;
  }

  private static int[] identity(int d) {
    int[] out = new int[d];
    for (int i = 0; i < d; i++) {
      out[i] = i;
    }
    return out;
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
