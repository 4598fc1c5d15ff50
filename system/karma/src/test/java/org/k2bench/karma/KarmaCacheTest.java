package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;

/**
 * Datacenter caches (Karma paper §4.3) on the three rings, matrix / 10: they hold stable
 * values only, and a put completes in a ring only after the caches that read the key there
 * acknowledged its invalidation, so a cache never serves a value older than one a session
 * depends on.
 */
class KarmaCacheTest extends KarmaClusterTest {
  /**
   * CA caches x (nearest replica VA, ring 0). LDN puts x then y and waits until both are in
   * every ring. CA reads y until it has the new one and is unrestricted (it is stable, so its
   * causal past, x's new value, is everywhere); its next get of x goes through the cache and
   * must not return the cached old value.
   */
  private String cachedValueAfterADependentRead(String prefix) {
    String x = key(prefix + "-x", VA, TYO);
    String y = key(prefix + "-y", LDN, TYO);
    KarmaClient writer = client(LDN, 20);
    writer.write(x, row("old"));
    assertTrue(writer.drain(5_000));
    KarmaClient reader = client(CA, 20);
    long hits = cluster.stat(CA, "cache_hits");
    long deadline = System.currentTimeMillis() + 5_000;
    while (cluster.stat(CA, "cache_hits") == hits && System.currentTimeMillis() < deadline) {
      assertEquals("old", str(reader.readTxn(List.of(x)).rows().get(x)));
      Clusters.sleep(5);
    }
    assertTrue(cluster.stat(CA, "cache_hits") > hits, "CA's cache serves x");
    writer.write(x, row("new"));
    writer.write(y, row("new"));
    assertTrue(writer.drain(5_000), "both puts are in every ring");
    deadline = System.currentTimeMillis() + 5_000;
    while ((!"new".equals(str(reader.readTxn(List.of(y)).rows().get(y))) || reader.restrictions() > 0)
        && System.currentTimeMillis() < deadline) {
      Clusters.sleep(5);
    }
    assertEquals(-1, reader.restrictedRing(), "the reader read the new y and is unrestricted");
    return str(reader.readTxn(List.of(x)).rows().get(x));
  }

  @Test
  void aCacheNeverServesAValueOlderThanOneTheSessionDependsOn() {
    assertEquals("new", cachedValueAfterADependentRead("c"));
    assertTrue(cluster.stat(-1, "invalidations_sent") > 0, "a replica invalidated CA's copy");
  }

  @Test
  void withoutInvalidationsTheCacheServesTheOldValue() {
    assertEquals("old", Mutants.runWith(Mutants.KARMA_NO_INVALIDATION, () -> cachedValueAfterADependentRead("m")));
  }

  /** A value read in flight is not kept: a demand fill takes stable values only (§3, Read Case 3). */
  @Test
  void anInFlightValueIsNotCached() {
    String x = key("f-x", VA, TYO);
    KarmaClient writer = client(LDN, 20);
    Clusters.slowLink(cluster, LDN, TYO, 1_000); // x stays in flight: ring 1 gets it a second late
    try {
      writer.write(x, row("v"));
      KarmaClient reader = client(CA, 20);
      long misses = cluster.stat(CA, "cache_misses");
      long deadline = System.currentTimeMillis() + 5_000;
      while (!"v".equals(str(reader.readTxn(List.of(x)).rows().get(x))) && System.currentTimeMillis() < deadline) {
        Clusters.sleep(5);
      }
      assertTrue(reader.restrictions() > 0, "the reader read x in flight");
      assertTrue(cluster.stat(CA, "cache_misses") > misses);
      KarmaServer home = (KarmaServer) cluster.server(rings.serverFor(CA, x));
      assertTrue(!home.cached(x), "CA's cache did not keep the in-flight value");
    } finally {
      Clusters.slowLink(cluster, LDN, TYO, 0);
    }
  }
}
