package org.k2bench.core.clock;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * When a Lamport clock reached a given time, in wall-clock terms: the clock's counter is
 * sampled every {@link #SAMPLE_MS} into a ring buffer covering about two minutes, so that
 * "how long ago was logical time {@code ts} the present here" can be answered (a read-only
 * transaction's snapshot lag). One shared sampler thread serves every clock of the process.
 */
public final class ClockHistory implements AutoCloseable {
  public static final long SAMPLE_MS = 2;
  private static final int SIZE = 1 << 16;
  private static final ScheduledExecutorService SAMPLER = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "k2bench-clock-history");
    t.setDaemon(true);
    return t;
  });

  private final LamportClock clock;
  private final long[] counters = new long[SIZE];
  private final long[] wallMs = new long[SIZE];
  /** Samples taken so far; sample i is at index i % SIZE. Written by the sampler only. */
  private volatile long taken;
  private final ScheduledFuture<?> task;

  private ClockHistory(LamportClock clock) {
    this.clock = clock;
    sample();
    this.task = SAMPLER.scheduleAtFixedRate(this::sample, SAMPLE_MS, SAMPLE_MS, TimeUnit.MILLISECONDS);
  }

  /** Starts sampling {@code clock}. */
  public static ClockHistory track(LamportClock clock) {
    return new ClockHistory(clock);
  }

  private void sample() {
    long c = clock.counter();
    long n = taken;
    if (n > 0 && counters[(int) ((n - 1) % SIZE)] == c) {
      return; // no change: the previous sample still says when c was first seen
    }
    int i = (int) (n % SIZE);
    counters[i] = c;
    wallMs[i] = System.currentTimeMillis();
    taken = n + 1; // publishes the sample
  }

  /**
   * How many milliseconds ago this clock first reached logical time {@code ts} (0 if it
   * has not yet, or did so within the last sample interval); the age of the oldest sample
   * kept if {@code ts} is older than that (a lower bound).
   */
  public double msSince(long ts) {
    long target = LamportClock.counterOf(ts);
    long now = System.currentTimeMillis();
    long n = taken;
    long oldest = Math.max(0, n - SIZE);
    if (n == 0 || counters[(int) ((n - 1) % SIZE)] < target) {
      return 0;
    }
    // first sample (in [oldest, n)) whose counter >= target; counters never decrease
    long lo = oldest;
    long hi = n - 1;
    while (lo < hi) {
      long mid = (lo + hi) >>> 1;
      if (counters[(int) (mid % SIZE)] >= target) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return Math.max(0, now - wallMs[(int) (lo % SIZE)]);
  }

  @Override
  public void close() {
    task.cancel(false);
  }
}
