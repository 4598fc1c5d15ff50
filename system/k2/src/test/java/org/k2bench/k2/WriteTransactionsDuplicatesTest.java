package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Row;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.txn.proto.Commit;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.Notify;
import org.k2bench.core.txn.proto.Prepared;
import org.k2bench.core.txn.proto.Replicate;
import org.k2bench.core.txn.proto.ReplicateAck;
import org.k2bench.core.txn.proto.ReplicatedKey;
import org.k2bench.core.txn.proto.WotReply;
import org.k2bench.core.txn.proto.WotSubRequest;
import org.k2bench.core.testing.TestOptions;

/**
 * The write-only transaction engine (shared by K2 and RAD) takes every message a second
 * time without a second effect, as retransmission needs: a repeated sub-request, Prepared
 * or Notify of a committed transaction gets the decision again and leaves nothing pending;
 * a repeated Replicate is acknowledged and dropped.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WriteTransactionsDuplicatesTest {
  LocalCluster cluster;
  final List<String> used = new ArrayList<>();
  final LinkedBlockingQueue<Incoming> got = new LinkedBlockingQueue<>();

  @BeforeAll
  void start() {
    cluster = TestCluster.start(TestOptions.defaults());
  }

  @AfterAll
  void stop() {
    cluster.close();
  }

  long stat(int dc, String name) {
    return cluster.stat(dc, name);
  }

  /** A raw client endpoint in {@code dc} whose incoming messages land in {@link #got}. */
  Endpoint fake(int id, int dc) {
    got.clear();
    return cluster.transport().openClient(id, dc, Runnable::run, got::add);
  }

  Commit nextCommit() throws InterruptedException {
    Incoming m = got.poll(5, TimeUnit.SECONDS);
    assertTrue(m != null && m.is(Commit.class), "the coordinator answers with the Commit again: " + m);
    return m.as(Commit.class);
  }

  void awaitZero(int dc, String gauge) {
    long deadline = System.currentTimeMillis() + 5_000;
    while (stat(dc, gauge) != 0) {
      assertTrue(System.currentTimeMillis() < deadline, dc + " " + gauge + " = " + stat(dc, gauge));
      Clusters.sleep(10);
    }
  }

  @Test
  void aRepeatedSubRequestOrPreparedOfACommittedTransactionGetsTheDecisionAgain() throws Exception {
    String a = Clusters.key(cluster.placement(), "dup-a", 0, new int[] {VA, CA}, used);
    String b = Clusters.key(cluster.placement(), "dup-b", 1, new int[] {VA, CA}, used);
    int coordinator = cluster.placement().serverFor(VA, a);
    int cohort = cluster.placement().serverFor(VA, b);
    assertNotEquals(coordinator, cohort);
    Endpoint fake = fake(62_001, VA);
    long txnId = (1L << 16) | 62_001;
    WotSubRequest.Builder base = WotSubRequest.newBuilder().setTxnId(txnId).setCoordinatorKey(a)
        .setCoordinator(coordinator).setNumParticipants(2).addParticipants(coordinator).addParticipants(cohort);
    WotSubRequest subA = base.clone().addWrites(KeyValue.newBuilder().setKey(a).setValue(row("a1"))).build();
    WotSubRequest subB = base.clone().addWrites(KeyValue.newBuilder().setKey(b).setValue(row("b1"))).build();
    try {
      fake.send(cohort, subB);
      long version = fake.call(coordinator, subA, WotReply.class).get(5, TimeUnit.SECONDS).getVersion();
      awaitZero(VA, "pending_client_txns");
      long wots = stat(VA, "client_wots");

      // The client sends both again (its answer was lost): the same version, nothing prepared again.
      fake.send(cohort, subB);
      long again = fake.call(coordinator, subA, WotReply.class).get(5, TimeUnit.SECONDS).getVersion();
      assertEquals(version, again, "the coordinator answers the decision, it does not commit a second time");
      Clusters.sleep(200);
      assertEquals(wots, stat(VA, "client_wots"), "no second commit");
      assertEquals(2, stat(VA, "wot_duplicates"));
      assertEquals(0, stat(VA, "pending_client_txns"), "the cohort did not prepare its key again");

      // A cohort repeats its Prepared (the Commit to it was lost): it gets the Commit again.
      got.clear();
      fake.send(coordinator, Prepared.newBuilder().setTxnId(txnId).setPrepareTs(1).build());
      Commit c = nextCommit();
      assertEquals(txnId, c.getTxnId());
      assertEquals(version, c.getVersion());
      assertEquals(version, c.getEvt());
      Clusters.sleep(100);
      assertEquals(0, stat(VA, "pending_client_txns"), "no phantom transaction at the coordinator");
      assertEquals(1, stat(VA, "commit_resends"));

      // Every datacenter reads the one version.
      Clusters.awaitValue(cluster.client(CA), b, "b1", 10_000);
      assertEquals("a1", str(Clusters.awaitValue(cluster.client(VA), a, "a1", 5_000).rows().get(a)));
    } finally {
      fake.close();
    }
  }

  @Test
  void aRepeatedNotifyOrReplicateOfACommittedReplicatedTransactionChangesNothing() throws Exception {
    // One participant in VA (both keys on one shard); in CA the replicated transaction has one too.
    String a = Clusters.key(cluster.placement(), "rep-a", 0, new int[] {VA, CA}, used);
    String b = Clusters.key(cluster.placement(), "rep-b", 0, new int[] {VA, CA}, used);
    Map<String, Row> w = new LinkedHashMap<>();
    w.put(a, row("ra"));
    w.put(b, row("rb"));
    long version = cluster.client(VA).writeTxn(w).version();
    long deadline = System.currentTimeMillis() + 10_000;
    while (!K2DeadReplicaTest.hasVersion(cluster, CA, a, version) || !K2DeadReplicaTest.hasVersion(cluster, CA, b, version)) {
      assertTrue(System.currentTimeMillis() < deadline, "CA committed the replicated transaction");
      Clusters.sleep(10);
    }
    int caServer = cluster.placement().serverFor(CA, a);
    Endpoint fake = fake(62_002, CA);
    try {
      long resends = stat(CA, "commit_resends");
      fake.send(caServer, Notify.newBuilder().setVersion(version).build());
      Commit c = nextCommit();
      assertEquals(version, c.getTxnId());
      assertEquals(version, c.getVersion());
      assertTrue(c.getEvt() >= version, "its EVT");
      Clusters.sleep(100);
      assertEquals(0, stat(CA, "pending_replicated_txns"), "no phantom replicated transaction");
      assertEquals(resends + 1, stat(CA, "commit_resends"));

      long duplicates = stat(CA, "replicate_duplicates");
      long committed = stat(CA, "replicated_wots");
      Replicate again = Replicate.newBuilder().setVersion(version).setOriginDc(VA).setCoordinatorKey(a)
          .setNumParticipants(1).setSubrequestKeys(2)
          .addKeys(ReplicatedKey.newBuilder().setKey(a).setHasValue(true).setValue(row("ra")))
          .addKeys(ReplicatedKey.newBuilder().setKey(b).setHasValue(true).setValue(row("rb"))).build();
      fake.call(caServer, again, ReplicateAck.class).get(5, TimeUnit.SECONDS);
      fake.call(caServer, again, ReplicateAck.class).get(5, TimeUnit.SECONDS);
      assertEquals(duplicates + 2, stat(CA, "replicate_duplicates"), "acknowledged and dropped, twice");
      assertEquals(committed, stat(CA, "replicated_wots"), "not committed again");
      assertEquals(0, stat(CA, "pending_replicated_txns"));
      assertEquals(0, stat(CA, "incoming_writes"));
    } finally {
      fake.close();
    }
  }
}
