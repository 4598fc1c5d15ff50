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

  static boolean metadataArrived(Endpoint raw, int server, String key, long version) throws Exception {
    ReadReply r = raw.call(server, ReadRequest.newBuilder().addKeys(key).setReadTs(0).build(), ReadReply.class)
        .get(5, TimeUnit.SECONDS);
    return r.getKeys(0).getVersionsList().stream().anyMatch(v -> v.getVersion() == version);
  }
}
