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

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.OperationFailedException;
import org.k2bench.core.api.SystemOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.RingPlacement;
import org.k2bench.core.testing.TestOptions;

/**
 * The Karma paper's Table 1, "Single AZ" failure, on the rings {VA, CA, LDN}, {TYO, SG}, {SP}
 * (matrix / 10): TYO's servers die. Karma's reads go to another ring and its puts return
 * (past the write buffer's bound once TYO's ring counts as down); COPS-PR clients bound to TYO's ring
 * cannot read the keys TYO held in it. A session restricted to TYO's ring: KarmaDeadRingLiftTest.
 */
class KarmaDeadDatacenterTest extends DeadTyoScenarios {
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
