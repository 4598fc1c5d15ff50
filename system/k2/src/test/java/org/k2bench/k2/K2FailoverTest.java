package org.k2bench.k2;

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

/**
 * Paper §VI-A: with f = 2, a read whose nearest replica datacenter is down fails over to
 * the other replica datacenter and still returns the version its metadata chose.
 */
class K2FailoverTest {
  @Test
  void aRemoteReadFailsOverToTheOtherReplicaWhenTheNearestIsDown() throws Exception {
    try (LocalCluster cluster = TestCluster.start(ServerOptions.defaults().withFailoverTimeoutMs(300))) {
      List<String> used = new ArrayList<>();
      String k = Clusters.key(cluster.placement(), "fo", -1, new int[] {TYO, SG}, used);
      assertEquals(TYO, cluster.placement().nearestReplica(CA, k), "CA's nearest replica of k is TYO");
      long v1 = cluster.client(VA).writeTxn(Map.of(k, row("v1"))).version();

      // Wait until CA has v1's metadata, without reading its value (which would cache it).
      int caServer = cluster.placement().serverFor(CA, k);
      Endpoint raw = cluster.transport().openClient(63_000, CA, Runnable::run, m -> { });
      long deadline = System.currentTimeMillis() + 5_000;
      while (!metadataArrived(raw, caServer, k, v1)) {
        assertTrue(System.currentTimeMillis() < deadline, "v1's metadata reached CA");
        Clusters.sleep(10);
      }
      raw.close();

      for (int shard = 0; shard < cluster.topology().serversPerDc(); shard++) {
        cluster.server(TYO, shard).close(); // TYO is down
      }
      KvClient reader = cluster.client(CA);
      ReadResult r;
      deadline = System.currentTimeMillis() + 10_000;
      do { // a session reads the initial version until its read_ts passes v1's EVT in CA (§V-B)
        assertTrue(System.currentTimeMillis() < deadline, "the reader reaches v1");
        Clusters.advance(reader);
        r = reader.readTxn(List.of(k));
      } while (str(r.rows().get(k)).isEmpty());
      assertEquals("v1", str(r.rows().get(k)), "read from SG despite TYO being down");
      assertEquals(v1, r.versions().get(k));
      assertEquals(2, r.wanRounds(), "one round to TYO that timed out, one to SG");
      assertEquals(1, cluster.stat(CA, "remote_read_failovers"));
      assertEquals(1, cluster.stat(SG, "remote_reads_served"), "SG served it");
    }
  }

  /**
   * §VI-A: non-replica datacenters "send their remote read requests to the available
   * replica datacenters". Once a read failed over from TYO, the next read of a key whose
   * nearest replica is TYO goes to SG at once; TYO's late answer lifts the suspicion, and
   * reads go to TYO again.
   */
  @Test
  void afterOneFailoverReadsSkipTheSuspectedDatacenterUntilItAnswersAgain() throws Exception {
    try (LocalCluster cluster = TestCluster.start(ServerOptions.defaults().withFailoverTimeoutMs(300))) {
      List<String> used = new ArrayList<>();
      String[] keys = new String[3];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = Clusters.key(cluster.placement(), "sus" + i, 0, new int[] {TYO, SG}, used);
        assertEquals(TYO, cluster.placement().nearestReplica(CA, keys[i]));
      }
      Map<String, Long> v1 = new java.util.HashMap<>();
      for (String k : keys) {
        v1.put(k, cluster.client(VA).writeTxn(Map.of(k, row("v1"))).version());
      }
      Endpoint raw = cluster.transport().openClient(63_001, CA, Runnable::run, m -> { });
      long deadline = System.currentTimeMillis() + 5_000;
      for (String k : keys) {
        while (!metadataArrived(raw, cluster.placement().serverFor(CA, k), k, v1.get(k))) {
          assertTrue(System.currentTimeMillis() < deadline, "v1's metadata reached CA");
          Clusters.sleep(10);
        }
      }
      raw.close();
      String advance = Clusters.key(cluster.placement(), "adv", -1, new int[] {VA, CA}, used);

      // TYO answers CA 3 s late: cut off, as far as a 300 ms failover timeout can tell.
      cluster.transport().links().setExtraDelayMs(TYO, CA, 3_000);
      KvClient reader = cluster.client(CA);
      ReadResult first = readUntilV1(reader, advance, keys[0]);
      assertEquals(2, first.wanRounds(), "timed out at TYO, then SG");
      ReadResult second = readUntilV1(reader, advance, keys[1]);
      assertEquals(1, second.wanRounds(), "straight to SG: TYO is suspected");
      assertEquals(1, cluster.stat(CA, "remote_read_failovers"));
      assertEquals(2, cluster.stat(SG, "remote_reads_served"));

      cluster.transport().links().clearExtraDelays();
      deadline = System.currentTimeMillis() + 10_000;
      while (cluster.stat(CA, "suspected_dcs") > 0) { // TYO's late answers arrive
        assertTrue(System.currentTimeMillis() < deadline, "TYO's late answer lifted the suspicion");
        Clusters.sleep(20);
      }
      long tyoServed = cluster.stat(TYO, "remote_reads_served");
      ReadResult third = readUntilV1(reader, advance, keys[2]);
      assertEquals(1, third.wanRounds());
      assertEquals(tyoServed + 1, cluster.stat(TYO, "remote_reads_served"), "TYO, the nearest, serves it again");
      assertEquals(2, cluster.stat(SG, "remote_reads_served"));
    }
  }

  /** Reads until v1, moving the session on by writes that never involve TYO. */
  private static ReadResult readUntilV1(KvClient reader, String advance, String k) throws Exception {
    long deadline = System.currentTimeMillis() + 10_000;
    ReadResult r;
    do {
      assertTrue(System.currentTimeMillis() < deadline, "the reader reaches v1 of " + k);
      reader.write(advance, row("on"));
      r = reader.readTxn(List.of(k));
    } while (str(r.rows().get(k)).isEmpty());
    assertEquals("v1", str(r.rows().get(k)));
    return r;
  }

  static boolean metadataArrived(Endpoint raw, int server, String key, long version) throws Exception {
    ReadReply r = raw.call(server, ReadRequest.newBuilder().addKeys(key).setReadTs(0).build(), ReadReply.class)
        .get(5, TimeUnit.SECONDS);
    return r.getKeys(0).getVersionsList().stream().anyMatch(v -> v.getVersion() == version);
  }
}
