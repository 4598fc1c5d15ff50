package org.k2bench.core.transport;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.k2bench.core.metrics.LatencyHistogram;

/**
 * Measures round trips through the transport between datacenters: from an endpoint
 * located in datacenter a to a server in datacenter b, the emulated RTT(a, b) plus the
 * transport's own cost. All pairs are measured concurrently; each prober of a pair pings
 * sequentially. Probers start at random offsets and pause a random 0.5–1.5 times the gap
 * between pings, so that they do not fall into lockstep (pairs with equal RTTs would
 * otherwise all deliver in the same instant and queue behind each other, an error of the
 * probe rather than of the emulation).
 */
public final class RttProbe {
  private RttProbe() {}

  /**
   * @param from one endpoint located in each datacenter (index = datacenter)
   * @param to one server id in each datacenter
   * @param samples pings per unordered pair
   * @param gapMs pause between a pair's pings
   * @return histograms [a][b] for a < b (null elsewhere)
   */
  public static LatencyHistogram[][] measure(Endpoint[] from, int[] to, int samples, long gapMs)
      throws InterruptedException {
    return measure(from, to, samples, 1, gapMs, (a, b) -> true, -1, (a, b, nanos, sent) -> { });
  }

  /**
   * Every single round trip as measured, before it is rounded into a histogram bucket, with
   * the prober's System.nanoTime() just before it sent the ping (the ping returned at
   * {@code sentNanos + rttNanos}, before the prober itself woke up).
   */
  @FunctionalInterface
  public interface SampleSink {
    void record(int a, int b, long rttNanos, long sentNanos);
  }

  /**
   * As {@link #measure(Endpoint[], int[], int, long)} with {@code probesPerPair} pingers
   * per pair, each sending its share of {@code samples} in turn (more samples in the same
   * time, for a stable p99), handing every sample to {@code sink}.
   */
  public static LatencyHistogram[][] measure(Endpoint[] from, int[] to, int samples, int probesPerPair,
      long gapMs, SampleSink sink) throws InterruptedException {
    return measure(from, to, samples, probesPerPair, gapMs, (a, b) -> true, -1, sink);
  }

  /**
   * As above, for the pairs {@code pairs} accepts; with {@code origin >= 0} every ping of a
   * pair involving it is sent by {@code from[origin]} (the probe physically in that
   * datacenter, where the network itself has the latency).
   */
  public static LatencyHistogram[][] measure(Endpoint[] from, int[] to, int samples, long gapMs,
      java.util.function.BiPredicate<Integer, Integer> pairs, int origin) throws InterruptedException {
    return measure(from, to, samples, 1, gapMs, pairs, origin, (a, b, nanos, sent) -> { });
  }

  private static LatencyHistogram[][] measure(Endpoint[] from, int[] to, int samples, int probesPerPair,
      long gapMs, java.util.function.BiPredicate<Integer, Integer> pairs, int origin, SampleSink sink)
      throws InterruptedException {
    int d = from.length;
    LatencyHistogram[][] out = new LatencyHistogram[d][d];
    List<Thread> threads = new ArrayList<>();
    List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int a = 0; a < d; a++) {
      for (int b = a + 1; b < d; b++) {
        if (!pairs.test(a, b)) {
          continue;
        }
        LatencyHistogram h = new LatencyHistogram();
        out[a][b] = h;
        int pa = a;
        int pb = b;
        Endpoint src = origin >= 0 ? from[origin] : from[a];
        int dst = origin >= 0 && b == origin ? to[a] : to[b];
        for (int k = 0; k < probesPerPair; k++) {
          int share = samples / probesPerPair + (k < samples % probesPerPair ? 1 : 0);
          Thread t = new Thread(() -> {
            try {
              java.util.concurrent.ThreadLocalRandom r = java.util.concurrent.ThreadLocalRandom.current();
              long gapNanos = TimeUnit.MILLISECONDS.toNanos(gapMs);
              if (gapNanos > 0) {
                LockSupport.parkNanos(r.nextLong(gapNanos * probesPerPair));
              }
              for (int i = 0; i < share; i++) {
                long sent = System.nanoTime();
                long rtt = src.ping(dst, 0).get(30, TimeUnit.SECONDS);
                h.recordNanos(rtt);
                sink.record(pa, pb, rtt, sent);
                if (gapNanos > 0) {
                  LockSupport.parkNanos(gapNanos / 2 + r.nextLong(gapNanos));
                }
              }
            } catch (Exception e) {
              errors.add(e);
            }
          }, "rtt-probe-" + a + "-" + b + "-" + k);
          threads.add(t);
          t.start();
        }
      }
    }
    for (Thread t : threads) {
      t.join();
    }
    if (!errors.isEmpty()) {
      throw new IllegalStateException("ping failed: " + errors.get(0), errors.get(0));
    }
    return out;
  }
}
