package org.k2bench.karma;

import java.util.HashMap;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;

/**
 * The round trips from one datacenter to every datacenter, as the Karma sessions of one
 * client process in that datacenter see them (§6.2: "Background processes continually
 * monitor the delays between DCs, and feed the information to the systems"). One monitor per
 * process and datacenter, shared by its sessions: each datacenter is probed once per period
 * whatever the number of sessions (a probe per session and datacenter every period sent
 * more messages than the protocol). A session's operation starts the probes that are due,
 * through its own endpoint; a datacenter whose probe or read failed is avoided until a probe
 * answers.
 */
final class LatencyMonitor {
  /** A datacenter whose probe went unanswered: avoided until it answers again. */
  static final double UNREACHABLE_MS = 1e7;
  private static final Map<Transport, Map<Long, LatencyMonitor>> MONITORS = new WeakHashMap<>();

  private final Topology topology;
  private final long periodMs;
  private final double[] rttMs;
  private final long[] lastProbeMs;
  /** When a read last failed at each datacenter: a probe sent before that says nothing newer. */
  private final long[] failedAtMs;

  private LatencyMonitor(Topology topology, int dc, long periodMs) {
    this.topology = topology;
    this.periodMs = periodMs;
    this.rttMs = new double[topology.numDcs()];
    this.lastProbeMs = new long[topology.numDcs()];
    this.failedAtMs = new long[topology.numDcs()];
    for (int d = 0; d < rttMs.length; d++) {
      rttMs[d] = d == dc ? 0 : topology.rttMs(dc, d); // the matrix until measured
    }
  }

  /** The monitor of {@code dc}'s sessions on {@code transport} that probe every {@code periodMs}. */
  static synchronized LatencyMonitor of(Transport transport, int dc, long periodMs) {
    return MONITORS.computeIfAbsent(transport, t -> new HashMap<>())
        .computeIfAbsent(((long) dc << 32) | periodMs, k -> new LatencyMonitor(transport.topology(), dc, periodMs));
  }

  /** Tests: sessions opened from now on start from the matrix, not from what earlier ones measured. */
  static synchronized void forget(Transport transport) {
    MONITORS.remove(transport);
  }

  /** The measured round trip to a datacenter, ms; the own one is probed too (its servers may be down). */
  synchronized double distanceMs(int toDc) {
    return rttMs[toDc];
  }

  /** A read at a datacenter failed: avoid it until a probe answers. */
  synchronized void unreachable(int toDc) {
    rttMs[toDc] = UNREACHABLE_MS;
    failedAtMs[toDc] = System.currentTimeMillis();
  }

  /**
   * Probes, through {@code ep}, each datacenter whose last probe is a period old. A probe
   * that fails because the session closed meanwhile ({@code closed}) says nothing.
   */
  void probe(Endpoint ep, BooleanSupplier closed) {
    long now = System.currentTimeMillis();
    for (int d = 0; d < rttMs.length; d++) {
      final int to = d;
      synchronized (this) {
        if (now - lastProbeMs[d] < periodMs) {
          continue;
        }
        lastProbeMs[d] = now;
      }
      ep.ping(topology.serverId(d, 0), 0).orTimeout(timeoutMs(), TimeUnit.MILLISECONDS)
          .whenComplete((nanos, error) -> {
            if (error != null && closed.getAsBoolean()) {
              synchronized (this) {
                lastProbeMs[to] = 0; // the next session's operation probes it again
              }
              return;
            }
            synchronized (this) {
              if (error == null && now < failedAtMs[to]) {
                return; // answered, but sent before a read there failed: keep avoiding it
              }
              rttMs[to] = error != null ? UNREACHABLE_MS
                  : rttMs[to] >= UNREACHABLE_MS ? nanos / 1e6 : 0.3 * rttMs[to] + 0.7 * (nanos / 1e6);
            }
          });
    }
  }

  /** How long a probe waits for its answer before it takes the datacenter for down. */
  private long timeoutMs() {
    return Math.max(periodMs * 4, 1000);
  }
}
