package org.k2bench.core.clock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;

/**
 * The hybrid logical clock as the PaRiS paper defines it (§IV-B): the maximum of the
 * physical clock and the highest timestamp seen plus one, driven here by a fake wall clock.
 */
class HybridClockTest {
  static final long T = 1_800_000_000_000L; // 2027-01-15, wall-clock ms

  @Test
  void followsWallTimeWithoutEventsAndCountsEventsWithinAMillisecond() {
    AtomicLong wall = new AtomicLong(T);
    LamportClock c = LamportClock.hybrid(7, wall::get);
    assertTrue(c.isHybrid());
    assertEquals(LamportClock.hybridCounter(T), c.tick(), "the physical clock, not 1");
    assertEquals(LamportClock.hybridCounter(T) + 1, c.tick(), "a second event in the same ms: logical + 1");
    wall.addAndGet(5);
    assertEquals(LamportClock.hybridCounter(T + 5), c.counter(), "advances with wall time while idle");
    assertEquals(T + 5, LamportClock.wallMsOf(c.nextTimestamp()));
    assertEquals(7, LamportClock.nodeOf(c.now()), "the node stays in the low bits");
  }

  @Test
  void aTimestampFromAheadIsPassedAndWallTimeTakesOverAgain() {
    AtomicLong wall = new AtomicLong(T);
    LamportClock c = LamportClock.hybrid(1, wall::get);
    long ahead = LamportClock.hybridCounter(T + 100); // a sender whose clock is 100 ms ahead
    assertEquals(ahead + 1, c.observeCounter(ahead), "the highest seen plus one");
    assertEquals(ahead + 2, c.tick(), "ahead of wall time, it counts on logically");
    wall.addAndGet(200);
    assertEquals(LamportClock.hybridCounter(T + 200), c.tick(), "until wall time passes it");
    assertEquals(LamportClock.hybridCounter(T + 200) + 1, c.observeCounter(ahead), "an old timestamp: + 1 only");
  }

  @Test
  void versionsOfTwoNodesAtTheSameInstantDifferAndOrderByCounterThenNode() {
    AtomicLong wall = new AtomicLong(T);
    LamportClock a = LamportClock.hybrid(3, wall::get);
    LamportClock b = LamportClock.hybrid(4, wall::get);
    long va = a.nextTimestamp();
    long vb = b.nextTimestamp();
    assertNotEquals(va, vb);
    assertEquals(LamportClock.counterOf(va), LamportClock.counterOf(vb));
    assertTrue(va < vb && va > 0, "positive, and the node breaks the tie");
    assertFalse(new LamportClock(3).isHybrid());
    assertEquals(1, new LamportClock(3).tick(), "a Lamport clock has no physical part");
  }

  @Test
  void aTransportGivesEveryEndpointTheSystemsClock() {
    Transport t = new Transport(FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000)));
    try {
      t.useClock(ClockKind.HYBRID);
      Endpoint ep = t.openClient(org.k2bench.core.topology.Topology.firstClientId(), 0, Runnable::run, m -> { });
      assertTrue(ep.clock().isHybrid());
      long before = LamportClock.hybridCounter(System.currentTimeMillis());
      assertTrue(ep.clock().tick() >= before, "stamps at least wall time");
      assertThrows(IllegalStateException.class, () -> t.useClock(ClockKind.LAMPORT), "not once endpoints are open");
    } finally {
      t.close();
    }
  }
}
