package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.OperationFailedException;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.SystemOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.RingPlacement;
import org.k2bench.core.testing.TestOptions;

/**
 * The Karma paper's Table 1, "Single AZ" failure, on the rings {VA, CA, LDN}, {TYO, SG}, {SP}
 * (matrix / 10): TYO's servers die. Karma's reads go to another ring and its puts return
 * (past the write buffer's bound once TYO's ring counts as down); COPS-PR clients bound to TYO's ring
 * cannot read the keys TYO held in it. And a session restricted to TYO's ring (it read an
 * in-flight value there) stays restricted, failing, while the value it read is not yet
 * complete in the other rings, and is lifted and served by another ring once it is.
 */
class KarmaDeadDatacenterTest {
  static final long RPC_TIMEOUT_MS = 1_000;
  /** A ring that answered none of a session's puts this long is down for it (two RPC timeouts; default three). */
  static final long DEAD_RING_AFTER_MS = 2 * RPC_TIMEOUT_MS;
  /** The write buffer's bound per ring (default). */
  static final int BOUND = (int) KarmaOptions.WRITE_BUFFER_ENTRIES.defaultValue();
  private final List<String> used = new ArrayList<>();

  private static LocalCluster start(StoreSystem system) {
    return LocalCluster.start(system, Clusters.ringTopology(2),
        TestOptions.defaults().withNumKeys(10_000).withRpcTimeoutMs(RPC_TIMEOUT_MS));
  }

  /** A Karma cluster whose caches hold values for {@code leaseMs}. */
  private static LocalCluster startLeased(long leaseMs) {
    return LocalCluster.start(new KarmaSystem(), Clusters.ringTopology(2),
        TestOptions.defaults().withNumKeys(10_000).withRpcTimeoutMs(RPC_TIMEOUT_MS).withSystemOptions(
            SystemOptions.parse(new KarmaSystem(), Map.of("cache_lease_ms", Long.toString(leaseMs)), "options")));
  }

  /** {@code writer} writes k = v1 into every ring, then TYO's cache holds it (see cacheAtTyo). */
  private static void cachedAtTyo(LocalCluster c, KvClient writer, String k) {
    writer.write(k, row("v1"));
    assertTrue(((KarmaClient) writer).drain(5_000));
    cacheAtTyo(c, k);
  }

  /** TYO's cache reads k from SG (ring 1, nearest from TYO): TYO joins the cached-at set of SG's replica. */
  private static void cacheAtTyo(LocalCluster c, String k) {
    KarmaClient tyo = karma(c, TYO, 100);
    assertEquals(1, tyo.nearestRingFor(List.of(k)));
    tyo.readTxn(List.of(k));
    long deadline = System.currentTimeMillis() + 5_000;
    KarmaServer home = (KarmaServer) c.server(((RingPlacement) c.placement()).serverFor(TYO, k));
    while (!home.cached(k)) {
      tyo.readTxn(List.of(k));
      assertTrue(System.currentTimeMillis() < deadline, "TYO's cache holds " + k);
      Clusters.sleep(20);
    }
  }

  /** {@code n} puts of {@code key}: prefix1 .. prefixN. */
  private static void writeAll(KvClient s, String key, String prefix, int n) {
    for (int i = 1; i <= n; i++) {
      s.write(key, row(prefix + i));
    }
  }

  private static void kill(LocalCluster c, int dc) {
    for (int shard = 0; shard < c.topology().serversPerDc(); shard++) {
      c.server(dc, shard).close();
    }
  }

  /** A fresh key whose replicas in rings 0 and 1 are these datacenters. */
  private String key(LocalCluster c, String prefix, int ring0, int ring1) {
    RingPlacement rings = (RingPlacement) c.placement();
    return Clusters.key(prefix, k -> rings.replicaInRing(0, k) == ring0 && rings.replicaInRing(1, k) == ring1, used);
  }

  private static KarmaClient karma(LocalCluster c, int dc, long notifyAfterMs) {
    return (KarmaClient) c.client(dc, TestOptions.defaults().withRpcTimeoutMs(RPC_TIMEOUT_MS)
        .withSystemOptions(SystemOptions.parse(new KarmaSystem(), Map.of("notify_after_ms",
            Long.toString(notifyAfterMs), "dead_ring_after_timeouts", "2"), "options")));
  }

  /** A key with replicas CA, TYO and SP, written "before" from VA and in every ring; then TYO dies. */
  private String writtenThenTyoKilled(LocalCluster c, String prefix) {
    String t = key(c, prefix, CA, TYO);
    KvClient writer = c.client(VA);
    writer.write(t, row("before"));
    assertTrue(((KarmaClient) writer).drain(5_000), "t is in every ring");
    kill(c, TYO);
    return t;
  }

  @Test
  void karmaReadsAndWritesGoOnWhenADatacenterOfARingDies() {
    try (LocalCluster c = start(new KarmaSystem())) {
      String t = writtenThenTyoKilled(c, "dead-t");

      KarmaClient sg = karma(c, SG, 100);
      assertEquals(1, sg.nearestRingFor(List.of(t)), "TYO (6.8 ms) is SG's nearest replica of t until it fails");
      assertEquals("before", str(sg.readTxn(List.of(t)).rows().get(t)), "read at another ring");
      assertEquals(0, sg.nearestRingFor(List.of(t)), "TYO avoided once a read there failed");
      // As many puts as the write buffer holds return at once; the next waits for room until
      // TYO's ring has answered none of them for two RPC timeouts, then the ring counts as
      // down and the session writes on (§4.4: writes stay available; they wait in the WB).
      writeAll(sg, t, "sg-", BOUND);
      long start = System.currentTimeMillis();
      sg.write(t, row("sg-" + (BOUND + 1)));
      long waited = System.currentTimeMillis() - start;
      assertTrue(waited >= DEAD_RING_AFTER_MS - 300, "the put past the bound waited for the ring to count as down: "
          + waited);
      int puts = 3 * BOUND;
      for (int i = BOUND + 2; i <= puts; i++) {
        long t0 = System.currentTimeMillis();
        sg.write(t, row("sg-" + i));
        assertTrue(System.currentTimeMillis() - t0 < RPC_TIMEOUT_MS, "a put once the ring is down returns at once");
      }
      assertEquals(puts, sg.queued(1), "TYO's ring's queue holds every put");
      assertEquals("sg-" + puts, str(sg.readTxn(List.of(t)).rows().get(t)), "the session reads its own write");
      assertTrue(!sg.drain(200), "the puts wait for TYO's ring");
      // Another session reads them from the rings that have them, in order.
      KarmaClient sp = karma(c, SP, 100);
      Clusters.awaitValue(sp, t, "sg-" + puts, 10_000);
    }
  }

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

  @Test
  void copsPrClientsBoundToTheDeadDatacentersRingCannotReadItsKeys() {
    try (LocalCluster c = start(new CopsPrSystem())) {
      String t = writtenThenTyoKilled(c, "cops-t");
      KvClient sg = c.client(SG);
      assertThrows(OperationFailedException.class, () -> sg.readTxn(List.of(t)), "SG's ring holds t at TYO only");
      assertEquals("before", str(c.client(VA).readTxn(List.of(t)).rows().get(t)), "ring 0 has it");
      // COPS-PR's client coordinator buffers like Karma's: a VA session writes on past the
      // dead ring once it counts as down, and reads its writes in its own ring.
      KarmaClient va = (KarmaClient) c.client(VA, TestOptions.defaults().withRpcTimeoutMs(RPC_TIMEOUT_MS)
          .withSystemOptions(SystemOptions.parse(new CopsPrSystem(), Map.of("dead_ring_after_timeouts", "2"),
              "options")));
      int puts = 2 * BOUND;
      writeAll(va, t, "va-", puts);
      assertEquals(puts, va.queued(1), "ring 1's queue holds every put");
      Clusters.awaitValue(c.client(CA), t, "va-" + puts, 10_000);
    }
  }

  /**
   * A reader in SG reads a in flight at ring 1 (a's replica there: SG, or TYO): VA's put
   * reaches ring 0 and SP 4 s late. TYO dies. Reading b (ring 1's replica: TYO) fails at ring
   * 1, and the session may not go elsewhere while a is missing there (§4.2); once a has
   * reached every other ring the failed read lifts the restriction at once (§4.4
   * Observation 2: a was complete in ring 1 when it was read there, even if ring 1's replica
   * of it is the dead one) and another ring serves b.
   */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(ints = {SG, TYO})
  void aSessionRestrictedToTheDeadDatacentersRingIsLiftedOnceWhatItReadIsComplete(int aInRing1) {
    try (LocalCluster c = start(new KarmaSystem())) {
      String a = key(c, "lift-a", CA, aInRing1);
      String b = key(c, "lift-b", VA, TYO);
      KvClient bWriter = c.client(VA);
      bWriter.write(b, row("b"));
      assertTrue(((KarmaClient) bWriter).drain(5_000), "b is in every ring");
      // a reaches ring 0 and SP 4 s late: after the reader's failed read and the notify-after
      // it sends then (1 s each), and channels stay FIFO, so nothing sent later overtakes it.
      Clusters.slowLink(c, VA, CA, 4_000);
      Clusters.slowLink(c, VA, SP, 4_000);
      KvClient aWriter = c.client(VA);
      aWriter.write(a, row("a"));
      KarmaClient reader = karma(c, SG, 600_000); // lifts only when a read fails
      assertEquals(1, reader.nearestRingFor(List.of(a)));
      Clusters.awaitValue(reader, a, "a", 5_000);
      assertEquals(1, reader.restrictedRing(), "a was read in flight at ring 1");
      kill(c, TYO);
      assertThrows(OperationFailedException.class, () -> reader.readTxn(List.of(b)),
          "ring 0 and SP do not have a yet: the reader stays in ring 1, where b is down");
      assertEquals(1, reader.restrictedRing());
      Clusters.slowLink(c, VA, CA, 0);
      Clusters.slowLink(c, VA, SP, 0);
      // a's writer hears from every ring (ring 1 answered before TYO died): a is complete in
      // ring 0 and SP. (Counting puts applied at CA and SP instead let the read below run
      // before a got there, and pass or fail by a few ms of the check's deadline.)
      assertTrue(((KarmaClient) aWriter).drain(10_000), "a reaches ring 0 and SP once the links are back");
      assertEquals("b", str(reader.readTxn(List.of(b)).rows().get(b)), "lifted, and b read at another ring");
      assertEquals(-1, reader.restrictedRing());
    }
  }

  /**
   * What a lift without ring 1's word keeps. CA's cache holds a's old value, filled from TYO
   * (ring 1; a's ring-0 replica LDN is farther from CA), and TYO's invalidation of it is held
   * up (CA-TYO slowed by 30 s), so a's new value stays in flight. S (SG) reads it at TYO and
   * is restricted to ring 1; TYO dies; S's read of b there fails and lifts the restriction
   * (a is complete in ring 0 and SP). S then writes w. A reader in CA that reads w must not
   * then read a's old value through its cache: w carries a as a dependency, so w is never
   * complete in ring 1 (a's replica there is dead), stays in flight, and restricts the
   * reader to a ring, where its reads bypass the cache. Without the carried dependency w
   * completes, is stable, and the reader reads a through the cache: the old value.
   */
  @Test
  void aLiftWithoutTheRestrictingRingKeepsWhatItReadAsDependencies() {
    try (LocalCluster c = startLeased(30_000)) {
      String a = key(c, "carry-a", LDN, TYO);
      String b = key(c, "carry-b", VA, TYO);
      String w = key(c, "carry-w", CA, SG);
      KvClient writer = c.client(VA);
      writer.write(a, row("old"));
      writer.write(b, row("b"));
      assertTrue(((KarmaClient) writer).drain(5_000));
      KarmaClient ca = karma(c, CA, 100);
      assertEquals(1, ca.nearestRingFor(List.of(a)), "CA's cache fills a from TYO");
      KarmaServer caCache = (KarmaServer) c.server(((RingPlacement) c.placement()).serverFor(CA, a));
      long deadline = System.currentTimeMillis() + 5_000;
      while (!caCache.cached(a)) {
        ca.readTxn(List.of(a));
        assertTrue(System.currentTimeMillis() < deadline, "CA's cache holds a");
        Clusters.sleep(20);
      }
      Clusters.slowLink(c, CA, TYO, 30_000);
      writer.write(a, row("new"));
      KarmaClient s = karma(c, SG, 600_000);
      Clusters.awaitValue(s, a, "new", 5_000);
      assertEquals(1, s.restrictedRing(), "a read in flight at TYO");
      deadline = System.currentTimeMillis() + 10_000;
      while (c.stat(LDN, "puts_applied") < 2 || c.stat(SP, "puts_applied") < 3) {
        assertTrue(System.currentTimeMillis() < deadline, "a's new value is in ring 0 and SP");
        Clusters.sleep(20);
      }
      kill(c, TYO);
      assertEquals("b", str(s.readTxn(List.of(b)).rows().get(b)), "lifted by the failed read, b read elsewhere");
      s.write(w, row("w"));
      Clusters.sleep(1_000); // w reaches every ring it can; without a as a dependency, it is stable
      KarmaClient reader = karma(c, CA, 600_000);
      assertEquals("w", str(reader.readTxn(List.of(w)).rows().get(w)));
      assertEquals("new", str(reader.readTxn(List.of(a)).rows().get(a)), "w follows a's new value");
    }
  }

  /**
   * A dependency check that cannot complete (a version never written) is answered with an
   * error once the RPC timeout has passed, and the server forgets it: before, each notify-after
   * and each retried put-after that waited on a dead or cut-off ring left a waiter behind for
   * good (226,531 at the end of a karma-faults trial, measured).
   */
  @Test
  void aDependencyCheckThatCannotCompleteIsAnsweredWithAnErrorAndForgotten() {
    try (LocalCluster c = start(new KarmaSystem())) {
      String k = key(c, "never-k", CA, SG);
      int server = ((RingPlacement) c.placement()).serverInRing(0, k);
      org.k2bench.core.transport.Endpoint raw = c.transport().openClient(60_000, VA, Runnable::run, m -> { });
      java.util.concurrent.CompletableFuture<org.k2bench.karma.proto.DepsComplete> check = raw.call(server,
          org.k2bench.karma.proto.DepCheck.newBuilder().addDeps(org.k2bench.core.data.Dep.newBuilder().setKey(k)
              .setVersion(42)).build(), org.k2bench.karma.proto.DepsComplete.class);
      Clusters.sleep(200);
      assertEquals(1, c.stat(CA, "dep_waiters"), "the check waits for version 42 of k");
      RuntimeException e = assertThrows(RuntimeException.class,
          () -> org.k2bench.core.api.Calls.await(check, "dependency check", 3 * RPC_TIMEOUT_MS));
      assertTrue(e.getMessage().contains("not complete in this ring"), e.getMessage());
      assertEquals(0, c.stat(CA, "dep_waiters"));
      raw.close();
    }
  }
}
