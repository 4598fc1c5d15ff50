package org.k2bench.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class StallWatchTest {
  static final long MS = 1_000_000;

  /** A 100 ms ping sent at 0, 3 ms late: its request was due at 50 ms, its reply returned at 103 ms. */
  static final StallWatch.Ping LATE = new StallWatch.Ping(0, 1, 0, 103 * MS, 3 * MS, 100 * MS);

  @Test
  void aStallCountsOnlyWhereThePingsErrorAccrued() {
    assertTrue(StallWatch.touched(LATE, List.<long[]>of(new long[] {51 * MS, 52 * MS})), "at the request's delivery");
    assertTrue(StallWatch.touched(LATE, List.<long[]>of(new long[] {101 * MS, 102 * MS})), "at the reply's delivery");
    assertTrue(StallWatch.touched(LATE, List.<long[]>of(new long[] {45 * MS, 50 * MS})), "ending as the request fell due");
    assertFalse(StallWatch.touched(LATE, List.<long[]>of(new long[] {10 * MS, 40 * MS})),
        "mid-flight the message waits for its due time anyway");
    assertFalse(StallWatch.touched(LATE, List.<long[]>of(new long[] {60 * MS, 99 * MS})), "mid-flight of the reply");
    assertFalse(StallWatch.touched(LATE, List.<long[]>of(new long[] {104 * MS, 110 * MS})), "after it returned");
    StallWatch.Ping onTime = new StallWatch.Ping(0, 1, 0, 100 * MS, 0, 100 * MS);
    assertFalse(StallWatch.touched(onTime, List.<long[]>of(new long[] {51 * MS, 52 * MS})),
        "an on-time ping's request was delivered at 50 ms, before the stall");
  }

  /**
   * Five pings a 5 ms stall delayed by 5 ms and one the emulation delayed by 2 ms, among 100
   * on time: all six count as late, five as touched; net of the stall, the five are on time
   * and the pair's p99 is the on-time pings' (the 2 ms one is beyond the 99th of 106).
   */
  @Test
  void resultSeparatesThePingsAStallTouched() {
    List<StallWatch.Ping> pings = new java.util.ArrayList<>();
    long t = 0;
    for (int i = 0; i < 100; i++, t += 200 * MS) {
      pings.add(new StallWatch.Ping(0, 1, t, t + 100 * MS + MS / 10, MS / 10, 100 * MS));
    }
    long stalledAt = t;
    for (int i = 0; i < 5; i++) {
      pings.add(new StallWatch.Ping(0, 1, stalledAt, stalledAt + 105 * MS, 5 * MS, 100 * MS));
    }
    t += 200 * MS;
    pings.add(new StallWatch.Ping(0, 1, t, t + 102 * MS, 2 * MS, 100 * MS));
    List<long[]> stalls = List.<long[]>of(new long[] {stalledAt + 50 * MS, stalledAt + 55 * MS});
    StallWatch.Result r = StallWatch.result(new org.k2bench.core.metrics.LatencyHistogram(), stalls, pings, 2, 1.0);
    assertEquals(1, r.stalls());
    assertEquals(5.0, r.longestMs(), 1e-9);
    assertEquals(106, r.pings());
    assertEquals(5, r.touched());
    assertEquals(6, r.over());
    assertEquals(5, r.overTouched());
    assertEquals(0.1, r.worstNetP99(), 0.01, "the p99 net of the stall");
    assertEquals(2.0, r.net()[0][1].maxMs(), 0.01, "the emulation's own late ping stays");
  }

  /** A stall accounts for its overlap with the times the error accrued, not for the whole error. */
  @Test
  void aShortStallExcusesOnlyItsOwnLength() {
    List<long[]> halfMs = List.<long[]>of(new long[] {51 * MS, 51 * MS + MS / 2});
    assertEquals(MS / 2, StallWatch.stalledNanos(LATE, halfMs), "3 ms late, 0.5 ms of it during a stall");
    List<long[]> both = List.<long[]>of(new long[] {50 * MS, 52 * MS}, new long[] {100 * MS, 103 * MS});
    assertEquals(3 * MS, StallWatch.stalledNanos(LATE, both), "at most the error itself");
    assertEquals(0, StallWatch.stalledNanos(LATE, List.<long[]>of(new long[] {10 * MS, 40 * MS})));
    List<StallWatch.Ping> one = List.of(LATE);
    assertEquals(2.5, StallWatch.result(new org.k2bench.core.metrics.LatencyHistogram(), halfMs, one, 2, 1.0)
        .net()[0][1].maxMs(), 0.01, "net of the half millisecond");
  }

  /** The watcher runs while open: it slept about 1 ms at a time and nothing was pinged. */
  @Test
  void theWatcherSleepsWhileOpen() throws Exception {
    long began = System.nanoTime();
    StallWatch w = new StallWatch();
    Thread.sleep(100);
    assertThrows(IllegalStateException.class, () -> w.result(2, 1.0), "read while the watcher still runs");
    w.close();
    // each sample is a sleep of at least 1 ms: no more than the milliseconds it was open (a
    // loaded machine may oversleep the 100 ms)
    long openMs = (System.nanoTime() - began) / 1_000_000;
    StallWatch.Result r = w.result(2, 1.0);
    assertTrue(r.lateness().count() > 10 && r.lateness().count() <= openMs + 1,
        "samples: " + r.lateness().count() + " in " + openMs + " ms");
    assertEquals(0, r.pings());
  }
}
