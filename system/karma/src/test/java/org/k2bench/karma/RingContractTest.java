package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.testing.SystemContractTest;
import org.k2bench.core.testing.TestOptions;

/**
 * Karma or COPS-PR on the three rings under the guarantees every system gives, and a put
 * stamped by the client coordinator: a fresh session's put outranks the loaded value.
 */
abstract class RingContractTest extends SystemContractTest {
  @Override
  protected LocalCluster startCluster() {
    return LocalCluster.start(system(), Clusters.ringTopology(2), TestOptions.defaults().withNumKeys(10_000));
  }

  /**
   * A loader in SP puts 60 keys, so its clock runs ahead; a fresh session in CA then puts
   * one of them without reading it, and a fresh session reads it once every ring has the
   * put. Returns what that session reads.
   */
  private String readAfterAFreshSessionRewritesALoadedKey(String prefix) {
    KarmaClient loader = (KarmaClient) cluster.client(SP);
    String k = null;
    for (int i = 0; i < 60; i++) {
      k = prefix + "-" + i;
      loader.write(k, row("loaded"));
    }
    assertTrue(loader.drain(5_000), "the load is in every ring");
    KarmaClient writer = (KarmaClient) cluster.client(CA);
    writer.write(k, row("run"));
    assertTrue(writer.drain(5_000), "the put is in every ring");
    return str(cluster.client(CA).readTxn(List.of(k)).rows().get(k));
  }

  @Test
  void aFreshSessionsPutOutranksTheLoadedValue() {
    assertEquals("run", readAfterAFreshSessionRewritesALoadedKey("fresh"));
  }

  /** Before the hybrid stamp (the mutant), the fresh session's put got a version below the load's and was lost. */
  @Test
  void withLamportVersionsTheFreshSessionsPutIsLost() {
    assertEquals("loaded", Mutants.runWith(KarmaMutants.KARMA_LAMPORT_VERSIONS,
        () -> readAfterAFreshSessionRewritesALoadedKey("lamport")));
  }
}
