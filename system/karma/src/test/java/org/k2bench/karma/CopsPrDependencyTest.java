package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;

/**
 * COPS-PR's put-after (Karma paper §2.2; COPS's nearest dependencies): each ring applies a put
 * only after the in-flight values its writer read are complete there, and a version known to
 * be in every ring is no dependency (COPS's never-depend rule).
 */
class CopsPrDependencyTest extends KarmaClusterTest {
  @Override
  protected StoreSystem system() {
    return new CopsPrSystem();
  }

  /**
   * A (VA) puts x; ring 0 gets it late (VA to CA slowed one way), ring 1 at once. B (TYO,
   * bound to ring 1) reads A's x and puts y, whose replica in ring 0 is LDN. D (CA, bound to
   * ring 0) reads y until it has B's, then reads x. Returns what D reads of x.
   */
  private String readAfterDependentPut(String prefix) {
    String x = key(prefix + "-x", CA, TYO);
    String y = key(prefix + "-y", LDN, SG);
    KvClient a = cluster.client(VA);
    KvClient b = cluster.client(TYO);
    KvClient d = cluster.client(CA);
    a.write(x, row("old"));
    assertTrue(((KarmaClient) a).drain(5_000));
    cluster.transport().links().setExtraDelayMs(VA, CA, 800);
    a.write(x, row("a"));
    awaitRead(b, x, "a");
    b.write(y, row("b"));
    awaitRead(d, y, "b");
    String read = str(d.readTxn(List.of(x)).rows().get(x));
    // every put in every ring before the next test counts the servers' puts
    assertTrue(((KarmaClient) a).drain(5_000) && ((KarmaClient) b).drain(5_000));
    return read;
  }

  private static void awaitRead(KvClient client, String key, String want) {
    long deadline = System.currentTimeMillis() + 5_000;
    while (!want.equals(str(client.readTxn(List.of(key)).rows().get(key))) && System.currentTimeMillis() < deadline) {
      Clusters.sleep(2);
    }
    assertEquals(want, str(client.readTxn(List.of(key)).rows().get(key)), "datacenter " + client.dc() + " reads " + want);
  }

  @Test
  void aPutIsAppliedInARingOnlyAfterWhatItsWriterReadInFlight() {
    assertEquals("a", readAfterDependentPut("dep"), "D read B's y, which follows A's x");
  }

  @Test
  void withoutPutAfterARingAppliesAPutBeforeWhatItsWriterRead() {
    assertEquals("old", Mutants.runWith(KarmaMutants.COPS_PR_NO_PUT_AFTER, () -> readAfterDependentPut("nodep")),
        "ring 0 applied B's y before A's x");
  }

  /**
   * A value whose writer has told every ring it is stable is no dependency of a later put
   * (never-depend); before COPS-PR had the rule, B's put of y was a put-after in every ring.
   */
  @Test
  void aStableValueReadIsNoDependency() {
    String x = key("stable-x", CA, TYO);
    String y = key("stable-y", LDN, SG);
    KvClient a = cluster.client(VA);
    a.write(x, row("a"));
    assertTrue(((KarmaClient) a).drain(5_000));
    Clusters.sleep(600); // the stable notification reaches TYO (8 ms one way; the rest for stalls)
    KvClient b = cluster.client(TYO);
    assertEquals("a", str(b.readTxn(List.of(x)).rows().get(x)));
    long putAfters = cluster.stat(-1, "put_afters");
    long applied = cluster.stat(-1, "puts_applied");
    b.write(y, row("b"));
    assertTrue(((KarmaClient) b).drain(5_000));
    assertEquals(applied + 3, cluster.stat(-1, "puts_applied"), "y is in the three rings");
    assertEquals(putAfters, cluster.stat(-1, "put_afters"), "no ring was asked to wait for x");
  }
}
