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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Row;
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

  /**
   * TYO writes {@code participants} keys replicated at TYO and SG, one per shard (one
   * participant each), and dies once SG has them: its second phase is on its way to the
   * other datacenters, held on those links for 30 s, so nobody there hears of the write
   * from TYO within the test. SG's heartbeats to TYO are unaffected: only the death makes
   * SG suspect it. A session in SG reads the keys and writes y, which depends on them.
   * Null if every write reached every survivor with nothing left pending; else what went
   * wrong.
   */
  static String originDiesBetweenItsTwoPhases(int participants) {
    try (LocalCluster cluster = TestCluster.start(
        ServerOptions.defaults().withFailoverTimeoutMs(FAILOVER_MS).withRpcTimeoutMs(3_000))) {
      List<String> used = new ArrayList<>();
      List<String> xs = new ArrayList<>();
      for (int shard = 0; shard < participants; shard++) {
        xs.add(Clusters.key(cluster.placement(), "x", shard, new int[] {TYO, SG}, used));
      }
      String y = Clusters.key(cluster.placement(), "y", -1, new int[] {VA, CA}, used);
      KvClient tyo = cluster.client(TYO);
      for (int dc : OTHERS) {
        cluster.transport().links().setExtraDelayMs(TYO, dc, 30_000);
      }
      Map<String, Row> w = new LinkedHashMap<>();
      for (String x : xs) {
        w.put(x, row("x1"));
      }
      long vx = participants == 1 ? tyo.write(xs.get(0), row("x1")).version() : tyo.writeTxn(w).version();
      for (String x : xs) {
        String atSg = awaitVersion(cluster, SG, x, vx, 5_000);
        if (atSg != null) {
          return atSg;
        }
      }
      for (int shard = 0; shard < cluster.topology().serversPerDc(); shard++) {
        cluster.server(TYO, shard).close();
      }

      KvClient sg = cluster.client(SG);
      for (String x : xs) {
        Clusters.awaitValue(sg, x, "x1", 5_000); // a session in SG reads x ...
      }
      long vy = sg.write(y, row("y1")).version(); // ... and writes y, which depends on it

      for (int dc : OTHERS) {
        String missing = awaitVersion(cluster, dc, y, vy, 8_000);
        if (missing != null) {
          return missing;
        }
        for (String x : xs) {
          if (!hasVersion(cluster, dc, x, vx)) {
            return x + " is not visible in dc " + dc + " although y, which depends on it, is";
          }
        }
      }
      for (String x : xs) {
        ReadResult r = Clusters.awaitValue(cluster.client(CA), x, "x1", 5_000);
        assertEquals(1, r.wanRounds(), "CA reads " + x + " from SG, the replica that carried it on: " + r);
      }

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
      assertEquals(participants, cluster.stat(SG, "replication_carried_on"), "each participant's part, once");
      return null;
    }
  }

  @Test
  void aReplicaFinishesTheReplicationOfAnOriginThatDiedMidway() {
    assertNull(originDiesBetweenItsTwoPhases(1));
  }

  @Test
  void aTransactionOfTwoParticipantsReachesEveryoneOnlyThroughItsReplica() {
    assertNull(originDiesBetweenItsTwoPhases(2));
  }

  @Test
  void withoutItTheDependentWriteNeverBecomesVisibleElsewhere() {
    String seen = Mutants.runWith(Mutants.REPLICATION_NOT_CARRIED_ON, () -> originDiesBetweenItsTwoPhases(1));
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
