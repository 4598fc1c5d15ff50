package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.testing.TestOptions;

/**
 * One-hop dependencies are pairs, not one version per key (K2 §III-B: "the writes of all
 * values it has read since that write"). A session in VA reads k from transaction T5 =
 * {k, j} written in SP, then a newer, concurrent version of k written in LDN, then writes
 * W. SG gets T5 four seconds late. If the session kept only k's newest version as a
 * dependency, SG would apply W once LDN's k arrived, and a reader there would see W with
 * the old j: an effect without its cause.
 */
class K2OneHopDepsTest {
  @Test
  void aNewerConcurrentVersionDoesNotReplaceADependency() throws Exception {
    assertFalse(sgSeesWBeforeT5("d"), "causality: W is visible in SG only after T5");
    assertTrue(Mutants.runWith(Mutants.DEPS_MAX_PER_KEY, () -> {
      try {
        return sgSeesWBeforeT5("d-mut");
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    }),
        "the per-key-max mutant loses T5 as a dependency, and this test sees it");
  }

  static org.k2bench.core.transport.Endpoint raw;

  static org.k2bench.core.transport.Endpoint raw(LocalCluster cluster) {
    if (raw == null) {
      raw = cluster.transport().openClient(65_000, LDN, Runnable::run, m -> { });
    }
    return raw;
  }

  /** Whether a reader in SG saw W together with j older than T5. */
  static boolean sgSeesWBeforeT5(String prefix) throws Exception {
    try (LocalCluster cluster = TestCluster.start(TestOptions.defaults().withGc(500, 500, 2_000))) {
      List<String> used = new ArrayList<>();
      String k = Clusters.key(cluster.placement(), prefix + "-k", -1, new int[] {VA, CA}, used);
      String j = Clusters.key(cluster.placement(), prefix + "-j", -1, new int[] {VA, CA}, used);
      String w = Clusters.key(cluster.placement(), prefix + "-w", -1, new int[] {SP, LDN}, used);
      cluster.transport().links().setExtraDelayMs(SP, SG, 4_000); // T5 reaches SG late
      long t5 = cluster.client(SP).writeTxn(Map.of(k, row("t5"), j, row("t5"))).version();
      KvClient session = cluster.client(VA);
      Clusters.awaitValue(session, k, "t5", 3_000); // reads k:t5 (its last read), after a write
      // LDN's server has T5's metadata (so its clock is past t5), its client never read T5:
      // c8 is a newer version of k, concurrent with T5.
      int ldnServer = cluster.placement().serverFor(LDN, k);
      long wait = System.currentTimeMillis() + 3_000;
      while (!K2FailoverTest.metadataArrived(raw(cluster), ldnServer, k, t5)) {
        assertTrue(System.currentTimeMillis() < wait, "T5's metadata reached LDN");
        Clusters.sleep(10);
      }
      cluster.client(LDN).write(k, row("c8"));
      long deadline = System.currentTimeMillis() + 3_000;
      while (!"c8".equals(str(session.readTxn(List.of(k)).rows().get(k)))) { // no write: t5 expires
        assertTrue(System.currentTimeMillis() < deadline, "the session reads c8");
        Clusters.sleep(20);
      }
      session.write(w, row("W")); // depends on k:t5 and k:c8
      KvClient reader = cluster.client(SG);
      deadline = System.currentTimeMillis() + 6_000;
      while (System.currentTimeMillis() < deadline) {
        ReadResult r = reader.readTxn(List.of(w, j));
        if ("W".equals(str(r.rows().get(w)))) {
          return r.versions().get(j) < t5; // W without its cause
        }
        Clusters.sleep(20);
      }
      throw new AssertionError("SG never showed W");
    } finally {
      raw = null; // closed with its cluster's transport
    }
  }
}
