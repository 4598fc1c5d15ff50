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
 * Tells the machine's stalls apart from the emulation's errors during a bench-emulation
 * phase. One thread of the bench's JVM sleeps 1 ms at a time, as a WAN dispatcher does
 * before a delivery, and notes every wake-up at least {@link #STALL_NANOS} late: a time
 * when the JVM or the machine (on a virtual machine, the hypervisor too) ran nothing of
 * this process on time. Every ping is noted with its error; a ping whose error accrued
 * while such a stall was going on was late, at least in part, because nothing ran, which
 * no emulation can correct. Idle, the bench uses a few percent of one core, so a stall
 * there is the machine's; under load, the bench's own CPU use can cause one too.
 */
final class StallWatch implements AutoCloseable {
  /** A wake-up this late is a stall: half the idle target, ten times this machine's usual p50. */
  static final long STALL_NANOS = 500_000;
  static final long SLEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** One ping: its pair, when it was sent and returned (System.nanoTime), its error. */
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
          stalls.add(new long[] {due, now});
        }
      }
    }, "k2b-stall-watch");
    thread.setDaemon(true);
    thread.start();
  }

  /** A ping that returned just now after {@code rttNanos}; its pair's configured RTT is {@code configuredNanos}. */
  void ping(int a, int b, long rttNanos, long configuredNanos) {
    long now = System.nanoTime();
    pings.add(new Ping(a, b, now - rttNanos, now, rttNanos - configuredNanos, configuredNanos));
  }

  @Override
  public void close() throws InterruptedException {
    stopped = true;
    thread.join();
  }

  /**
   * Whether one of {@code stalls} ([start, end] in nanoTime) went on while {@code p}'s error
   * accrued: its request's delivery, due half the configured RTT after the send and late by
   * at most the whole error, or its reply's delivery and the prober's wake-up, within the
   * error before it returned. A stall in the middle of a flight delays nothing (the message
   * waits for its due time anyway), so it does not count.
   */
  static boolean touched(Ping p, List<long[]> stalls) {
    long err = Math.max(0, p.errorNanos());
    long reqDue = p.sent() + p.configuredNanos() / 2;
    for (long[] s : stalls) {
      if (overlaps(s, reqDue, reqDue + err) || overlaps(s, p.received() - err, p.received())) {
        return true;
      }
    }
    return false;
  }

  private static boolean overlaps(long[] s, long from, long to) {
    return s[0] <= to && s[1] >= from;
  }

  /** The phase's result: stalls, pings over {@code overMs} late and how many a stall touched, per-pair errors of the rest. */
  Result result(int d, double overMs) {
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
    LatencyHistogram[][] clear = EmulationBench.errorHistograms(d);
    long over = 0;
    long overTouched = 0;
    long touchedAll = 0;
    long overNanos = Math.round(overMs * 1e6);
    for (Ping p : ps) {
      boolean t = touched(p, st);
      if (t) {
        touchedAll++;
      } else {
        clear[p.a()][p.b()].recordNanos(Math.max(0, p.errorNanos()));
      }
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
    return new Result(lateness, st.size(), longest / 1e6, total / 1e6, ps.size(), touchedAll, over, overTouched, clear);
  }

  /** What {@link #result} found; {@code clear}: per pair [a][b], a < b, the errors of the pings no stall touched. */
  record Result(LatencyHistogram lateness, int stalls, double longestMs, double totalMs, long pings,
      long touched, long over, long overTouched, LatencyHistogram[][] clear) {

    /** The largest p99 over the pairs of the pings no stall touched. */
    double worstClearP99() {
      double worst = 0;
      for (LatencyHistogram[] row : clear) {
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
      m.put("worst_pair_p99_untouched_ms", EmulationBench.round(worstClearP99()));
      return m;
    }
  }
}
