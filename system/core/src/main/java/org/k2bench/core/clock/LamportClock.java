package org.k2bench.core.clock;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A Lamport clock whose timestamps carry the stamping node in their low bits (K2 §III-A):
 * {@code timestamp = (counter << NODE_BITS) | nodeId}. Timestamps are unique across nodes
 * and totally ordered consistently with causality; they are the versions, EVTs, LVTs and
 * read timestamps of every protocol.
 */
public final class LamportClock {
  public static final int NODE_BITS = 16;
  private static final long NODE_MASK = (1L << NODE_BITS) - 1;

  private final int nodeId;
  private final AtomicLong counter = new AtomicLong();

  public LamportClock(int nodeId) {
    if (nodeId < 0 || nodeId > NODE_MASK) {
      throw new IllegalArgumentException("node id " + nodeId + " does not fit in " + NODE_BITS + " bits");
    }
    this.nodeId = nodeId;
  }

  public int nodeId() {
    return nodeId;
  }

  /** Advances the clock for a local event or a send and returns the new counter. */
  public long tick() {
    return counter.incrementAndGet();
  }

  /** A fresh unique timestamp (ticks the clock). */
  public long nextTimestamp() {
    return timestamp(tick(), nodeId);
  }

  /** The current time as a timestamp, without ticking. */
  public long now() {
    return timestamp(counter.get(), nodeId);
  }

  public long counter() {
    return counter.get();
  }

  /** Receive rule: counter = max(counter, remote) + 1. */
  public long observeCounter(long remoteCounter) {
    return counter.accumulateAndGet(remoteCounter, (mine, theirs) -> Math.max(mine, theirs) + 1);
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
