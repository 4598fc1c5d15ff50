package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.k2.proto.ReadReply;
import org.k2bench.k2.proto.ReadRequest;

/**
 * The writing datacenter dies between its first and its second replication phase: a
 * replica has the write and makes it visible to its own readers, nobody else has heard of
 * it. A session there reads it and writes; that write's dependency check waits for the
 * first write in every other datacenter. Unless the replica finishes the replication (K2
 * §VI-A loses only writes that reached no other datacenter), it waits forever, and so does
 * everything that depends on it.
 */
class K2CarryOnTest {
  static final int[] OTHERS = {VA, CA, SP, LDN};
  static final long FAILOVER_MS = 1_000;

  /** Null if both writes reached every survivor and nothing was left pending; else what went wrong. */
  static String originDiesAfterItsReplicaAcknowledged() {
    try (LocalCluster cluster = TestCluster.start(
        ServerOptions.defaults().withFailoverTimeoutMs(FAILOVER_MS).withRpcTimeoutMs(3_000))) {
      List<String> used = new ArrayList<>();
      String x = Clusters.key(cluster.placement(), "x", -1, new int[] {TYO, SG}, used);
      String y = Clusters.key(cluster.placement(), "y", -1, new int[] {VA, CA}, used);

      // SG's acknowledgement never gets back to TYO in time, and TYO dies before its
      // fail-over timeout would let it send the second phase without it.
      KvClient tyo = cluster.client(TYO);
      String warm = Clusters.key(cluster.placement(), "warm", -1, new int[] {TYO, SG}, used);
      long vw = tyo.write(warm, row("w")).version(); // connections and code paths warm
      awaitVersion(cluster, SG, warm, vw, 2_000);
      cluster.transport().links().setExtraDelayMs(SG, TYO, 30_000);
      long start = System.currentTimeMillis();
      long vx = tyo.write(x, row("x1")).version();
      String atSg = awaitVersion(cluster, SG, x, vx, 2_000);
      if (atSg != null) {
        return atSg;
      }
      for (int shard = 0; shard < cluster.topology().serversPerDc(); shard++) {
        cluster.server(TYO, shard).close();
      }
      long killedAfter = System.currentTimeMillis() - start;
      assertTrue(killedAfter < FAILOVER_MS / 2, "TYO died " + killedAfter + " ms after the write, before its "
          + "fail-over timeout could start the second phase (a slow machine breaks this setup)");
      for (int dc : OTHERS) {
        if (hasVersion(cluster, dc, x, vx)) {
          return "TYO's second phase went out before it died: the scenario did not happen";
        }
      }

      KvClient sg = cluster.client(SG);
      Clusters.awaitValue(sg, x, "x1", 5_000); // a session in SG reads x ...
      long vy = sg.write(y, row("y1")).version(); // ... and writes y, which depends on it

      for (int dc : OTHERS) {
        String missing = awaitVersion(cluster, dc, y, vy, 8_000);
        if (missing != null) {
          return missing;
        }
        if (!hasVersion(cluster, dc, x, vx)) {
          return "x is not visible in dc " + dc + " although y, which depends on it, is";
        }
      }
      ReadResult r = Clusters.awaitValue(cluster.client(LDN), x, "x1", 5_000);
      assertEquals(1, r.wanRounds(), "LDN reads x from SG, the replica that carried it on: " + r);

      long deadline = System.currentTimeMillis() + 5_000;
      for (int dc : new int[] {VA, CA, SP, LDN, SG}) {
        for (String gauge : List.of("pending_replicated_txns", "incoming_writes")) {
          while (cluster.stat(dc, gauge) != 0) {
            if (System.currentTimeMillis() > deadline) {
              return "dc " + dc + " still holds " + cluster.stat(dc, gauge) + " " + gauge;
            }
            Clusters.sleep(20);
          }
        }
      }
      assertTrue(cluster.stat(SG, "replication_carried_on") >= 1);
      return null;
    }
  }

  @Test
  void aReplicaFinishesTheReplicationOfAnOriginThatDiedMidway() {
    assertNull(originDiesAfterItsReplicaAcknowledged());
  }

  @Test
  void withoutItTheDependentWriteNeverBecomesVisibleElsewhere() {
    String seen = Mutants.runWith(Mutants.REPLICATION_NOT_CARRIED_ON, K2CarryOnTest::originDiesAfterItsReplicaAcknowledged);
    assertTrue(seen != null && seen.contains("never became visible"), seen);
  }

  /** Waits until {@code <key, version>} is committed in {@code dc}; null, or what did not happen. */
  static String awaitVersion(LocalCluster cluster, int dc, String key, long version, long timeoutMs) {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (!hasVersion(cluster, dc, key, version)) {
      if (System.currentTimeMillis() > deadline) {
        return "v" + version + " of " + key + " never became visible in dc " + dc;
      }
      Clusters.sleep(5);
    }
    return null;
  }

  static boolean hasVersion(LocalCluster cluster, int dc, String key, long version) {
    int server = cluster.placement().serverFor(dc, key);
    Endpoint raw = cluster.transport().openClient(65_000 + dc, dc, Runnable::run, m -> { });
    try {
      ReadReply r = raw.call(server, ReadRequest.newBuilder().addKeys(key).setReadTs(0).build(), ReadReply.class)
          .get(5, TimeUnit.SECONDS);
      return r.getKeys(0).getVersionsList().stream().anyMatch(v -> v.getVersion() == version);
    } catch (Exception e) {
      throw new AssertionError(e);
    } finally {
      raw.close();
    }
  }
}
