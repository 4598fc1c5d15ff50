package org.k2bench.paris;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.testing.TestOptions;

/**
 * PaRiS, BPR and NoCC on the interleaving that separates them (PaRiS paper §III and §V): a
 * writer in CA writes x, whose replicas are TYO and SG, and then y, replicated at VA and CA,
 * so y causally depends on x. The writer's coordinator prepares x at one replica of x and a
 * reader in VA reads x from the other (preferred replicas go round-robin over datacenters),
 * and replication between those two replicas is held back by 2 s. The reader then reads x
 * and y in one transaction, once y has reached VA.
 *
 * <p>NoCC returns the new y with the old x: the bad interleaving happens. PaRiS reads at the
 * UST, which the slow replica holds back, so it returns the old y and the old x, consistent,
 * at once. BPR reads at a fresh snapshot and blocks until the slow replica has x. A PaRiS that
 * reads above the UST without its cache (a mutant) returns the new y with the old x.
 */
class ParisProtocolTest {
  static final long HOLD_MS = 2_000;

  record Outcome(String x, String y, long readMs, ReadResult read) {}

  static Outcome scenario(StoreSystem system, ServerOptions options) {
    try (LocalCluster cluster = Clusters.start(system, options)) {
      Cast cast = Cast.of(cluster, "x", "y").seeded("x0", "y0");
      String x = cast.far();
      String y = cast.near();
      KvClient writer = cast.writer();
      Clusters.slowLink(cluster, TYO, SG, HOLD_MS); // the replicas of x stop hearing each other
      writer.write(x, row("x1"));
      writer.write(y, row("y1")); // depends on x1 through session order
      Clusters.sleep(300); // y1 has long reached VA (its one-way delay here is 3 ms)
      long start = System.nanoTime();
      ReadResult r = cast.reader().readTxn(List.of(x, y));
      long ms = (System.nanoTime() - start) / 1_000_000;
      return new Outcome(str(r.rows().get(x)), str(r.rows().get(y)), ms, r);
    }
  }

  @Test
  void noccReturnsTheEffectWithoutItsCause() {
    Outcome o = scenario(new NoccSystem(), TestOptions.defaults());
    assertEquals("y1", o.y(), "NoCC reads the latest y");
    assertEquals("x0", o.x(), "and the x of the replica that has not heard of x1: causality broken");
  }

  @Test
  void parisReadsAConsistentSnapshotWithoutBlocking() {
    // A replica fail-over waits min(failover timeout, rpc timeout / 4): 2 s by default, the
    // hold's length, so a coordinator starved on a busy machine that failed over once looked
    // like a read that waited for the hold (2,174 ms). Here a fail-over would take 7.5 s.
    Outcome o = scenario(new ParisSystem(),
        TestOptions.defaults().withRpcTimeoutMs(30_000).withFailoverTimeoutMs(8_000));
    assertFalse(o.y().equals("y1") && o.x().equals("x0"), "never the new y with the old x: " + o);
    assertEquals("y0", o.y(), "the UST is held back by the slow replica of x: the old snapshot");
    assertTrue(o.readMs() < HOLD_MS / 2, "non-blocking: " + o.readMs() + " ms with the replica held 2 s, "
        + o.read().wanRounds() + " wide-area round(s)");
    assertTrue(o.read().snapshotLagMs() > 100, "the UST lags: " + o.read().snapshotLagMs() + " ms");
  }

  /** Either way BPR blocks (server.options.bpr.blocking): a polling thread per read (its authors'), or a queue. */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(strings = {"thread", "queue"})
  void bprBlocksUntilTheFreshSnapshotIsInstalled(String blocking) {
    BprSystem bpr = new BprSystem();
    Outcome o = scenario(bpr, TestOptions.defaults().withSystemOptions(org.k2bench.core.api.SystemOptions.parse(
        bpr, Map.of("blocking", blocking), "server.options.bpr.")));
    assertEquals("y1", o.y());
    assertEquals("x1", o.x(), "a fresh and consistent snapshot");
    assertTrue(o.readMs() > HOLD_MS / 2, "it waited for the slow replica: " + o.readMs() + " ms");
    assertTrue(o.readMs() < HOLD_MS * 3 / 2, "answered soon after x1 arrives: " + o.readMs() + " ms");
  }

  /**
   * BPR with a thread per blocked read: a read blocked when its server closes leaves no thread
   * polling behind (the snapshot would never advance again), and one blocked read holds one.
   */
  @Test
  void aClosedBprServerLeavesNoBlockedReadThreadBehind() throws Exception {
    java.util.function.LongSupplier pollers = () -> Thread.getAllStackTraces().entrySet().stream()
        .filter(e -> java.util.Arrays.stream(e.getValue()).anyMatch(f -> f.getMethodName().equals("waitInThread")))
        .count();
    try (LocalCluster cluster = Clusters.start(new BprSystem(), TestOptions.defaults())) {
      Cast cast = Cast.of(cluster, "x", "y").seeded("x0", "y0");
      String x = cast.far();
      Clusters.slowLink(cluster, TYO, SG, 60_000); // x's replicas stop hearing each other
      cast.writer().write(x, row("x1"));
      CompletableFuture.runAsync(() -> {
        try {
          cast.reader().readTxn(List.of(x));
        } catch (RuntimeException e) {
          // the cluster closes under it
        }
      });
      long deadline = System.currentTimeMillis() + 5_000;
      while (pollers.getAsLong() == 0 && System.currentTimeMillis() < deadline) {
        Clusters.sleep(20);
      }
      assertEquals(1, pollers.getAsLong(), "the blocked read holds a thread");
    }
    long deadline = System.currentTimeMillis() + 5_000; // a poll is 0.5 ms; a loaded machine stalls
    while (pollers.getAsLong() > 0 && System.currentTimeMillis() < deadline) {
      Clusters.sleep(20);
    }
    assertEquals(0, pollers.getAsLong(), "and it stopped when its server closed");
  }

  @Test
  void aParisThatReadsAboveTheUstWithoutItsCacheIsCaught() {
    Outcome o = Mutants.runWith(ParisMutants.PARIS_ABOVE_UST,
        () -> scenario(new ParisSystem(), TestOptions.defaults()));
    assertEquals("y1", o.y());
    assertEquals("x0", o.x(), "the scenario catches it");
  }

  /**
   * Causality across a session's transactions rests on hwt (Proposition 1, case 1): the
   * cohorts of x run their clocks 4 s ahead, so x1 commits 4 s in the future; the writer's
   * next transaction writes y at a cohort whose clock is at wall time, and only hwt (the
   * commit time of x1, passed as ht) makes it propose above x1. Without it y2 commits below x1
   * and readers see y2 without x1 until the UST passes x1.
   */
  static boolean newYWithOldX(StoreSystem system) {
    // Each transaction at the next coordinator (the paper's per-transaction choice, §IV-B): a
    // coordinator's own commit times only grow, so one coordinator would order them anyway.
    ServerOptions rotating = TestOptions.defaults().withSystemOptions(org.k2bench.core.api.SystemOptions.parse(
        system, Map.of("rotate_coordinator", "true"), "server.options.paris."));
    try (LocalCluster cluster = Clusters.start(system, rotating)) {
      Cast cast = Cast.of(cluster, "x", "y");
      String x = cast.far();
      String y = cast.near();
      int p = cluster.placement().partitionOf(x);
      // 4 s: the window in which the anomaly can show closes when the UST passes x1, and on a
      // loaded machine the two writes alone took most of 2 s (the mutant then went unseen)
      long ahead = org.k2bench.core.clock.LamportClock.hybridCounter(System.currentTimeMillis() + 4_000);
      for (int d : new int[] {TYO, SG}) {
        cluster.server(cluster.placement().serverOf(d, p)).endpoint().clock().observeCounter(ahead);
      }
      cast.writer().write(x, row("x1"));
      cast.writer().write(y, row("y2"));
      long until = System.currentTimeMillis() + 3_000;
      while (System.currentTimeMillis() < until) {
        ReadResult r = cast.reader().readTxn(List.of(x, y));
        if (str(r.rows().get(y)).equals("y2") && !str(r.rows().get(x)).equals("x1")) {
          return true;
        }
        Clusters.sleep(10);
      }
      return false;
    }
  }

  @Test
  void hwtOrdersASessionsTransactionsAcrossCohortsWhoseClocksDisagree() {
    assertFalse(newYWithOldX(new ParisSystem()), "y2 is never visible without x1");
    assertTrue(Mutants.runWith(ParisMutants.PARIS_NO_HWT, () -> newYWithOldX(new ParisSystem())),
        "without hwt the anomaly shows: the scenario can catch it");
  }

  /**
   * The writer's own writes stay visible to it through its private cache while the UST is
   * held back, and leave the cache once the UST passes them (Alg. 1 line 5).
   */
  @Test
  void ownWritesComeFromThePrivateCacheUntilTheUstPassesThem() {
    try (LocalCluster cluster = Clusters.start(new ParisSystem(), TestOptions.defaults())) {
      Cast cast = Cast.of(cluster, "x", "y");
      String x = cast.far();
      ParisClient writer = (ParisClient) cast.writer();
      Clusters.slowLink(cluster, TYO, SG, HOLD_MS);
      writer.write(x, row("mine"));
      ReadResult r = writer.readTxn(List.of(x));
      assertEquals("mine", str(r.rows().get(x)), "read-your-writes while the UST is held back");
      assertEquals(0, r.wanRounds(), "from the private cache");
      assertEquals(1, writer.cachedWrites());
      Clusters.slowLink(cluster, TYO, SG, 0);
      long deadline = System.currentTimeMillis() + 10_000;
      while (writer.cachedWrites() > 0 && System.currentTimeMillis() < deadline) {
        Clusters.sleep(20);
        writer.readTxn(List.of("other")); // a start prunes the cache
      }
      assertEquals(0, writer.cachedWrites(), "pruned once the UST passed the write");
      assertEquals("mine", str(writer.readTxn(List.of(x)).rows().get(x)), "now from the servers");
    }
  }

  /**
   * A UST held back longer than the GC window (the store's, 0.5 s here) does not collect the
   * versions that snapshots at the UST still read: GC follows S_old, not time.
   */
  @Test
  void aUstFrozenLongerThanTheGcWindowStillReadsItsSnapshot() {
    ServerOptions shortGc = TestOptions.defaults().withGc(500, 500, 500);
    try (LocalCluster cluster = Clusters.start(new ParisSystem(), shortGc)) {
      Cast cast = Cast.of(cluster, "x", "y").seeded("x0", "y0");
      String x = cast.far();
      String y = cast.near();
      KvClient writer = cast.writer();
      Clusters.slowLink(cluster, TYO, SG, 3_000);
      for (int i = 1; i <= 20; i++) { // many newer versions of y, over twice the GC window
        writer.write(y, row("y" + i));
        Clusters.sleep(60);
      }
      ReadResult r = cast.reader().readTxn(List.of(x, y));
      assertEquals("y0", str(r.rows().get(y)), "the version at the frozen UST is still there");
    }
  }
}
