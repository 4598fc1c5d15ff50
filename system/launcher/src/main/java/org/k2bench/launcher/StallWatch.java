package org.k2bench.launcher;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.k2bench.core.metrics.LatencyHistogram;

/**
 * Sets the emulation's errors beside the stalls of the process during a bench-emulation
 * phase. One thread of the bench's JVM sleeps 1 ms at a time, as a WAN dispatcher does
 * before a delivery, and notes every wake-up at least {@link #STALL_NANOS} late: a time
 * when that thread did not run, because of the JVM, the kernel or (on a virtual machine)
 * the hypervisor. Every ping is noted with its error; the part of its error during which a
 * stall went on, while its request or its reply fell due, is time no emulation could have
 * used. Idle, the bench uses a few percent of one core, so a stall there is the machine's
 * or the JVM's; under load, the bench's own CPU use can cause one too.
 */
final class StallWatch implements AutoCloseable {
  /** A wake-up this late is a stall: half the idle target, ten times this machine's usual p50. */
  static final long STALL_NANOS = 500_000;
  static final long SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** One ping: its pair, when it was sent and returned (System.nanoTime, before the prober woke), its error. */
  record Ping(int a, int b, long sent, long received, long errorNanos, long configuredNanos) { }

  private final LatencyHistogram lateness = new LatencyHistogram();
  private final List<long[]> stalls = Collections.synchronizedList(new ArrayList<>());
  private final List<Ping> pings = Collections.synchronizedList(new ArrayList<>());
  private final Thread thread;
  private volatile boolean stopped;

  StallWatch() {
    thread = new Thread(() -> {
      while (!stopped) {
        long due = System.nanoTime() + SLEEP_NANOS;
        LockSupport.parkNanos(SLEEP_NANOS);
        long now = System.nanoTime();
        long late = now - due;
        if (late < 0) { // parkNanos may return early (spurious wake-up): not a sample
          continue;
        }
        lateness.recordNanos(late);
        if (late >= STALL_NANOS) {
          // from its due time: the stall may have begun during the sleep, but only its
          // lateness is certain (the shorter interval claims less)
          stalls.add(new long[] {due, now});
        }
      }
    }, "k2b-stall-watch");
    thread.setDaemon(true);
    thread.start();
  }

  /** A ping sent at {@code sentNanos} that returned after {@code rttNanos}; its pair's configured RTT is {@code configuredNanos}. */
  void ping(int a, int b, long sentNanos, long rttNanos, long configuredNanos) {
    pings.add(new Ping(a, b, sentNanos, sentNanos + rttNanos, rttNanos - configuredNanos, configuredNanos));
  }

  @Override
  public void close() throws InterruptedException {
    stopped = true;
    thread.join();
  }

  /**
   * How much of {@code p}'s error {@code stalls} ([start, end] in nanoTime) can account for:
   * their overlap with the times its error accrued, at most the error. Those are its
   * request's delivery, due half the configured RTT after the send and late by at most the
   * whole error, and its reply's delivery, within the error before it returned. A stall in
   * the middle of a flight delays nothing (the message waits for its due time anyway), so
   * it does not count.
   */
  static long stalledNanos(Ping p, List<long[]> stalls) {
    long[][] windows = errorWindows(p);
    long sum = 0;
    for (long[] s : stalls) {
      for (long[] w : windows) {
        sum += Math.max(0, Math.min(s[1], w[1]) - Math.max(s[0], w[0]));
      }
    }
    return Math.min(Math.max(0, p.errorNanos()), sum);
  }

  /** Whether one of {@code stalls} went on (even for an instant) during {@code p}'s error windows. */
  static boolean touched(Ping p, List<long[]> stalls) {
    long[][] windows = errorWindows(p);
    for (long[] s : stalls) {
      for (long[] w : windows) {
        if (s[0] <= w[1] && s[1] >= w[0]) {
          return true;
        }
      }
    }
    return false;
  }

  /** The times {@code p}'s error accrued (see {@link #stalledNanos}): [from, to] of its request's delivery and its reply's. */
  private static long[][] errorWindows(Ping p) {
    long err = Math.max(0, p.errorNanos());
    long reqDue = p.sent() + p.configuredNanos() / 2;
    return new long[][] {{reqDue, reqDue + err}, {p.received() - err, p.received()}};
  }

  /** The phase's result (after {@link #close}): stalls, pings over {@code overMs} late and how many a stall touched, per-pair errors net of the stalls. */
  Result result(int d, double overMs) {
    if (thread.isAlive()) {
      throw new IllegalStateException("StallWatch.result before close");
    }
    List<long[]> st;
    List<Ping> ps;
    synchronized (stalls) {
      st = new ArrayList<>(stalls);
    }
    synchronized (pings) {
      ps = new ArrayList<>(pings);
    }
    return result(lateness, st, ps, d, overMs);
  }

  static Result result(LatencyHistogram lateness, List<long[]> st, List<Ping> ps, int d, double overMs) {
    LatencyHistogram[][] net = EmulationBench.errorHistograms(d);
    long over = 0;
    long overTouched = 0;
    long touchedAll = 0;
    long overNanos = Math.round(overMs * 1e6);
    for (Ping p : ps) {
      boolean t = touched(p, st);
      if (t) {
        touchedAll++;
      }
      net[p.a()][p.b()].recordNanos(Math.max(0, p.errorNanos()) - stalledNanos(p, st));
      if (p.errorNanos() > overNanos) {
        over++;
        if (t) {
          overTouched++;
        }
      }
    }
    long longest = 0;
    long total = 0;
    for (long[] s : st) {
      longest = Math.max(longest, s[1] - s[0]);
      total += s[1] - s[0];
    }
    return new Result(lateness, st.size(), longest / 1e6, total / 1e6, ps.size(), touchedAll, over, overTouched, net);
  }

  /**
   * What {@link #result} found; {@code net}: per pair [a][b], a < b, every ping's error less
   * the part of it a stall accounts for ({@link #stalledNanos}).
   */
  record Result(LatencyHistogram lateness, int stalls, double longestMs, double totalMs, long pings,
      long touched, long over, long overTouched, LatencyHistogram[][] net) {

    /** The largest p99 over the pairs of the errors net of the stalls. */
    double worstNetP99() {
      double worst = 0;
      for (LatencyHistogram[] row : net) {
        for (LatencyHistogram h : row) {
          if (h != null && h.count() > 0) {
            worst = Math.max(worst, h.percentileMs(99));
          }
        }
      }
      return worst;
    }

    Map<String, Object> json(double overMs) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("sleeper_lateness_ms", lateness.summary());
      m.put("stalls", stalls);
      m.put("stall_threshold_ms", STALL_NANOS / 1e6);
      m.put("longest_stall_ms", EmulationBench.round(longestMs));
      m.put("stalled_ms", EmulationBench.round(totalMs));
      m.put("pings", pings);
      m.put("pings_touched_by_a_stall", touched);
      m.put("pings_over_ms", overMs);
      m.put("pings_over", over);
      m.put("pings_over_touched_by_a_stall", overTouched);
      m.put("worst_pair_p99_net_of_stalls_ms", EmulationBench.round(worstNetP99()));
      return m;
    }
  }
}
