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
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
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
 * Paper §VI-A: replication "can proceed if at least one replica datacenter of each key in
 * those writes is available". TYO, a replica datacenter of half the keys written here, is
 * dead; VA keeps writing keys replicated at {TYO, SG} and {VA, CA}. Every surviving
 * datacenter must learn every write, readers elsewhere must get the values (from SG), and
 * no replication state may pile up waiting for TYO.
 */
class K2DeadReplicaTest {
  static final int[] SURVIVORS = {VA, CA, SP, LDN, SG};
  static final long RPC_TIMEOUT_MS = 2_000;
  LocalCluster cluster;
  final List<String> used = new ArrayList<>();

  @BeforeEach
  void start() {
    cluster = TestCluster.start(TestOptions.defaults().withFailoverTimeoutMs(300).withRpcTimeoutMs(RPC_TIMEOUT_MS));
    awaitEveryoneHeardFromEveryone(cluster); // TYO dies after start-up
    for (int shard = 0; shard < cluster.topology().serversPerDc(); shard++) {
      cluster.server(TYO, shard).close(); // TYO is dead for the whole test
    }
  }

  /**
   * Waits until every server has had an answer from every other datacenter (a connection
   * made while a peer was not listening yet retries after gRPC's back-off, about a second).
   */
  static void awaitEveryoneHeardFromEveryone(LocalCluster cluster) {
    long deadline = System.currentTimeMillis() + 15_000;
    while (cluster.stat(-1, "dcs_never_answered") != 0) {
      assertTrue(System.currentTimeMillis() < deadline, "every server heard from every datacenter");
      Clusters.sleep(20);
    }
  }

  @AfterEach
  void stop() {
    cluster.close();
  }

  /** What the scenario saw: null if every write reached every survivor with nothing left pending. */
  String writeWhileTyoIsDead(String prefix) {
    KvClient writer = cluster.client(VA);
    Map<String, Long> written = new LinkedHashMap<>();
    for (int i = 0; i < 10; i++) {
      String tyoKey = Clusters.key(cluster.placement(), prefix + "-t" + i, -1, new int[] {TYO, SG}, used);
      String vaKey = Clusters.key(cluster.placement(), prefix + "-v" + i, -1, new int[] {VA, CA}, used);
      Map<String, Row> w = new LinkedHashMap<>();
      w.put(tyoKey, row(prefix + i));
      w.put(vaKey, row(prefix + i));
      long v = writer.writeTxn(w).version();
      written.put(tyoKey, v);
      written.put(vaKey, v);
    }
    long deadline = System.currentTimeMillis() + 4_000;
    for (Map.Entry<String, Long> e : written.entrySet()) {
      for (int dc : SURVIVORS) {
        while (!hasVersion(dc, e.getKey(), e.getValue())) {
          if (System.currentTimeMillis() > deadline) {
            return "v" + e.getValue() + " of " + e.getKey() + " never became visible in dc " + dc;
          }
          Clusters.sleep(20);
        }
      }
    }
    // Calls to TYO end at the RPC timeout; by then nothing may be left.
    Clusters.sleep(RPC_TIMEOUT_MS + 500);
    for (String gauge : List.of("replicating", "cache_pinned_versions", "pending_calls", "waiting")) {
      if (cluster.stat(VA, gauge) != 0) {
        return "VA still holds " + cluster.stat(VA, gauge) + " " + gauge;
      }
    }
    for (int dc : SURVIVORS) {
      for (String gauge : List.of("pending_replicated_txns", "incoming_writes")) {
        if (cluster.stat(dc, gauge) != 0) {
          return "dc " + dc + " still holds " + cluster.stat(dc, gauge) + " " + gauge;
        }
      }
    }
    return null;
  }

  boolean hasVersion(int dc, String key, long version) {
    return hasVersion(cluster, dc, key, version);
  }

  /** Whether {@code version} of {@code key} is visible in datacenter {@code dc}'s store (a raw read). */
  static boolean hasVersion(LocalCluster cluster, int dc, String key, long version) {
    int server = cluster.placement().serverFor(dc, key);
    Endpoint raw = cluster.transport().openClient(64_000 + dc, dc, Runnable::run, m -> { });
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

  @Test
  void replicationGoesOnAmongTheSurvivorsAndNothingPilesUp() {
    assertNull(writeWhileTyoIsDead("dead"));
    long partial = cluster.stat(VA, "replication_without_some_replica");
    assertTrue(partial >= 10, "every write with a TYO key went on without TYO: " + partial);
    assertEquals(cluster.topology().serversPerDc(), cluster.stat(VA, "suspected_dcs"),
        "every VA server's heartbeats suspect TYO, and only TYO: writes stopped waiting for it");

    // A reader in LDN (a non-replica datacenter of the TYO keys) gets the value from SG.
    KvClient reader = cluster.client(LDN);
    String k = used.stream().filter(x -> x.startsWith("dead-t9")).findFirst().orElseThrow();
    ReadResult r = Clusters.awaitValue(reader, k, "dead9", 5_000);
    assertEquals("dead9", str(r.rows().get(k)));
    assertEquals(1, r.wanRounds(), "the metadata named SG as the replica with the data: TYO is not asked");
    assertEquals(0, cluster.stat(LDN, "remote_read_failovers"));
  }

  @Test
  void theMutantThatWaitsForEveryReplicaFreezesReplication() {
    String seen = Mutants.runWith(K2Mutants.REPLICATION_WAITS_EVERY_REPLICA, () -> writeWhileTyoIsDead("mut"));
    assertTrue(seen != null && seen.contains("never became visible"), seen);
  }
}
