package org.k2bench.parisstar;

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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.SystemOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Row;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.topology.Placement;
import org.k2bench.k2.K2Client;
import org.k2bench.k2.K2Mutants;
import org.k2bench.core.testing.TestOptions;

/** PaRiS*'s reads: local only through the private cache, otherwise exactly one round. */
class ParisStarReadTest {
  static LocalCluster cluster;
  static Placement placement;
  static final List<String> used = new ArrayList<>();

  @BeforeAll
  static void start() {
    cluster = Clusters.start(new ParisStarSystem(), TestOptions.defaults());
    placement = cluster.placement();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  @AfterEach
  void healLinks() {
    cluster.transport().links().clearExtraDelays();
  }

  static String key(String prefix, int... replicaDcs) {
    return Clusters.key(placement, prefix, -1, replicaDcs, used);
  }

  static Map<String, Row> rows(List<String> keys, String v) {
    Map<String, Row> m = new LinkedHashMap<>();
    keys.forEach(k -> m.put(k, row(v)));
    return m;
  }

  /** Waits until no server holds a local write back for replication (see ParisStarSystem). */
  static void awaitReplicated() {
    long deadline = System.currentTimeMillis() + 5_000;
    while (cluster.stat(-1, "cache_pinned_versions") > 0) {
      assertTrue(System.currentTimeMillis() < deadline, "replication finished");
      Clusters.sleep(10);
    }
  }

  @Test
  void localWhenThePrivateCacheCoversTheNonReplicaKeys() {
    List<String> keys = List.of(key("p", TYO, SG), key("p", SP, LDN), key("p-r", VA, CA));
    KvClient me = cluster.client(VA);
    me.writeTxn(rows(keys, "mine"));
    awaitReplicated();
    Clusters.slowWideArea(cluster, VA, 1_000); // a bound a loaded machine's stalls do not reach
    long remoteBefore = cluster.stat(-1, "remote_reads_served");
    long start = System.nanoTime();
    ReadResult r = me.readTxn(keys);
    double ms = (System.nanoTime() - start) / 1e6;
    keys.forEach(k -> assertEquals("mine", str(r.rows().get(k))));
    assertEquals(0, r.wanRounds(), "own writes come from the private cache, replica keys from VA");
    assertEquals(remoteBefore, cluster.stat(-1, "remote_reads_served"));
    assertTrue(ms < 1_000, "no wide-area message: " + ms + " ms with +1 s on every link");
  }

  /** The private cache's lifetime is PaRiS*'s own option: once it has passed, own writes are read remotely. */
  @Test
  void thePrivateCacheKeepsOwnWritesForItsOptionsLifetime() {
    List<String> keys = List.of(key("ttl", TYO, SG), key("ttl-r", VA, CA));
    ServerOptions shortLived = TestOptions.defaults().withSystemOptions(SystemOptions.parse(new ParisStarSystem(),
        Map.of("private_cache_ttl_ms", "1"), "server.options.paris-star."));
    KvClient me = cluster.client(VA, shortLived);
    me.writeTxn(rows(keys, "mine"));
    awaitReplicated();
    Clusters.sleep(5);
    ReadResult r = me.readTxn(keys);
    keys.forEach(k -> assertEquals("mine", str(r.rows().get(k))));
    assertEquals(1, r.wanRounds(), "after 1 ms the private cache no longer holds the write");
  }

  @Test
  void exactlyOneRoundOtherwiseAndNoDcCache() {
    List<String> keys = List.of(key("q", TYO, SG), key("q", SP, LDN), key("q-r", VA, CA));
    KvClient writer = cluster.client(VA);
    writer.writeTxn(rows(keys, "w"));
    awaitReplicated();
    KvClient reader = cluster.client(VA); // same datacenter, another session
    long fetchesBefore = cluster.stat(VA, "remote_fetches");
    long[] servedBefore = new long[6];
    for (int dc = 0; dc < 6; dc++) {
      servedBefore[dc] = cluster.stat(dc, "remote_reads_served");
    }
    int n = 5;
    for (int i = 0; i < n; i++) {
      Clusters.advance(reader);
      ReadResult r = reader.readTxn(keys);
      keys.forEach(k -> assertEquals("w", str(r.rows().get(k))));
      assertEquals(1, r.wanRounds(), "read " + i + ": the values are nowhere in VA, every time");
    }
    // One round means one request per non-replica key, each to that key's nearest replica.
    assertEquals(2L * n, cluster.stat(VA, "remote_fetches") - fetchesBefore, "one fetch per non-replica key");
    for (int dc = 0; dc < 6; dc++) {
      final int d = dc;
      long expected = n * keys.stream().filter(k -> !placement.isReplica(VA, k)
          && placement.nearestReplica(VA, k) == d).count();
      assertEquals(expected, cluster.stat(dc, "remote_reads_served") - servedBefore[dc],
          "remote reads served in dc " + dc + ": only the nearest replicas, once per read");
    }
    assertEquals(0, cluster.stat(-1, "round1_cached_keys") + cluster.stat(-1, "round2_cache_hits"),
        "no DC cache exists");
    assertEquals(0, cluster.stat(-1, "remote_read_waits"), "remote reads never wait");
  }

  /**
   * The window the other tests wait out: a local write of a non-replica key is held by its
   * server until the replicas acknowledge it. Another session reading it meanwhile must
   * not get it from there (PaRiS*'s caches are private, K2 §VIII): it takes its one
   * remote round. The replicas are made slow so that the window is wide open when it
   * reads.
   */
  @Test
  void anotherSessionNeverReadsAWriteHeldForReplication() {
    assertEquals(1, readWhileHeld("pin"), "not from the writer's held copy: one remote round");
    assertEquals(0, (int) Mutants.runWith(K2Mutants.PARIS_SHARED_PINS, () -> readWhileHeld("pin-mutant")),
        "the shared-pins mutant serves it locally, and this test notices");
  }

  /** Another session's wide-area rounds for a non-replica key read while its write is held. */
  static int readWhileHeld(String prefix) {
    String nonReplica = key(prefix, TYO, SG);
    KvClient writer = cluster.client(VA);
    KvClient reader = cluster.client(VA);
    for (int dc : new int[] {TYO, SG}) {
      Clusters.slowLink(cluster, VA, dc, 400);
    }
    try {
      writer.write(nonReplica, row("held"));
      Clusters.advance(reader); // now causally after the write: it must read "held"
      // Held until TYO and SG acknowledge, 800 ms away: the read's local first round and
      // its second round's lookup come well inside that.
      assertTrue(cluster.stat(VA, "cache_pinned_versions") > 0, "the write is held for replication");
      ReadResult r = reader.readTxn(List.of(nonReplica));
      assertEquals("held", str(r.rows().get(nonReplica)));
      assertEquals(0, writer.readTxn(List.of(nonReplica)).wanRounds(), "the writer reads its own write locally");
      return r.wanRounds();
    } finally {
      cluster.transport().links().clearExtraDelays();
      awaitReplicated();
    }
  }

  @Test
  void privateCacheEntriesExpire() {
    List<String> keys = List.of(key("x", TYO, SG), key("x-r", VA, CA));
    KvClient me = new K2Client(cluster.transport(), 60_500, VA, TestOptions.defaults(),
        new PrivateCache(3_000, System::currentTimeMillis)); // covers the write, replication and a read
    try {
      me.writeTxn(rows(keys, "mine"));
      awaitReplicated();
      assertEquals(0, me.readTxn(keys).wanRounds(), "within the cache's lifetime");
      Clusters.sleep(3_100);
      ReadResult r = me.readTxn(keys);
      assertEquals("mine", str(r.rows().get(keys.get(0))));
      assertEquals(1, r.wanRounds(), "expired: the non-replica value is fetched remotely");
    } finally {
      me.close();
    }
  }
}
