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
    assertEquals("old", Mutants.runWith(KarmaMutants.KARMA_NO_INVALIDATION, () -> cachedValueAfterADependentRead("m")));
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

  /**
   * §4.3: a fill that was outstanding when an invalidation of its key reached the cache is
   * not kept (the replica's reply and a later invalidation may be handled in either order on
   * the cache's thread). Here the fill's reply from VA is 300 ms late and the invalidation
   * reaches CA's cache while it waits, as another ring's replica would send it; returns
   * whether the cache kept the value.
   */
  private int nextProbeId;

  private boolean keptAFillInvalidatedWhileOutstanding(String prefix) throws Exception {
    String x = key(prefix + "-x", VA, TYO);
    KarmaClient writer = client(LDN, 20);
    writer.write(x, row("old"));
    assertTrue(writer.drain(5_000));
    Clusters.sleep(500); // stable at VA (a few ms; the rest is for a loaded machine's stalls)
    int home = rings.serverFor(CA, x);
    org.k2bench.core.transport.Endpoint ep = cluster.transport().openClient(60_000 + nextProbeId++, CA,
        Runnable::run, m -> { });
    try {
      cluster.transport().links().setExtraDelayMs(VA, CA, 300);
      java.util.concurrent.CompletableFuture<org.k2bench.karma.proto.CacheGetReply> fill = ep.call(home,
          org.k2bench.karma.proto.CacheGet.newBuilder().setKey(x).setReplicaServer(rings.serverInRing(0, x)).build(),
          org.k2bench.karma.proto.CacheGetReply.class);
      Clusters.sleep(50);
      ep.call(home, org.k2bench.karma.proto.Invalidate.newBuilder().setKey(x).build(),
          org.k2bench.karma.proto.Invalidated.class).get(5, java.util.concurrent.TimeUnit.SECONDS);
      org.k2bench.karma.proto.CacheGetReply r = fill.get(5, java.util.concurrent.TimeUnit.SECONDS);
      assertEquals("old", str(r.getValue().getValue()));
      assertTrue(!r.getValue().getInFlight() && !r.getHit(), "a miss, filled with a stable value");
      return ((KarmaServer) cluster.server(home)).cached(x);
    } finally {
      ep.close();
    }
  }

  @Test
  void aFillInvalidatedWhileOutstandingIsNotKept() throws Exception {
    assertTrue(!keptAFillInvalidatedWhileOutstanding("inv"), "the cache dropped the fill");
  }

  @Test
  void aFillThatIgnoresTheInvalidationKeepsTheOldValue() throws Exception {
    assertTrue(Mutants.runWith(KarmaMutants.KARMA_FILL_IGNORES_INVALIDATION, () -> {
      try {
        return keptAFillInvalidatedWhileOutstanding("invm");
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    }), "the cache kept the old value after its invalidation");
  }

  /**
   * A late, older put of h (A in SP; its put reaches ring 1's TYO a second late) arrives after
   * C's newer put is stable everywhere: TYO files it behind C's version (last writer wins).
   * Readers still read C's value, so the key stays stable and SG's cached copy stays: a
   * reader in TYO is not restricted, and SG's cache still serves C's value.
   */
  @Test
  void aLateOlderPutLeavesTheKeyStableAndItsCachedCopies() {
    String h = key("late-h", CA, TYO);
    KarmaClient a = client(SP, 20);
    KarmaClient c = client(CA, 20);
    KarmaServer tyo = (KarmaServer) cluster.server(rings.serverInRing(1, h));
    cluster.transport().links().setExtraDelayMs(SP, TYO, 1_000);
    long older = a.write(h, row("a")).version();
    Clusters.sleep(2);
    assertTrue(c.write(h, row("c")).version() > older, "C's put is the newer");
    assertTrue(c.drain(5_000), "C's put is in every ring");
    Clusters.sleep(100); // its stable notification reaches TYO
    KarmaClient sg = client(SG, 20);
    long deadline = System.currentTimeMillis() + 2_000;
    KarmaServer sgHome = (KarmaServer) cluster.server(rings.serverFor(SG, h));
    while (!sgHome.cached(h) && System.currentTimeMillis() < deadline) {
      assertEquals("c", str(sg.readTxn(List.of(h)).rows().get(h)));
    }
    assertTrue(sgHome.cached(h), "SG's cache holds C's stable value");
    assertTrue(!tyo.committed(h, older), "A's put is still on its way to TYO");
    deadline = System.currentTimeMillis() + 3_000;
    while (!tyo.committed(h, older) && System.currentTimeMillis() < deadline) {
      Clusters.sleep(2);
    }
    assertTrue(tyo.committed(h, older), "A's late put reached TYO");
    // A's stable notification is a second behind (SP to TYO is slowed): until then, a key
    // marked in flight for A's put would restrict the reader and bypass SG's cache.
    KarmaClient reader = client(TYO, 600_000);
    assertEquals("c", str(reader.readTxn(List.of(h)).rows().get(h)));
    assertEquals(-1, reader.restrictedRing(), "C's value is stable: reading it restricts nobody");
    assertTrue(sgHome.cached(h), "TYO did not invalidate SG's copy of the newer value");
  }
}
