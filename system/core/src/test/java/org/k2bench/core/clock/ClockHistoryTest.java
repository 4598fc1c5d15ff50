package org.k2bench.core.clock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;

/**
 * When a clock reached a time: answered to within a few sample intervals, also for an advance
 * that ends a long idle spell, without the sampler waking every interval meanwhile.
 */
@Tag("alone") // bounds on timing from above: run with no other test class beside it (system/pom.xml)
class ClockHistoryTest {
  @Test
  void anAdvanceAfterAnIdleSpellIsDatedWhenItHappened() throws Exception {
    LamportClock clock = new LamportClock(3);
    try (ClockHistory h = ClockHistory.track(clock)) {
      long first = System.currentTimeMillis();
      clock.tick();
      Thread.sleep(300); // idle: the sampler sleeps
      long advanced = System.currentTimeMillis();
      long ts = clock.nextTimestamp();
      Thread.sleep(100);
      long asked = System.currentTimeMillis();
      double ago = h.msSince(ts);
      // Sampled only when the sampler next looked (never, if nothing woke it) it would read 0.
      // The sampler may wake a little late (a busy machine), never early.
      assertTrue(ago <= asked - advanced + 2 && ago >= asked - advanced - 50,
          "reached " + ago + " ms ago, not " + (asked - advanced));
      assertEquals(0, h.msSince(LamportClock.timestamp(clock.counter() + 1, 3)), "not reached yet");
      long askedAgain = System.currentTimeMillis(); // the messages above took time (string concatenation's bootstrap)
      double older = h.msSince(LamportClock.timestamp(1, 3));
      assertTrue(older <= askedAgain - first + 2 && older >= askedAgain - first - 50,
          "the first tick, " + (askedAgain - first) + " ms ago: " + older);
    }
  }

  @Test
  void anIdleClockDoesNotWakeTheSamplerEveryInterval() throws Exception {
    LamportClock clock = new LamportClock(4);
    try (ClockHistory h = ClockHistory.track(clock)) {
      clock.tick();
      Thread.sleep(50);
      long before = ClockHistory.rounds();
      Thread.sleep(500); // 250 intervals of 2 ms
      long idle = ClockHistory.rounds() - before;
      assertTrue(idle <= 5, idle + " sampling rounds in 500 ms of an idle clock");
      // and a moving clock is sampled every interval
      long start = System.nanoTime();
      long busyBefore = ClockHistory.rounds();
      while (System.nanoTime() - start < 200_000_000L) {
        clock.tick();
        Thread.sleep(1);
      }
      long busy = ClockHistory.rounds() - busyBefore;
      // every 2 ms: 100; an idle sampler would have slept through most of them
      assertTrue(busy >= 20, busy + " sampling rounds in 200 ms of a moving clock");
    }
  }

  @Test
  void aHybridClockIsReadFromItsWallTime() {
    long now = System.currentTimeMillis();
    LamportClock clock = LamportClock.hybrid(5, System::currentTimeMillis);
    try (ClockHistory h = ClockHistory.track(clock)) {
      long ts = LamportClock.timestamp(LamportClock.hybridCounter(now - 250), 5);
      double ago = h.msSince(ts);
      assertTrue(ago >= 250 && ago <= 300, "250 ms ago by its wall time: " + ago);
    }
  }
}
