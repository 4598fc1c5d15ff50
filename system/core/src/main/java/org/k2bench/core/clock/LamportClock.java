package org.k2bench.core.clock;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A Lamport clock whose timestamps carry the stamping node in their low bits (K2 §III-A):
 * {@code timestamp = (counter << NODE_BITS) | nodeId}. Timestamps are unique across nodes
 * and totally ordered consistently with causality; they are the versions, EVTs, LVTs and
 * read timestamps of every protocol.
 *
 * <p>A hybrid clock ({@link #hybrid}; {@link ClockKind#HYBRID}) is the same clock with a
 * physical floor, as the PaRiS paper defines an HLC (§IV-B): its counter is the maximum of
 * the physical clock and the highest counter seen plus one, so it advances with wall time
 * when there are no events. Its counter is wall-clock milliseconds since {@link #HYBRID_EPOCH_MS}
 * in the bits above {@link #LOGICAL_BITS} and a logical count below them: up to 256 events
 * per millisecond per node before it runs ahead of wall time. Timestamps keep the node in
 * their low bits, so versions stay unique whichever clock made them.
 */
public final class LamportClock {
  public static final int NODE_BITS = 16;
  private static final long NODE_MASK = (1L << NODE_BITS) - 1;
  /** Logical bits below a hybrid counter's milliseconds. */
  public static final int LOGICAL_BITS = 8;
  /** 2020-01-01T00:00:00Z: hybrid counters count from here, so timestamps stay positive until 2037. */
  public static final long HYBRID_EPOCH_MS = 1_577_836_800_000L;

  private final int nodeId;
  private final AtomicLong counter = new AtomicLong();
  /** Wall-clock milliseconds for a hybrid clock; null for a pure Lamport clock. */
  private final LongSupplier wallMs;
  /** A sleeping {@link ClockHistory} sampler that the next advance wakes (null: none). */
  private volatile Thread watcher;

  public LamportClock(int nodeId) {
    this(nodeId, null);
  }

  private LamportClock(int nodeId, LongSupplier wallMs) {
    if (nodeId < 0 || nodeId > NODE_MASK) {
      throw new IllegalArgumentException("node id " + nodeId + " does not fit in " + NODE_BITS + " bits");
    }
    this.nodeId = nodeId;
    this.wallMs = wallMs;
  }

  /** A hybrid logical clock reading wall time from {@code wallMs} (tests pass a fake). */
  public static LamportClock hybrid(int nodeId, LongSupplier wallMs) {
    return new LamportClock(nodeId, wallMs);
  }

  public boolean isHybrid() {
    return wallMs != null;
  }

  /** The hybrid counter at wall time {@code ms}: the physical part of a hybrid clock. */
  public static long hybridCounter(long ms) {
    return Math.max(0, ms - HYBRID_EPOCH_MS) << LOGICAL_BITS;
  }

  /** The wall time a hybrid timestamp stands for, in ms (its logical part dropped). */
  public static long wallMsOf(long ts) {
    return (counterOf(ts) >>> LOGICAL_BITS) + HYBRID_EPOCH_MS;
  }

  /** 0 for a Lamport clock; the physical part now for a hybrid one. */
  private long floor() {
    return wallMs == null ? 0 : hybridCounter(wallMs.getAsLong());
  }

  public int nodeId() {
    return nodeId;
  }

  /** Advances the clock for a local event or a send and returns the new counter. */
  public long tick() {
    if (wallMs == null) {
      return advanced(counter.incrementAndGet());
    }
    long f = floor();
    return counter.accumulateAndGet(f, (mine, physical) -> Math.max(mine + 1, physical));
  }

  /** A fresh unique timestamp (ticks the clock). */
  public long nextTimestamp() {
    return timestamp(tick(), nodeId);
  }

  /**
   * The current time as a timestamp, without ticking (a hybrid clock first catches up with
   * wall time, which is not an event).
   */
  public long now() {
    return timestamp(counter(), nodeId);
  }

  public long counter() {
    return wallMs == null ? counter.get() : counter.accumulateAndGet(floor(), Math::max);
  }

  /** Receive rule: counter = max(counter, remote) + 1 (and at least wall time, hybrid). */
  public long observeCounter(long remoteCounter) {
    long f = floor();
    return advanced(counter.accumulateAndGet(remoteCounter, (mine, theirs) -> Math.max(Math.max(mine, theirs) + 1, f)));
  }

  /**
   * Receive rule for the wall clock: catches a Lamport clock up with wall time, as a hybrid
   * one always is (Karma's hybrid put versions), and returns the new counter.
   */
  public long observeWallClock() {
    return observeCounter(hybridCounter(System.currentTimeMillis()));
  }

  /** Wakes a sleeping sampler at the next advance ({@code null}: no longer). */
  void watch(Thread sampler) {
    watcher = sampler;
  }

  private long advanced(long c) {
    Thread w = watcher;
    if (w != null) {
      watcher = null;
      java.util.concurrent.locks.LockSupport.unpark(w);
    }
    return c;
  }

  /** Advances past a timestamp seen in a message body (e.g. a read timestamp). */
  public long observeTimestamp(long ts) {
    return observeCounter(counterOf(ts));
  }

  public static long timestamp(long counter, int nodeId) {
    return (counter << NODE_BITS) | nodeId;
  }

  public static long counterOf(long ts) {
    return ts >>> NODE_BITS;
  }

  public static int nodeOf(long ts) {
    return (int) (ts & NODE_MASK);
  }

  public static String format(long ts) {
    return counterOf(ts) + "." + nodeOf(ts);
  }
}
