package org.k2bench.core.server;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;

/**
 * Which other datacenters this server can currently reach: heartbeats to its equivalent
 * server (the same shard) in every other datacenter. A datacenter is suspected when a
 * heartbeat has gone unanswered for {@code timeoutMs} plus the link's round-trip time
 * (dead, paused, or cut off by a partition), and trusted again as soon as a heartbeat sent
 * within that time is answered.
 *
 * <p>The K2 paper leaves failure detection open (§VI-A: replication "can proceed if at
 * least one replica datacenter of each key in those writes is available", and non-replica
 * datacenters "send their remote read requests to the available replica datacenters");
 * this is the simplest detector that gives "available" a meaning: the transport answers a
 * heartbeat on the emulated link itself, so a heartbeat sees what a message of the
 * protocol would see (latency, partitions, a stopped or killed process), and a reply held
 * back by a partition only counts for the time it was sent.
 *
 * <p>Runs on its server's thread: {@link #tick} from the server's periodic tick, replies
 * on {@code thread}.
 */
public final class FailureDetector {
  private final Endpoint ep;
  private final Topology topology;
  private final int shard;
  private final Executor thread;
  private final long timeoutMs;
  private final long intervalMs;
  /** Per datacenter: the send time of the newest heartbeat it answered. */
  private final long[] lastAnsweredSendMs;
  /**
   * Per datacenter: the send time of the oldest heartbeat sent since the last answer that
   * is still unanswered, or -1 (a datacenter not asked yet is not suspected).
   */
  private final long[] unansweredSinceMs;
  private final boolean[] suspected;
  private long nextPingMs;
  private long lastTickMs;
  /** When this server last resumed after a stall of its own (no heartbeats went out). */
  private long resumedMs;
  /** Heartbeats sent and not yet answered or given up (they count in the endpoint's pending calls). */
  private final java.util.concurrent.atomic.AtomicInteger outstanding = new java.util.concurrent.atomic.AtomicInteger();
  private final IntConsumer onSuspect;
  private final IntConsumer onTrust;
  private final java.util.function.LongSupplier clock;

  /**
   * @param timeoutMs how long a datacenter may leave heartbeats unanswered before it is
   *     suspected (the fail-over timeout)
   * @param onSuspect called on the server thread with a datacenter that became suspected
   * @param onTrust called on the server thread with a suspected datacenter that answered
   * @param clock wall time in ms (the server's; tests drive their own)
   */
  public FailureDetector(Endpoint ep, Topology topology, int shard, Executor thread, long timeoutMs,
      java.util.function.LongSupplier clock, IntConsumer onSuspect, IntConsumer onTrust) {
    long nowMs = clock.getAsLong();
    this.clock = clock;
    this.ep = ep;
    this.topology = topology;
    this.shard = shard;
    this.thread = thread;
    this.timeoutMs = timeoutMs;
    // Several heartbeats per timeout, so one delayed by jitter does not raise a suspicion.
    this.intervalMs = Math.max(20, timeoutMs / 4);
    this.lastAnsweredSendMs = new long[topology.numDcs()];
    this.suspected = new boolean[topology.numDcs()];
    this.unansweredSinceMs = new long[topology.numDcs()];
    java.util.Arrays.fill(lastAnsweredSendMs, nowMs); // trusted until shown otherwise
    java.util.Arrays.fill(unansweredSinceMs, -1);
    this.lastTickMs = nowMs;
    this.resumedMs = nowMs;
    this.onSuspect = onSuspect;
    this.onTrust = onTrust;
  }

  /** Sends the heartbeats that are due and updates suspicions (on the server thread). */
  public void tick(long nowMs) {
    if (nowMs - lastTickMs > Math.max(2 * intervalMs, 500)) {
      // This server itself was stopped or starved (SIGSTOP, a long pause): it sent no
      // heartbeats meanwhile, so their absence says nothing about the others.
      resumedMs = nowMs;
    }
    lastTickMs = nowMs;
    if (nowMs >= nextPingMs) {
      nextPingMs = nowMs + intervalMs;
      for (int d = 0; d < topology.numDcs(); d++) {
        if (d != ep.dc()) {
          ping(d, nowMs);
        }
      }
    }
    for (int d = 0; d < topology.numDcs(); d++) {
      if (d != ep.dc() && !suspected[d] && unansweredSinceMs[d] >= 0
          && nowMs - Math.max(unansweredSinceMs[d], resumedMs) > allowanceMs(d)) {
        suspected[d] = true;
        onSuspect.accept(d);
      }
    }
  }

  private void ping(int d, long sentMs) {
    CompletableFuture<Long> f = ep.ping(topology.serverId(d, shard), 0);
    outstanding.incrementAndGet();
    if (unansweredSinceMs[d] < 0) {
      unansweredSinceMs[d] = sentMs;
    }
    // A call nobody answers is forgotten after this (bounded pending calls to a dead node).
    f.orTimeout(2 * timeoutMs, TimeUnit.MILLISECONDS);
    f.whenComplete((rtt, err) -> outstanding.decrementAndGet());
    f.whenCompleteAsync((rtt, err) -> answered(d, sentMs, err == null), thread);
  }

  private void answered(int d, long sentMs, boolean ok) {
    if (!ok || sentMs < lastAnsweredSendMs[d]) {
      return;
    }
    lastAnsweredSendMs[d] = sentMs;
    // Heartbeats sent after this one may be unanswered yet; the next one sent is the oldest
    // counted (suspicion comes at most one interval later than it could).
    unansweredSinceMs[d] = -1;
    // Trusted again only by a heartbeat sent within the allowance: an old one held back by
    // a partition and delivered at the heal says nothing about now.
    if (suspected[d] && clock.getAsLong() - sentMs <= allowanceMs(d)) {
      suspected[d] = false;
      onTrust.accept(d);
    }
  }

  /** How long a heartbeat to {@code d} may go unanswered: the timeout plus the link's round trip. */
  private long allowanceMs(int d) {
    return timeoutMs + (long) Math.ceil(topology.rttMs(ep.dc(), d) + 2 * topology.jitterMs());
  }

  /** Whether datacenter {@code dc} is suspected now. */
  public boolean suspected(int dc) {
    return suspected[dc];
  }

  /** Heartbeats in flight: calls of the endpoint that are not the protocol's. */
  public int outstanding() {
    return outstanding.get();
  }

  /** How many datacenters are suspected now. */
  public int suspectedCount() {
    int n = 0;
    for (boolean s : suspected) {
      n += s ? 1 : 0;
    }
    return n;
  }
}
