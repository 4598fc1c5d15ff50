package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.testing.SystemContractTest;

/** COPS-PR on the three rings under the guarantees every system gives. */
class CopsPrContractTest extends SystemContractTest {
  @Override
  protected StoreSystem system() {
    return new CopsPrSystem();
  }

  @Override
  protected LocalCluster startCluster() {
    return LocalCluster.start(system(), Clusters.ringTopology(2), ServerOptions.defaults().withNumKeys(10_000));
  }

  @Test
  void aFreshSessionsPutOutranksTheLoadedValue() {
    assertEquals("run", KarmaContractTest.readAfterAFreshSessionRewritesALoadedKey(cluster, "fresh"));
  }

  @Test
  void withLamportVersionsTheFreshSessionsPutIsLost() {
    assertEquals("loaded", Mutants.runWith(Mutants.KARMA_LAMPORT_VERSIONS,
        () -> KarmaContractTest.readAfterAFreshSessionRewritesALoadedKey(cluster, "lamport")));
  }
}
