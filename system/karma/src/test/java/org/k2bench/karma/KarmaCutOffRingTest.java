package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.OperationFailedException;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.TestOptions;

/**
 * A ring that is silent, slow or cut off for a while, and caches whose datacenter dies or is
 * cut off (the Karma paper's §4.4 write buffer bound and cache leases), on the rings of
 * {@link DeadTyoScenarios}: the session's puts keep the buffer's bound while the ring
 * answers, pass it once the ring counts as down, and reach it once healed; a lease ends what
 * a dead or cut-off cache holds up.
 */
class KarmaCutOffRingTest extends DeadTyoScenarios {
  /**
   * A ring silent for less than three RPC timeouts (the default) is not down: a put sent
   * again after a timeout that then reaches it keeps the session's writes held to the bound
   * (with two timeouts the ring would count as down at 2 s and the put pass it at once).
   */
  @Test
  void aRingSilentForLessThanThreeTimeoutsKeepsTheBound() {
    try (LocalCluster c = start(new KarmaSystem())) {
      String t = key(c, "silent-t", CA, TYO);
      KarmaClient sg = (KarmaClient) c.client(SG, TestOptions.defaults().withRpcTimeoutMs(RPC_TIMEOUT_MS));
      c.transport().links().partition(SG, TYO, Long.MAX_VALUE, true);
      // Attempts at 0, 1.2, 2.4 s (each times out after 1 s, sent again 200 ms later); healed
      // at 1.8 s, the third is answered.
      java.util.concurrent.CompletableFuture.delayedExecutor(1_800, java.util.concurrent.TimeUnit.MILLISECONDS)
          .execute(() -> c.transport().links().partition(SG, TYO, 0, false));
      long start = System.currentTimeMillis();
      writeAll(sg, t, "sg-", BOUND);
      sg.write(t, row("sg-" + (BOUND + 1)));
      long waited = System.currentTimeMillis() - start;
      assertTrue(sg.queued(1) <= BOUND, "the put waited for room, not for the ring to count as down: "
          + sg.queued(1) + " queued after " + waited + " ms");
      assertTrue(waited >= 1_800, "it waited for the ring to answer: " + waited);
      assertTrue(sg.drain(10_000));
    }
  }

  /**
   * A ring that answers slowly is not down: its queue keeps the bound (a session that outruns
   * it waits for room), however long it takes, as long as it answers.
   */
  @Test
  void aSlowRingKeepsTheBoundOnTheSessionsQueue() {
    try (LocalCluster c = start(new KarmaSystem())) {
      String t = key(c, "slow-t", CA, TYO);
      KarmaClient sg = karma(c, SG, 100);
      // Each put to TYO takes ~300 ms more, well under the RPC timeout: answered, so never down.
      c.transport().links().setExtraDelayMs(SG, TYO, 150);
      c.transport().links().setExtraDelayMs(TYO, SG, 150);
      int most = 0;
      for (int i = 1; i <= 2 * BOUND; i++) {
        sg.write(t, row("sg-" + i));
        most = Math.max(most, sg.queued(1));
      }
      assertEquals(BOUND, most, "the queue to the slow ring never grew past the bound");
      c.transport().links().clearExtraDelays();
      assertTrue(sg.drain(10_000));
    }
  }

  /**
   * A ring cut off for longer than the RPC timeout, then healed: the session's buffered puts
   * wait for it meanwhile (the first sent again every RPC timeout plus 200 ms), past the
   * buffer's bound once the ring is down, and reach it afterwards; every put completes and
   * the session writes on, also while the ring works through its queue.
   */
  @Test
  void putsHeldForACutOffRingReachItOnceHealed() {
    try (LocalCluster c = start(new KarmaSystem())) {
      String t = key(c, "healed-t", CA, TYO);
      KarmaClient sg = karma(c, SG, 100);
      c.transport().links().partition(SG, TYO, Long.MAX_VALUE, true);
      // Three buffers' worth: past the first, the ring counts as down and the session writes on.
      int puts = 3 * BOUND;
      writeAll(sg, t, "sg-", puts);
      assertTrue(!sg.drain(RPC_TIMEOUT_MS), "TYO's ring has none of them while cut off");
      assertEquals(0, c.stat(TYO, "puts_applied"));
      // Healed, with ~200 ms round trips to TYO: the ring counts again and works through the
      // backlog (~10 s). A writer meanwhile waits about two of its answers per put, not for
      // the backlog to drain below the bound.
      c.transport().links().setExtraDelayMs(SG, TYO, 100);
      c.transport().links().setExtraDelayMs(TYO, SG, 100);
      c.transport().links().partition(SG, TYO, 0, false);
      long healed = System.currentTimeMillis();
      while (sg.queued(1) == puts) {
        assertTrue(System.currentTimeMillis() - healed < 3 * RPC_TIMEOUT_MS, "the ring answers once healed");
        Clusters.sleep(10);
      }
      for (int i = 1; i <= 5; i++) {
        long t0 = System.currentTimeMillis();
        sg.write(t, row("draining-" + i));
        puts++;
        long took = System.currentTimeMillis() - t0;
        assertTrue(took < 1_500, "a put while the ring works through its backlog waits ~2 round trips: " + took);
      }
      assertTrue(sg.queued(1) > 16, "the backlog is not drained yet: " + sg.queued(1));
      assertTrue(sg.drain(30_000), "every put reached every ring once healed");
      c.transport().links().clearExtraDelays();
      assertEquals(puts, c.stat(TYO, "puts_applied"), "TYO applied each buffered put (a retry is a duplicate, not counted)");
      sg.write(t, row("after"));
      assertTrue(sg.drain(5_000));
      KarmaClient tyo = karma(c, TYO, 100);
      assertEquals(1, tyo.nearestRingFor(List.of(t)));
      Clusters.awaitValue(tyo, t, "after", 5_000);
    }
  }

  /**
   * A dead datacenter's cache held k: SG's replica cannot have its invalidation acknowledged.
   * The put completes once the cache's lease has ended (1 s here), not never (§4.4: without
   * leases a dead cache's keys never complete, never become stable, and their readers stay
   * restricted).
   */
  @Test
  void aDeadCacheHoldsPutsOfItsKeysOnlyUntilItsLeaseEnds() {
    try (LocalCluster c = startLeased(1_000)) {
      String k = key(c, "lease-k", CA, SG);
      KvClient writer = c.client(VA);
      cachedAtTyo(c, writer, k);
      kill(c, TYO);
      long began = System.currentTimeMillis();
      writer.write(k, row("v2"));
      assertTrue(((KarmaClient) writer).drain(10_000), "the put of k completes in every ring");
      long took = System.currentTimeMillis() - began;
      assertTrue(took < 4_000, "completed " + took + " ms after the put (the lease is 1 s)");
      assertTrue(c.stat(SG, "invalidations_lease_ended") > 0, "SG's replica stopped waiting for TYO's cache");
    }
  }

  /**
   * The other side of the lease: TYO's cache is alive but cut off from SG, so it never gets
   * SG's invalidation of k. Once the put has completed (the lease ended), a session in TYO
   * never reads the older k through it.
   */
  @Test
  void aCutOffCacheStopsServingAValueWhenItsLeaseEnds() {
    try (LocalCluster c = startLeased(1_000)) {
      String k = key(c, "cut-k", CA, SG);
      KvClient writer = c.client(VA);
      cachedAtTyo(c, writer, k);
      c.transport().links().partition(TYO, SG, Long.MAX_VALUE, true);
      writer.write(k, row("v2"));
      assertTrue(((KarmaClient) writer).drain(10_000), "the put of k completes in every ring");
      KarmaClient tyo = karma(c, TYO, 100);
      for (int i = 0; i < 20; i++) {
        try {
          assertEquals("v2", str(tyo.readTxn(List.of(k)).rows().get(k)), "read " + i + " after the put completed");
        } catch (OperationFailedException cutOff) {
          // a fill at SG fails while it is cut off: the session goes to another ring next time
        }
      }
      c.transport().links().partition(TYO, SG, 0, false);
    }
  }
}
