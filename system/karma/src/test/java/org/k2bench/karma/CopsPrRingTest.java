package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.RingPlacement;
import org.k2bench.core.testing.TestOptions;

/**
 * COPS-PR binds each client to its datacenter's ring (Karma paper §1, §5 "Schemes"): a CA
 * client's gets and get-transactions never reach a server outside ring 0, even for keys
 * whose nearest replica is in another ring; Karma's, on the same keys, do.
 */
class CopsPrRingTest {
  /** Ring reads served by the servers of TYO, SG and SP after a CA client read {@code keys}. */
  private static long readsOutsideRing0(StoreSystem system, int rounds) {
    try (LocalCluster cluster = LocalCluster.start(system, Clusters.ringTopology(2),
        TestOptions.defaults().withNumKeys(10_000))) {
      RingPlacement rings = (RingPlacement) cluster.placement();
      List<String> used = new ArrayList<>();
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < 6; i++) { // ring 0's LDN is farther from CA than ring 1's TYO
        keys.add(Clusters.key("k" + i, k -> rings.replicaInRing(0, k) == LDN && rings.replicaInRing(1, k) == TYO,
            used));
      }
      KvClient writer = cluster.client(VA);
      keys.forEach(k -> writer.write(k, row("v")));
      assertTrue(((KarmaClient) writer).drain(5_000));
      KvClient reader = cluster.client(CA);
      for (int r = 0; r < rounds; r++) {
        for (String k : keys) {
          assertEquals("v", str(reader.readTxn(List.of(k)).rows().get(k)));
        }
        assertEquals(3, reader.readTxn(keys.subList(0, 3)).rows().size());
      }
      long outside = 0;
      for (int dc : new int[] {TYO, SG, SP}) {
        outside += cluster.stat(dc, "ring_reads") + cluster.stat(dc, "ring_reads_at") + cluster.stat(dc, "fill_reads");
      }
      return outside;
    }
  }

  @Test
  void copsPrNeverReadsOutsideItsRing() {
    assertEquals(0, readsOutsideRing0(new CopsPrSystem(), 5));
  }

  @Test
  void karmaReadsTheNearestRingOnTheSameKeys() {
    assertTrue(readsOutsideRing0(new KarmaSystem(), 5) > 0, "Karma went to ring 1 (TYO) for them");
  }
}
