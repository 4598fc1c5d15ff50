package org.k2bench.core.clock;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * When a Lamport clock reached a given time, in wall-clock terms: the clock's counter is
 * sampled every {@link #SAMPLE_MS} into a ring buffer covering about two minutes of
 * changes, so that "how long ago was logical time {@code ts} the present here" can be
 * answered (a read-only transaction's snapshot lag). One shared sampler thread serves every
 * clock of the process.
 *
 * <p>The sampler sleeps while no tracked clock moves and the first advance of one wakes it
 * ({@link LamportClock#watch}), so that advance is still recorded when it happened. Sampling
 * every 2 ms regardless woke each JVM 500 times a second: twelve idle server JVMs on two
 * cores (the local SSH test hosts) spent a fifth of a core on it.
 *
 * <p>A hybrid clock needs no samples: its counter is wall time (see {@link LamportClock}).
 */
public final class ClockHistory implements AutoCloseable {
  public static final long SAMPLE_MS = 2;
  private static final int SIZE = 1 << 16;
  private static final CopyOnWriteArrayList<ClockHistory> TRACKED = new CopyOnWriteArrayList<>();
  private static final Object START = new Object();
  private static Thread sampler;
  /** Rounds of the sampler so far (tests: an idle process is not woken every interval). */
  private static volatile long rounds;

  private final LamportClock clock;
  private final long[] counters = new long[SIZE];
  private final long[] wallMs = new long[SIZE];
  /** Samples taken so far; sample i is at index i % SIZE. Written by the sampler only. */
  private volatile long taken;

  private ClockHistory(LamportClock clock) {
    this.clock = clock;
    if (!clock.isHybrid()) {
      sample();
      TRACKED.add(this);
      startSampler();
    }
  }

  /** Starts sampling {@code clock}. */
  public static ClockHistory track(LamportClock clock) {
    return new ClockHistory(clock);
  }

  private static void startSampler() {
    synchronized (START) {
      if (sampler == null) {
        sampler = new Thread(ClockHistory::loop, "k2bench-clock-history");
        sampler.setDaemon(true);
        sampler.start();
      }
      LockSupport.unpark(sampler); // it may sleep watching only the clocks it had
    }
  }

  private static void loop() {
    long intervalNanos = TimeUnit.MILLISECONDS.toNanos(SAMPLE_MS);
    while (true) {
      LockSupport.parkNanos(intervalNanos);
      if (sampleAll()) {
        continue;
      }
      // Nothing moved for an interval: sleep until a tracked clock advances. Watching first
      // and sampling again closes the gap where an advance saw no watcher.
      Thread self = Thread.currentThread();
      for (ClockHistory h : TRACKED) {
        h.clock.watch(self);
      }
      if (!sampleAll()) {
        LockSupport.park(ClockHistory.class);
        sampleAll(); // the advance that woke us, at (about) the time it happened
      }
      for (ClockHistory h : TRACKED) {
        h.clock.watch(null);
      }
    }
  }

  /** One round over every tracked clock; true if any of them moved. */
  private static boolean sampleAll() {
    rounds++;
    boolean moved = false;
    for (ClockHistory h : TRACKED) {
      moved |= h.sample();
    }
    return moved;
  }

  static long rounds() {
    return rounds;
  }

  /** Records the counter if it changed since the last sample; true if it did. */
  private boolean sample() {
    long c = clock.counter();
    long n = taken;
    if (n > 0 && counters[(int) ((n - 1) % SIZE)] == c) {
      return false; // no change: the previous sample still says when c was first seen
    }
    int i = (int) (n % SIZE);
    counters[i] = c;
    wallMs[i] = System.currentTimeMillis();
    taken = n + 1; // publishes the sample
    return true;
  }

  /**
   * How many milliseconds ago this clock first reached logical time {@code ts} (0 if it
   * has not yet, or did so within the last sample interval); the age of the oldest sample
   * kept if {@code ts} is older than that (a lower bound).
   */
  public double msSince(long ts) {
    long now = System.currentTimeMillis();
    if (clock.isHybrid()) {
      return Math.max(0, now - LamportClock.wallMsOf(ts));
    }
    long target = LamportClock.counterOf(ts);
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
    TRACKED.remove(this);
  }
}
