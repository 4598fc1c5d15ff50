package org.k2bench.paris;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
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
import org.k2bench.core.api.ReadWriteTxn;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.testing.TestOptions;

/**
 * The PaRiS paper's invariants where its happy path hides them: a transaction over two
 * partitions becomes visible at once (Proposition 2) while one of its cohorts holds it
 * prepared for seconds; a partition does not apply past a prepared transaction (Alg. 4 lines
 * 6-7); garbage collection spares what a running transaction reads (S_old, §IV-B) and still
 * collects. On the K2 paper's six datacenters with either placement: groups, and the PaRiS
 * paper's hash partitions (§V-A), here six partitions each at two consecutive datacenters.
 */
class ParisInvariantsTest {
  static final long HOLD_MS = 1_000;

  static LocalCluster cluster(StoreSystem system, ServerOptions options, Placement.Scheme scheme) {
    if (scheme == Placement.Scheme.GROUPS) {
      return Clusters.start(system, options);
    }
    return LocalCluster.start(system, FreePorts.assign(TopologyLoader.paperDefault(2, 2, 7000).withRttScale(0.1)
        .withPartitions(6, "127.0.0.1", 7000)), options.withNumKeys(10_000));
  }

  /** What a reader saw of a transaction writing a1 and b1 over a0 and b0. */
  record Seen(int reads, int mixed, boolean bothNew, String firstMixed) {}

  /**
   * A writer in CA commits {a1, b1}: a at VA and CA, b at TYO and SG. CA's links to TYO and
   * SG are slowed by 1 s, so b's cohort prepares the transaction 1 s after a's, holds it
   * prepared until the commit arrives 2 s later, and applies it then, while a is applied and
   * replicated to VA as soon as the coordinator decides, 1 s before b. (BPR's reads block up
   * to 2 s here, within the 3.75 s a cohort keeps a read blocked.) A reader in VA reads a and b,
   * again and again, until it has seen both new values (or 20 s pass).
   */
  static Seen oneTransactionTwoPartitions(StoreSystem system, Placement.Scheme scheme) {
    // The prepare at b's replica takes 2 s (1 s each way): the fail-over timeout is longer, so
    // the coordinator waits for it rather than asking b's other replica (as slow to reach).
    try (LocalCluster c = cluster(system, TestOptions.defaults().withFailoverTimeoutMs(4_000), scheme)) {
      Cast cast = Cast.of(c, "b", "a").seeded("b0", "a0");
      String a = cast.near();
      String b = cast.far();
      assertNotEquals(c.placement().partitionOf(a), c.placement().partitionOf(b));
      KvClient writer = cast.writer();
      KvClient reader = cast.reader();
      Clusters.slowLink(c, CA, TYO, HOLD_MS);
      Clusters.slowLink(c, CA, SG, HOLD_MS);
      CompletableFuture<?> write = CompletableFuture.runAsync(() -> writer.writeTxn(Map.of(a, row("a1"), b, row("b1"))));
      int reads = 0;
      int mixed = 0;
      String first = null;
      boolean both = false;
      long deadline = System.currentTimeMillis() + 20_000;
      while (!(both && write.isDone()) && System.currentTimeMillis() < deadline) {
        ReadResult r = reader.readTxn(List.of(a, b));
        String sa = str(r.rows().get(a));
        String sb = str(r.rows().get(b));
        reads++;
        if (sa.equals("a1") != sb.equals("b1")) {
          mixed++;
          if (first == null) {
            first = sa + "," + sb;
          }
        }
        both |= sa.equals("a1") && sb.equals("b1");
        Clusters.sleep(10);
      }
      write.join();
      Seen seen = new Seen(reads, mixed, both, first);
      System.out.println(system.name() + " " + scheme + (Mutants.active(ParisMutants.PARIS_ABOVE_UST) ? " above-ust"
          : Mutants.active(ParisMutants.PARIS_APPLY_PAST_PREPARED) ? " apply-past-prepared" : "") + ": " + seen);
      return seen;
    }
  }

  @Test
  void parisShowsATwoPartitionTransactionAtOnceWithEitherPlacement() {
    for (Placement.Scheme scheme : Placement.Scheme.values()) {
      Seen s = oneTransactionTwoPartitions(new ParisSystem(), scheme);
      assertEquals(0, s.mixed(), scheme + ": never one new value without the other: " + s);
      assertTrue(s.bothNew(), scheme + ": and the transaction becomes visible: " + s);
      assertTrue(s.reads() > 50, scheme + ": reads never block: " + s);
    }
  }

  @Test
  void bprShowsItAtOnceToo() {
    Seen s = oneTransactionTwoPartitions(new BprSystem(), Placement.Scheme.PARTITIONS);
    assertEquals(0, s.mixed(), s.toString());
    assertTrue(s.bothNew(), s.toString());
  }

  @Test
  void theScenarioCatchesPartialVisibility() {
    Seen nocc = oneTransactionTwoPartitions(new NoccSystem(), Placement.Scheme.PARTITIONS);
    assertTrue(nocc.mixed() > 0, "NoCC reads the latest of each: " + nocc);
    Seen aboveUst = Mutants.runWith(ParisMutants.PARIS_ABOVE_UST,
        () -> oneTransactionTwoPartitions(new ParisSystem(), Placement.Scheme.PARTITIONS));
    assertTrue(aboveUst.mixed() > 0, "reading above the UST shows a1 before b1 is installed: " + aboveUst);
  }

  /**
   * The prepared transaction at b's cohort holds the partition's version clock, and so the
   * UST, below its proposal (Alg. 4 lines 6-7); a partition that applies past it lets the UST
   * pass the transaction's commit time before b1 is installed, and readers see a1 with b0.
   */
  @Test
  void aPartitionThatAppliesPastAPreparedTransactionIsCaught() {
    Seen s = Mutants.runWith(ParisMutants.PARIS_APPLY_PAST_PREPARED,
        () -> oneTransactionTwoPartitions(new ParisSystem(), Placement.Scheme.GROUPS));
    assertTrue(s.mixed() > 0, "the UST passed the commit time with b1 not installed: " + s);
  }

  /**
   * A transaction reads x at its snapshot, then y after twenty newer versions of y were
   * written over 1.2 s and the UST passed them: it still reads y0, the version at its
   * snapshot, because S_old is below every running transaction's snapshot (§IV-B; PaRiS
   * collects by S_old, not by the store's GC window, and a transaction's context lives up to
   * the 5 s transaction timeout), and y's replicas are in other datacenters than the reader's
   * coordinator, so S_old must cross datacenters. Once it ends, garbage collection catches up.
   */
  static String readAfterOverwrites(StoreSystem system, long[] collected) {
    try (LocalCluster c = cluster(system, TestOptions.defaults(), Placement.Scheme.PARTITIONS)) {
      // y far from the reader (at TYO and SG): its replicas keep y0 only if the oldest
      // snapshot of the reader's datacenter reaches them through the roots' exchange.
      Cast cast = Cast.of(c, "y", "x").seeded("y0", "x0");
      String x = cast.near();
      String y = cast.far();
      KvClient writer = cast.writer();
      KvClient reader = cast.reader();
      ReadWriteTxn t = reader.begin();
      assertEquals("x0", str(t.read(List.of(x)).rows().get(x)));
      for (int i = 1; i <= 20; i++) {
        writer.write(y, row("y" + i));
        Clusters.sleep(60);
      }
      Clusters.sleep(300); // the UST passes y20 (a few tens of ms behind here)
      String got;
      try {
        got = str(t.read(List.of(y)).rows().get(y));
      } catch (RuntimeException e) {
        got = "error: " + e.getMessage();
      }
      Clusters.awaitValue(reader, y, "y20", 10_000); // a new transaction: the old one's context goes
      for (int i = 21; i <= 30; i++) {
        writer.write(y, row("y" + i));
        Clusters.sleep(60);
      }
      Clusters.sleep(300); // S_old reaches y's replicas past y20 (the reader's last snapshot, at least)
      writer.write(y, row("y31")); // y's chain is collected when y is written
      Clusters.sleep(100);
      collected[0] = c.stat(-1, "versions_collected");
      System.out.println(system.name() + " read at its old snapshot: " + got + "; versions collected " + collected[0]);
      return got;
    }
  }

  @Test
  void garbageCollectionSparesWhatARunningTransactionReadsAndCollectsTheRest() {
    long[] collected = new long[1];
    assertEquals("y0", readAfterOverwrites(new ParisSystem(), collected), "the version at the snapshot");
    assertTrue(collected[0] >= 2 * 20, "y0..y19 collected at both replicas of y once the transaction ended: "
        + collected[0]);
    String mutant = Mutants.runWith(ParisMutants.PARIS_GC_IGNORES_RUNNING,
        () -> readAfterOverwrites(new ParisSystem(), new long[1]));
    assertTrue(mutant.startsWith("error:") && mutant.contains("garbage-collected"),
        "S_old without running transactions collects y0 under the reader, and the read says so: " + mutant);
  }
}
