package org.k2bench.core.server;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntConsumer;
import java.util.function.LongSupplier;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;

/**
 * Which other datacenters this server can currently reach: heartbeats to its equivalent
 * server (the same shard) in every other datacenter. A datacenter is suspected when a
 * heartbeat has gone unanswered for {@code timeoutMs} plus the link's round-trip time
 * (dead, paused, or cut off by a partition), and trusted again once a heartbeat sent
 * within that time is answered. A datacenter that has not answered once yet is given
 * {@link #STARTUP_TIMEOUTS} times as long, and at least {@link #STARTUP_FLOOR_MS}:
 * processes start one by one, and a cold JVM on a busy machine can take seconds before it
 * answers anything.
 *
 * <p>The K2 paper leaves failure detection open (§VI-A: replication "can proceed if at
 * least one replica datacenter of each key in those writes is available", and non-replica
 * datacenters "send their remote read requests to the available replica datacenters");
 * this is the simplest detector that gives "available" a meaning. Heartbeats are answered
 * by the other side's transport and their answers taken by this side's transport, both
 * off the protocol threads, so they see what the network and the other process do
 * (latency, partitions, a stopped or killed process) and not how far behind a busy
 * protocol thread is on either side; an answer held back by a partition only counts for
 * the time its heartbeat was sent.
 *
 * <p>Suspicions change only in {@link #tick}, on the server's thread; answers are recorded
 * from whichever thread {@code answers} runs them on.
 */
public final class FailureDetector {
  private static final long NONE = -1;
  /** How many timeouts a datacenter that never answered may take (start-up). */
  public static final int STARTUP_TIMEOUTS = 5;
  /** The least a datacenter that never answered may take (start-up). */
  public static final long STARTUP_FLOOR_MS = 10_000;
  /**
   * A gap between two ticks longer than this (or half the timeout, if longer) means this
   * server's process was stopped: well above the server's 100 ms tick, so a busy protocol
   * thread that runs its ticks late is not taken for a stop.
   */
  public static final long MIN_STALL_MS = 250;
  private final Endpoint ep;
  private final Topology topology;
  private final int shard;
  private final Executor answers;
  private final long timeoutMs;
  private final long intervalMs;
  /** A gap between two ticks longer than this means this server itself was stopped. */
  private final long stallMs;
  /** Per datacenter: the send time of the newest heartbeat it answered. */
  private final AtomicLongArray lastAnsweredSendMs;
  /**
   * Per datacenter: the send time of the oldest heartbeat sent since the last answer that
   * is still unanswered, or {@link #NONE} (a datacenter not asked yet is not suspected).
   */
  private final AtomicLongArray unansweredSinceMs;
  /** Per datacenter: 1 once it answered a heartbeat. */
  private final java.util.concurrent.atomic.AtomicIntegerArray answeredOnce;
  private final boolean[] suspected;
  private long nextPingMs;
  private long lastTickMs;
  /** When this server last resumed after a stall of its own (no heartbeats went out). */
  private long resumedMs;
  /** Heartbeats sent and not yet answered or given up (they count in the endpoint's pending calls). */
  private final AtomicInteger outstanding = new AtomicInteger();
  private final IntConsumer onSuspect;
  private final IntConsumer onTrust;

  /**
   * @param answers where answers to heartbeats are recorded ({@code Runnable::run}: on the
   *     transport thread that took them; tests hold them back)
   * @param timeoutMs how long a datacenter may leave a heartbeat unanswered, beyond the
   *     link's round trip, before it is suspected (the fail-over timeout)
   * @param clock a monotonic time in ms (never stepped back), the same that {@link #tick} is given
   * @param onSuspect called in {@link #tick} with a datacenter that became suspected
   * @param onTrust called in {@link #tick} with a suspected datacenter that answered
   */
  public FailureDetector(Endpoint ep, Topology topology, int shard, Executor answers, long timeoutMs,
      LongSupplier clock, IntConsumer onSuspect, IntConsumer onTrust) {
    long nowMs = clock.getAsLong();
    this.ep = ep;
    this.topology = topology;
    this.shard = shard;
    this.answers = answers;
    this.timeoutMs = timeoutMs;
    // Several heartbeats per timeout, so one delayed by jitter does not raise a suspicion.
    this.intervalMs = Math.max(20, timeoutMs / 4);
    // A stop of P ms can raise a false suspicion only if P > 3/4 of the timeout (the oldest
    // unanswered heartbeat is at most an interval old when it starts).
    this.stallMs = Math.max(MIN_STALL_MS, timeoutMs / 2);
    this.lastAnsweredSendMs = new AtomicLongArray(topology.numDcs());
    this.unansweredSinceMs = new AtomicLongArray(topology.numDcs());
    this.answeredOnce = new java.util.concurrent.atomic.AtomicIntegerArray(topology.numDcs());
    this.suspected = new boolean[topology.numDcs()];
    for (int d = 0; d < topology.numDcs(); d++) {
      lastAnsweredSendMs.set(d, nowMs); // trusted until shown otherwise
      unansweredSinceMs.set(d, NONE);
    }
    this.lastTickMs = nowMs;
    this.resumedMs = nowMs;
    this.onSuspect = onSuspect;
    this.onTrust = onTrust;
  }

  /** Milliseconds of a clock that never steps back: the one servers give a detector and its {@link #tick}. */
  public static long monotonicMs() {
    return System.nanoTime() / 1_000_000;
  }

  /** Sends the heartbeats that are due and updates suspicions (on the server thread). */
  public void tick(long nowMs) {
    if (nowMs - lastTickMs > stallMs) {
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
      if (d == ep.dc()) {
        continue;
      }
      long allowance = allowanceMs(d);
      if (!suspected[d]) {
        long since = unansweredSinceMs.get(d);
        long silence = answeredOnce.get(d) == 1 ? allowance : Math.max(STARTUP_FLOOR_MS, STARTUP_TIMEOUTS * allowance);
        if (since != NONE && nowMs - Math.max(since, resumedMs) > silence) {
          suspected[d] = true;
          onSuspect.accept(d);
        }
      } else if (nowMs - lastAnsweredSendMs.get(d) <= allowance) {
        // Trusted again only by an answer to a heartbeat sent within the allowance: an old
        // one held back by a partition and delivered at the heal says nothing about now.
        suspected[d] = false;
        onTrust.accept(d);
      }
    }
  }

  private void ping(int d, long sentMs) {
    // Counted before it is sent: its answer may be recorded (on the transport's thread)
    // before ping() returns.
    outstanding.incrementAndGet();
    unansweredSinceMs.compareAndSet(d, NONE, sentMs);
    CompletableFuture<Long> f = ep.ping(topology.serverId(d, shard), 0);
    // A call nobody answers is forgotten after this (bounded pending calls to a dead node).
    f.orTimeout(2 * allowanceMs(d), TimeUnit.MILLISECONDS);
    f.whenComplete((rtt, err) -> outstanding.decrementAndGet());
    f.whenCompleteAsync((rtt, err) -> {
      if (err == null) {
        answered(d, sentMs);
      }
    }, answers);
  }

  private void answered(int d, long sentMs) {
    answeredOnce.set(d, 1);
    lastAnsweredSendMs.accumulateAndGet(d, sentMs, Math::max);
    // Heartbeats sent after this one may be unanswered yet; the next one sent is the oldest
    // counted (a suspicion comes at most one interval later than it could).
    long since = unansweredSinceMs.get(d);
    if (since != NONE && since <= sentMs) {
      unansweredSinceMs.compareAndSet(d, since, NONE);
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

  /** How many datacenters are suspected now. */
  public int suspectedCount() {
    int n = 0;
    for (boolean s : suspected) {
      n += s ? 1 : 0;
    }
    return n;
  }

  /** How many other datacenters have not answered a heartbeat yet. */
  public int neverAnsweredCount() {
    int n = 0;
    for (int d = 0; d < topology.numDcs(); d++) {
      n += d != ep.dc() && answeredOnce.get(d) == 0 ? 1 : 0;
    }
    return n;
  }

  /** When this server last resumed from a stall of its own (ms; its start if never). */
  public long resumedMs() {
    return resumedMs;
  }

  /** The longest a heartbeat may go unanswered before its datacenter is suspected. */
  public long maxAllowanceMs() {
    long max = 0;
    for (int d = 0; d < topology.numDcs(); d++) {
      max = Math.max(max, allowanceMs(d));
    }
    return max;
  }

  /** Heartbeats in flight: calls of the endpoint that are not the protocol's. */
  public int outstanding() {
    return outstanding.get();
  }
}
