package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.k2.proto.ReadReply;
import org.k2bench.k2.proto.ReadRequest;
import org.k2bench.core.testing.TestOptions;

/**
 * Paper §VI-A: with f = 2, a read whose nearest replica datacenter is down fails over to
 * the other replica datacenter and still returns the version its metadata chose.
 */
class K2FailoverTest {
  /** The later tests' fail-over timeout, the unit of their delays. */
  static final long FAILOVER_MS = 1_000;
  /**
   * The first two tests' fail-over timeout: their read must reach TYO before it is suspected,
   * and at 1 s a read issued on a starved machine (four test JVMs on two cores) found TYO
   * suspected already, twice in one make test.
   */
  static final long RACE_FAILOVER_MS = 2_500;

  @Test
  void aRemoteReadFailsOverToTheOtherReplicaWhenTheNearestIsDown() throws Exception {
    try (LocalCluster cluster = TestCluster.start(TestOptions.defaults().withFailoverTimeoutMs(RACE_FAILOVER_MS))) {
      List<String> used = new ArrayList<>();
      String k = Clusters.key(cluster.placement(), "fo", -1, new int[] {TYO, SG}, used);
      assertEquals(TYO, cluster.placement().nearestReplica(CA, k), "CA's nearest replica of k is TYO");
      long v1 = cluster.client(VA).writeTxn(Map.of(k, row("v1"))).version();

      K2Client reader = (K2Client) cluster.client(CA);
      moveSessionPast(cluster, reader, k, v1, used); // without reading k (that would cache it)

      for (int shard = 0; shard < cluster.topology().serversPerDc(); shard++) {
        cluster.server(TYO, shard).close(); // TYO is down, not yet suspected: CA asks it first
      }
      ReadResult r = reader.readTxn(List.of(k));
      assertEquals("v1", str(r.rows().get(k)), "read from SG despite TYO being down");
      assertEquals(v1, r.versions().get(k));
      assertEquals(2, r.wanRounds(), "one round to TYO that timed out, one to SG");
      assertEquals(1, cluster.stat(CA, "remote_read_failovers"));
      assertEquals(1, cluster.stat(SG, "remote_reads_served"), "SG served it");
    }
  }

  /**
   * §VI-A: non-replica datacenters "send their remote read requests to the available
   * replica datacenters". TYO stops answering CA (4 s late, as far as a 2.5 s fail-over
   * timeout can tell): the read that finds out fails over to SG; once CA's heartbeats
   * have suspected TYO, reads go to SG at once; when TYO answers heartbeats again, reads
   * go to TYO, the nearest, again.
   */
  @Test
  void readsSkipASuspectedReplicaUntilItAnswersHeartbeatsAgain() throws Exception {
    try (LocalCluster cluster = TestCluster.start(TestOptions.defaults().withFailoverTimeoutMs(RACE_FAILOVER_MS))) {
      List<String> used = new ArrayList<>();
      String[] keys = new String[3];
      Map<String, Long> v1 = new java.util.HashMap<>();
      for (int i = 0; i < keys.length; i++) {
        keys[i] = Clusters.key(cluster.placement(), "sus" + i, 0, new int[] {TYO, SG}, used);
        assertEquals(TYO, cluster.placement().nearestReplica(CA, keys[i]));
        v1.put(keys[i], cluster.client(VA).writeTxn(Map.of(keys[i], row("v1"))).version());
      }
      K2Client reader = (K2Client) cluster.client(CA);
      for (String k : keys) {
        moveSessionPast(cluster, reader, k, v1.get(k), used);
      }
      int shards = cluster.topology().serversPerDc();

      cluster.transport().links().setExtraDelayMs(TYO, CA, 4_000);
      ReadResult first = reader.readTxn(List.of(keys[0]));
      assertEquals("v1", str(first.rows().get(keys[0])));
      assertEquals(2, first.wanRounds(), "timed out at TYO (not suspected yet), then SG");
      awaitStat(cluster, CA, "suspected_dcs", shards, "every CA server's heartbeats suspect TYO");
      ReadResult second = reader.readTxn(List.of(keys[1]));
      assertEquals(1, second.wanRounds(), "straight to SG: TYO is suspected");
      assertEquals(1, cluster.stat(CA, "remote_read_failovers"));
      assertEquals(2, cluster.stat(SG, "remote_reads_served"));

      cluster.transport().links().clearExtraDelays();
      awaitStat(cluster, CA, "suspected_dcs", 0, "TYO answers CA's heartbeats again");
      long tyoServed = cluster.stat(TYO, "remote_reads_served");
      ReadResult third = reader.readTxn(List.of(keys[2]));
      assertEquals("v1", str(third.rows().get(keys[2])));
      assertEquals(1, third.wanRounds());
      assertEquals(tyoServed + 1, cluster.stat(TYO, "remote_reads_served"), "TYO, the nearest, serves it again");
      assertEquals(2, cluster.stat(SG, "remote_reads_served"));
      assertEquals(1, cluster.stat(CA, "remote_read_failovers"));
    }
  }

  /**
   * Who is asked first: an available replica beats a suspected one, even one that alone
   * was known to have the version (§VI-A: reads go to the available replica datacenters;
   * the others get the data soon after the second phase); among available ones, one known
   * to have the version beats one that lacked it; distance breaks ties.
   */
  @Test
  void availableReplicasAreAskedFirstThenThoseKnownToHaveTheVersionThenTheNearest() {
    int[] byDistance = {TYO, SG, VA};
    java.util.function.IntPredicate none = d -> false;
    assertArrayEquals(new int[] {TYO, SG, VA}, K2Server.askOrder(byDistance, null, none));
    assertArrayEquals(new int[] {SG, VA, TYO}, K2Server.askOrder(byDistance, null, d -> d == TYO));
    assertArrayEquals(new int[] {SG, TYO, VA}, K2Server.askOrder(byDistance, List.of(SG), none));
    assertArrayEquals(new int[] {SG, VA, TYO}, K2Server.askOrder(byDistance, List.of(TYO), d -> d == TYO),
        "available beats suspected, even when only the suspected one was known to have it");
    assertArrayEquals(new int[] {VA, SG, TYO}, K2Server.askOrder(byDistance, List.of(TYO, VA), d -> d == TYO));
    assertArrayEquals(new int[] {TYO, VA, SG}, K2Server.askOrder(byDistance, List.of(TYO, VA), d -> d == SG));
  }

  /**
   * The bad interleaving behind reads that cost the failover timeout long after a replica
   * datacenter died: VA's write of k (replicas TYO and SG) goes on without SG, which
   * answers late, so VA's second phase tells CA that only TYO has the data; SG gets it
   * soon after; then TYO dies. CA's readers must go to SG, available, at once, and not to
   * TYO, the only one known to have had it, once every time until k is written again.
   */
  @Test
  void aReplicaLeftOutOfAWriteIsAskedBeforeTheDeadOneThatAloneWasKnownToHaveIt() throws Exception {
    try (LocalCluster cluster = TestCluster.start(TestOptions.defaults().withFailoverTimeoutMs(FAILOVER_MS))) {
      List<String> used = new ArrayList<>();
      String k = Clusters.key(cluster.placement(), "left", -1, new int[] {TYO, SG}, used);
      K2DeadReplicaTest.awaitEveryoneHeardFromEveryone(cluster);
      cluster.transport().links().setExtraDelayMs(VA, SG, 3 * FAILOVER_MS);
      long v1 = cluster.client(VA).writeTxn(Map.of(k, row("v1"))).version();
      K2Client reader = (K2Client) cluster.client(CA);
      moveSessionPast(cluster, reader, k, v1, used); // CA has the metadata: [TYO] has the data
      assertTrue(cluster.stat(VA, "replication_without_some_replica") >= 1, "VA went on without SG");
      // (SG's heartbeats to VA come back late too; SG trusts VA again once the delay is
      // cleared, before the first phase arrives, so it does not carry the write on.)
      cluster.transport().links().clearExtraDelays();
      long deadline = System.currentTimeMillis() + 10_000;
      while (!K2DeadReplicaTest.hasVersion(cluster, SG, k, v1)) {
        assertTrue(System.currentTimeMillis() < deadline, "SG gets the late first phase");
        Clusters.sleep(20);
      }
      for (int shard = 0; shard < cluster.topology().serversPerDc(); shard++) {
        cluster.server(TYO, shard).close();
      }
      awaitStat(cluster, CA, "suspected_dcs", cluster.topology().serversPerDc(), "CA's heartbeats suspect TYO");

      ReadResult r = reader.readTxn(List.of(k));
      assertEquals("v1", str(r.rows().get(k)));
      assertEquals(1, r.wanRounds(), "straight to SG, not to TYO, suspected, first");
      assertEquals(0, cluster.stat(CA, "remote_read_failovers"));
    }
  }

  /**
   * The same, but the read comes before SG has the version: SG, asked first, makes it wait;
   * TYO, asked beside it after the failover timeout, is dead. The read must not fail on
   * TYO's error while SG's answer is on its way: SG's call stays open and answers it (a
   * fetch that gave SG only the failover timeout and TYO the rest would fail here).
   */
  @Test
  void aReadWaitsForTheAvailableReplicaThatLacksTheVersionWhenTheOtherIsDead() throws Exception {
    try (LocalCluster cluster = TestCluster.start(TestOptions.defaults().withFailoverTimeoutMs(FAILOVER_MS)
        .withRpcTimeoutMs(20 * FAILOVER_MS))) {
      List<String> used = new ArrayList<>();
      String k = Clusters.key(cluster.placement(), "wait", -1, new int[] {TYO, SG}, used);
      K2DeadReplicaTest.awaitEveryoneHeardFromEveryone(cluster);
      cluster.transport().links().setExtraDelayMs(VA, SG, 10 * FAILOVER_MS); // SG gets v1 ~10 s after the write
      long writtenAt = System.currentTimeMillis();
      long v1 = cluster.client(VA).writeTxn(Map.of(k, row("v1"))).version();
      K2Client reader = (K2Client) cluster.client(CA);
      moveSessionPast(cluster, reader, k, v1, used);
      for (int shard = 0; shard < cluster.topology().serversPerDc(); shard++) {
        cluster.server(TYO, shard).close();
      }
      awaitStat(cluster, CA, "suspected_dcs", cluster.topology().serversPerDc(), "CA's heartbeats suspect TYO");
      // The read comes before SG has v1 (set-up takes ~3 s; SG's answer is ~10 s after the
      // write, inside the 20 s RPC timeout the read's calls get).
      assertTrue(!K2DeadReplicaTest.hasVersion(cluster, SG, k, v1)
          && System.currentTimeMillis() - writtenAt < 8 * FAILOVER_MS, "the read comes before SG has v1");

      ReadResult r = reader.readTxn(List.of(k));
      assertEquals("v1", str(r.rows().get(k)), "SG answered once v1 reached it");
      assertEquals(v1, r.versions().get(k));
      assertEquals(1, cluster.stat(CA, "remote_read_failovers"), "TYO was asked beside SG, and failed");
      assertEquals(2, r.wanRounds(), "waited the failover timeout for SG before asking TYO beside it");
    }
  }

  /**
   * What a reader knows of which replica datacenters have a version, as senders tell it
   * (the origin's second phase, replicas carrying on): the union, and once anyone said
   * every replica has it (an empty list), all of them, whatever comes after.
   */
  @Test
  void replicaListsFromSeveralSendersMergeAndAllAbsorbs() {
    assertEquals(List.of(SG), K2Server.mergeReplicaLists(null, List.of(SG)));
    assertEquals(List.of(VA, SG), K2Server.mergeReplicaLists(List.of(SG), List.of(VA)));
    assertTrue(K2Server.mergeReplicaLists(List.of(SG), List.of()) == K2Server.ALL_REPLICAS);
    assertTrue(K2Server.mergeReplicaLists(K2Server.ALL_REPLICAS, List.of(SG)) == K2Server.ALL_REPLICAS,
        "a carried-on [SG] after the origin said all keeps all");
  }

  static void awaitStat(LocalCluster cluster, int dc, String stat, long expected, String what) {
    long deadline = System.currentTimeMillis() + 10_000;
    while (cluster.stat(dc, stat) != expected) {
      assertTrue(System.currentTimeMillis() < deadline, what + " (" + stat + " = " + cluster.stat(dc, stat) + ")");
      Clusters.sleep(20);
    }
  }

  /**
   * Moves {@code reader}'s read_ts past the EVT of {@code <key, version>} in its datacenter
   * without reading {@code key}: a read of another key on the same server makes the
   * session's clock pass that server's, and a write of its own then carries read_ts along.
   */
  static void moveSessionPast(LocalCluster cluster, K2Client reader, String key, long version, List<String> used)
      throws Exception {
    int server = cluster.placement().serverFor(reader.dc(), key);
    Endpoint raw = cluster.transport().openClient(63_000 + (int) (version % 900), reader.dc(), Runnable::run, m -> { });
    long deadline = System.currentTimeMillis() + 5_000;
    long evt = -1;
    try {
      while (evt < 0) {
        assertTrue(System.currentTimeMillis() < deadline, "the metadata of " + key + " reached " + reader.dc());
        ReadReply r = raw.call(server, ReadRequest.newBuilder().addKeys(key).setReadTs(0).build(), ReadReply.class)
            .get(5, TimeUnit.SECONDS);
        evt = r.getKeys(0).getVersionsList().stream().filter(v -> v.getVersion() == version)
            .mapToLong(v -> v.getEvt()).findFirst().orElse(-1);
        if (evt < 0) {
          Clusters.sleep(10);
        }
      }
    } finally {
      raw.close();
    }
    String probe = Clusters.key("probe", k -> cluster.placement().serverFor(reader.dc(), k) == server, used);
    while (reader.readTs() < evt) {
      assertTrue(System.currentTimeMillis() < deadline, "the session's read_ts passes " + key + "'s EVT");
      reader.readTxn(List.of(probe));
      Clusters.advance(reader);
    }
  }

  static boolean metadataArrived(Endpoint raw, int server, String key, long version) throws Exception {
    ReadReply r = raw.call(server, ReadRequest.newBuilder().addKeys(key).setReadTs(0).build(), ReadReply.class)
        .get(5, TimeUnit.SECONDS);
    return r.getKeys(0).getVersionsList().stream().anyMatch(v -> v.getVersion() == version);
  }
}
