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
import org.k2bench.core.testing.TestOptions;

/**
 * The writing datacenter dies between its first and its second replication phase: a
 * replica has the write and makes it visible to its own readers, nobody else has heard of
 * it. A session there reads it and writes; that write's dependency check waits for the
 * first write in every other datacenter. Unless the replica finishes the replication (K2
 * §VI-A loses only writes that reached no other datacenter), it waits forever, and so does
 * everything that depends on it.
 */
class K2CarryOnTest {
  static final long FAILOVER_MS = 1_000;

  /**
   * {@code origin} writes one key per entry of {@code replicas} (that key's replica
   * datacenters; one participant per key, or all on one shard), and dies once the replicas
   * in {@code reached} have committed it: its messages to every other datacenter are held
   * on those links for 30 s, so nobody there hears of the write from it within the test.
   * The reached replicas' heartbeats to the origin are unaffected: only the death makes
   * them suspect it. A session in {@code readerDc} reads the keys and writes y (replicated
   * at {@code yReplicas}), which depends on them. Null if every write reached every
   * survivor with nothing left pending; else what went wrong.
   */
  static String originDiesBetweenItsTwoPhases(int origin, int[][] replicas, int[] reached, boolean oneShard,
      int readerDc, int[] yReplicas) {
    try (LocalCluster cluster = TestCluster.start(
        TestOptions.defaults().withFailoverTimeoutMs(FAILOVER_MS).withRpcTimeoutMs(3_000))) {
      List<String> used = new ArrayList<>();
      List<String> xs = new ArrayList<>();
      java.util.Set<Integer> reachedDcs = new java.util.TreeSet<>();
      for (int i = 0; i < replicas.length; i++) {
        xs.add(Clusters.key(cluster.placement(), "x", oneShard ? 0 : i, replicas[i], used));
        reachedDcs.add(reached[i]);
      }
      String y = Clusters.key(cluster.placement(), "y", -1, yReplicas, used);
      List<Integer> survivors = new ArrayList<>();
      for (int dc = 0; dc < cluster.topology().numDcs(); dc++) {
        if (dc != origin) {
          survivors.add(dc);
        }
      }
      KvClient writer = cluster.client(origin);
      K2DeadReplicaTest.awaitEveryoneHeardFromEveryone(cluster); // past start-up
      for (int dc : survivors) {
        if (!reachedDcs.contains(dc)) {
          cluster.transport().links().setExtraDelayMs(origin, dc, 30_000);
        }
      }
      Map<String, Row> w = new LinkedHashMap<>();
      for (String x : xs) {
        w.put(x, row("x1"));
      }
      long vx = xs.size() == 1 ? writer.write(xs.get(0), row("x1")).version() : writer.writeTxn(w).version();
      for (int i = 0; i < xs.size(); i++) {
        String atReplica = awaitVersion(cluster, reached[i], xs.get(i), vx, 5_000);
        if (atReplica != null) {
          return atReplica;
        }
      }
      for (int shard = 0; shard < cluster.topology().serversPerDc(); shard++) {
        cluster.server(origin, shard).close();
      }

      KvClient reader = cluster.client(readerDc);
      for (String x : xs) {
        Clusters.awaitValue(reader, x, "x1", 5_000); // a session reads x ...
      }
      long vy = reader.write(y, row("y1")).version(); // ... and writes y, which depends on it
      for (int dc : survivors) {
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
      int otherReader = survivors.stream().filter(d -> d != readerDc).findFirst().orElseThrow();
      for (String x : xs) {
        ReadResult r = Clusters.awaitValue(cluster.client(otherReader), x, "x1", 5_000);
        assertTrue(r.wanRounds() <= 1, "dc " + otherReader + " reads " + x + " from a live replica: " + r);
      }

      long deadline = System.currentTimeMillis() + 5_000;
      for (int dc : survivors) {
        for (String gauge : List.of("pending_replicated_txns", "incoming_writes")) {
          while (cluster.stat(dc, gauge) != 0) {
            if (System.currentTimeMillis() > deadline) {
              return "dc " + dc + " still holds " + cluster.stat(dc, gauge) + " " + gauge;
            }
            Clusters.sleep(20);
          }
        }
      }
      long carried = 0;
      for (int dc : survivors) {
        carried += cluster.stat(dc, "replication_carried_on");
      }
      long parts = oneShard ? reachedDcs.size() : replicas.length;
      assertEquals(parts, carried, "each replica carried on its part of each participant's sub-request, once");
      return null;
    }
  }

  @Test
  void aReplicaFinishesTheReplicationOfAnOriginThatDiedMidway() {
    assertNull(originDiesBetweenItsTwoPhases(TYO, new int[][] {{TYO, SG}}, new int[] {SG}, true, SG, new int[] {VA, CA}));
  }

  @Test
  void aTransactionOfTwoParticipantsReachesEveryoneOnlyThroughItsReplica() {
    assertNull(originDiesBetweenItsTwoPhases(TYO, new int[][] {{TYO, SG}, {TYO, SG}}, new int[] {SG, SG}, false, SG,
        new int[] {VA, CA}));
  }

  /** VA writes keys it does not replicate, on one shard: SG and LDN each carry on their half. */
  @Test
  void twoReplicasEachCarryOnTheirHalfOfOneSubRequest() {
    assertNull(originDiesBetweenItsTwoPhases(VA, new int[][] {{TYO, SG}, {SP, LDN}}, new int[] {SG, LDN}, true, SG,
        new int[] {TYO, SG}));
  }

  @Test
  void withoutItTheDependentWriteNeverBecomesVisibleElsewhere() {
    String seen = Mutants.runWith(K2Mutants.REPLICATION_NOT_CARRIED_ON, () -> originDiesBetweenItsTwoPhases(TYO,
        new int[][] {{TYO, SG}}, new int[] {SG}, true, SG, new int[] {VA, CA}));
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
