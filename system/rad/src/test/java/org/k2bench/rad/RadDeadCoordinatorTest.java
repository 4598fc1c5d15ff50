package org.k2bench.rad;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.WotSubRequest;
import org.k2bench.core.testing.TestOptions;

/**
 * A RAD cohort whose transaction's coordinator never commits (its datacenter died after
 * the prepare): a read that must resolve the transaction fails after the RPC timeout
 * instead of waiting forever, and leaves no waiters or status checks behind.
 */
class RadDeadCoordinatorTest {
  @Test
  void aReadBlockedByADeadCoordinatorFailsInTimeAndLeavesNothingBehind() {
    ServerOptions options = TestOptions.defaults().withRpcTimeoutMs(800);
    try (LocalCluster cluster = Clusters.start(new RadSystem(), options)) {
      List<String> used = new ArrayList<>();
      String k = Clusters.key(cluster.placement(), "dc-k", -1, new int[] {VA, CA}, used);
      String later = Clusters.key(cluster.placement(), "dc-x", -1, new int[] {VA, CA}, used);
      String spKey = Clusters.key(cluster.placement(), "dc-sp", -1, new int[] {SP, LDN}, used);
      int vaServer = cluster.placement().serverFor(VA, k);
      int spServer = cluster.placement().serverFor(SP, spKey);
      KvClient reader = cluster.client(VA);
      reader.write(k, row("k0"));
      // A client's sub-request reaches VA, naming SP's server as the coordinator, whose own
      // sub-request never arrives: k stays pending in VA for good.
      Endpoint fake = cluster.transport().openClient(62_000, VA, Runnable::run, m -> { });
      fake.send(vaServer, WotSubRequest.newBuilder().setTxnId((1L << 16) | 62_000).setCoordinatorKey(spKey)
          .setCoordinator(spServer).setNumParticipants(2).addParticipants(vaServer).addParticipants(spServer)
          .addWrites(KeyValue.newBuilder().setKey(k).setValue(row("never"))).build());
      Clusters.sleep(50);
      reader.write(later, row("x")); // effective time above the pending prepare
      long start = System.currentTimeMillis();
      assertThrows(RuntimeException.class, () -> reader.readTxn(List.of(k, later)));
      long ms = System.currentTimeMillis() - start;
      assertTrue(ms < 3 * options.rpcTimeoutMs(), "failed after the timeout, not forever: " + ms + " ms");
      Clusters.sleep(2 * options.rpcTimeoutMs());
      assertEquals(0, cluster.stat(VA, "waiting"), "the read's wait expired");
      assertTrue(cluster.stat(VA, "reads_unresolved") >= 1);
      assertTrue(cluster.stat(SP, "status_checks_expired") >= 1, "the coordinator gave up the status check");
      assertEquals(1, cluster.stat(VA, "pending_client_txns"), "the transaction itself stays undecided");
      fake.close();
    }
  }
}
