package org.k2bench.karma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.SystemOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.RingPlacement;
import org.k2bench.core.testing.TestOptions;

/**
 * The Karma paper's Table 1, "Single AZ" failure, on the rings {VA, CA, LDN}, {TYO, SG}, {SP}
 * (matrix / 10): the clusters, keys and helpers (write, cache at TYO, kill TYO) that
 * KarmaDeadDatacenterTest, KarmaDeadRingLiftTest and KarmaCutOffRingTest share. Three classes,
 * not one, so that the module's two test JVMs take about as long as each other.
 */
abstract class DeadTyoScenarios {
  static final long RPC_TIMEOUT_MS = 1_000;
  /** A ring that answered none of a session's puts this long is down for it (two RPC timeouts; default three). */
  static final long DEAD_RING_AFTER_MS = 2 * RPC_TIMEOUT_MS;
  /** The write buffer's bound per ring (default). */
  static final int BOUND = (int) KarmaOptions.WRITE_BUFFER_ENTRIES.defaultValue();
  private final List<String> used = new ArrayList<>();

  static LocalCluster start(StoreSystem system) {
    return LocalCluster.start(system, Clusters.ringTopology(2),
        TestOptions.defaults().withNumKeys(10_000).withRpcTimeoutMs(RPC_TIMEOUT_MS));
  }

  /** A Karma cluster whose caches hold values for {@code leaseMs}. */
  static LocalCluster startLeased(long leaseMs) {
    return LocalCluster.start(new KarmaSystem(), Clusters.ringTopology(2),
        TestOptions.defaults().withNumKeys(10_000).withRpcTimeoutMs(RPC_TIMEOUT_MS).withSystemOptions(
            SystemOptions.parse(new KarmaSystem(), Map.of("cache_lease_ms", Long.toString(leaseMs)), "options")));
  }

  /** {@code writer} writes k = v1 into every ring, then TYO's cache holds it (see cacheAtTyo). */
  static void cachedAtTyo(LocalCluster c, KvClient writer, String k) {
    writer.write(k, row("v1"));
    assertTrue(((KarmaClient) writer).drain(5_000));
    cacheAtTyo(c, k);
  }

  /** TYO's cache reads k from SG (ring 1, nearest from TYO): TYO joins the cached-at set of SG's replica. */
  static void cacheAtTyo(LocalCluster c, String k) {
    KarmaClient tyo = karma(c, TYO, 100);
    assertEquals(1, tyo.nearestRingFor(List.of(k)));
    tyo.readTxn(List.of(k));
    long deadline = System.currentTimeMillis() + 5_000;
    KarmaServer home = (KarmaServer) c.server(((RingPlacement) c.placement()).serverFor(TYO, k));
    while (!home.cached(k)) {
      tyo.readTxn(List.of(k));
      assertTrue(System.currentTimeMillis() < deadline, "TYO's cache holds " + k);
      Clusters.sleep(20);
    }
  }

  /** {@code n} puts of {@code key}: prefix1 .. prefixN. */
  static void writeAll(KvClient s, String key, String prefix, int n) {
    for (int i = 1; i <= n; i++) {
      s.write(key, row(prefix + i));
    }
  }

  static void kill(LocalCluster c, int dc) {
    for (int shard = 0; shard < c.topology().serversPerDc(); shard++) {
      c.server(dc, shard).close();
    }
  }

  /** A fresh key whose replicas in rings 0 and 1 are these datacenters. */
  String key(LocalCluster c, String prefix, int ring0, int ring1) {
    RingPlacement rings = (RingPlacement) c.placement();
    return Clusters.key(prefix, k -> rings.replicaInRing(0, k) == ring0 && rings.replicaInRing(1, k) == ring1, used);
  }

  static KarmaClient karma(LocalCluster c, int dc, long notifyAfterMs) {
    return (KarmaClient) c.client(dc, TestOptions.defaults().withRpcTimeoutMs(RPC_TIMEOUT_MS)
        .withSystemOptions(SystemOptions.parse(new KarmaSystem(), Map.of("notify_after_ms",
            Long.toString(notifyAfterMs), "dead_ring_after_timeouts", "2"), "options")));
  }

  /** A key with replicas CA, TYO and SP, written "before" from VA and in every ring; then TYO dies. */
  String writtenThenTyoKilled(LocalCluster c, String prefix) {
    String t = key(c, prefix, CA, TYO);
    KvClient writer = c.client(VA);
    writer.write(t, row("before"));
    assertTrue(((KarmaClient) writer).drain(5_000), "t is in every ring");
    kill(c, TYO);
    return t;
  }

}
