package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.List;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.OperationFailedException;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;

/**
 * The Karma paper's Table 1, "Single AZ" failure (DeadTyoScenarios): a session restricted to
 * TYO's ring when TYO dies stays restricted, failing, while the value it read is not yet
 * complete in the other rings, and is lifted and served by another ring once it is. A class
 * of its own so that the module's two test JVMs share the dead-datacenter scenarios evenly.
 */
class KarmaDeadRingLiftTest extends DeadTyoScenarios {

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
}
