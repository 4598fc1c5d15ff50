package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Dep;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.RemoteException;
import org.k2bench.core.txn.proto.DepCheck;
import org.k2bench.core.txn.proto.DepOk;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.Replicate;
import org.k2bench.core.txn.proto.ReplicateAck;
import org.k2bench.core.txn.proto.ReplicatedKey;
import org.k2bench.core.txn.proto.WotSubRequest;
import org.k2bench.k2.proto.ReadByTimeReply;
import org.k2bench.core.testing.TestOptions;

/**
 * A K2 server's waits for a commit that never comes end at their deadline, with an error
 * to the asker and nothing left waiting: a dependency check for a version that never
 * arrives, and a second-round read behind a write-only transaction whose coordinator never
 * commits it. VA's servers are real; the other datacenters are {@link StandInServers}.
 */
class K2WaitsExpireTest {
  /** Long enough that a test's steps before the expiry fit in it on a loaded machine (1 s did not always). */
  static final long RPC_TIMEOUT_MS = 3_000;
  static LocalCluster cluster;
  static StandInServers others;
  static Endpoint raw;
  static final List<String> used = new ArrayList<>();

  @BeforeAll
  static void start() {
    Topology topology = Clusters.topology(2);
    ServerOptions options = TestOptions.defaults().withNumKeys(10_000).withRpcTimeoutMs(RPC_TIMEOUT_MS);
    cluster = LocalCluster.start(new K2System(), topology, options, id -> topology.dcOfServer(id) == VA);
    others = StandInServers.forServersNotIn(cluster);
    raw = cluster.transport().openClient(62_200, VA, Runnable::run, m -> { });
  }

  @AfterAll
  static void stop() {
    others.close();
    cluster.close();
  }

  static long stat(int server, String name) {
    return cluster.server(server).stats().getOrDefault(name, 0L);
  }

  static Throwable failure(CompletableFuture<?> call) {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> call.get(RPC_TIMEOUT_MS * 3, TimeUnit.MILLISECONDS), "answered, within the RPC timeout and a tick");
    assertTrue(e.getCause() instanceof RemoteException, "the server answered with an error: " + e.getCause());
    return e.getCause();
  }

  @Test
  void aDependencyCheckForAVersionThatNeverArrivesExpires() throws Exception {
    String key = Clusters.key(cluster.placement(), "dep", -1, new int[] {VA, CA}, used);
    int server = cluster.placement().serverFor(VA, key);
    long v1 = cluster.client(VA).write(key, row("v1")).version();
    long never = LamportClock.timestamp(LamportClock.counterOf(v1) + 1_000_000, LamportClock.nodeOf(v1));
    long expiredBefore = stat(server, "waits_expired");
    long waitsBefore = stat(server, "dep_check_waits");

    CompletableFuture<DepOk> call = raw.call(server,
        DepCheck.newBuilder().addDeps(Dep.newBuilder().setKey(key).setVersion(v1))
            .addDeps(Dep.newBuilder().setKey(key).setVersion(never)).build(),
        DepOk.class);
    Throwable err = failure(call);
    assertTrue(err.getMessage().contains("not committed here yet"), err.getMessage());
    assertEquals(waitsBefore + 1, stat(server, "dep_check_waits"), "one of its two dependencies waited");
    assertEquals(expiredBefore + 1, stat(server, "waits_expired"));
    assertEquals(0, stat(server, "waiting"), "nothing stays behind");
  }

  /** Commits {@code key} at {@code version} in VA: a transaction replicated from CA with no dependencies. */
  static void replicate(String key, long version) throws Exception {
    int server = cluster.placement().serverFor(VA, key);
    long before = stat(server, "replicated_wots");
    raw.call(server, Replicate.newBuilder().setVersion(version).setOriginDc(CA).setCoordinatorKey(key)
        .setNumParticipants(1).setSubrequestKeys(1)
        .addKeys(ReplicatedKey.newBuilder().setKey(key).setHasValue(true).setValue(row("r"))).build(),
        ReplicateAck.class).get(5, TimeUnit.SECONDS);
    long deadline = System.currentTimeMillis() + 2_000;
    while (stat(server, "replicated_wots") == before) {
      assertTrue(System.currentTimeMillis() < deadline, key + " committed at its version");
      Clusters.sleep(5);
    }
  }

  /** One check carrying two dependencies, neither committed: no answer after the first commits, one after both. */
  @Test
  void aCheckIsAnsweredOnlyOnceEveryDependencyItCarriesIsCommitted() throws Exception {
    String a = Clusters.key(cluster.placement(), "both-a", 0, new int[] {VA, CA}, used);
    String b = Clusters.key(cluster.placement(), "both-b", 0, new int[] {VA, CA}, used);
    int server = cluster.placement().serverFor(VA, a);
    assertEquals(server, cluster.placement().serverFor(VA, b), "one server holds both");
    int origin = cluster.topology().serverId(CA, 0);
    long va = LamportClock.timestamp(7_000_001, origin);
    long vb = LamportClock.timestamp(7_000_002, origin);
    CompletableFuture<DepOk> call = raw.call(server, DepCheck.newBuilder()
        .addDeps(Dep.newBuilder().setKey(a).setVersion(va)).addDeps(Dep.newBuilder().setKey(b).setVersion(vb)).build(),
        DepOk.class);
    replicate(a, va);
    Clusters.sleep(100);
    assertFalse(call.isDone(), "answered before its second dependency committed");
    replicate(b, vb);
    call.get(RPC_TIMEOUT_MS, TimeUnit.MILLISECONDS); // DepOk
    assertEquals(0, stat(server, "waiting"), "nothing stays behind");
  }

  /** Two dependencies that never commit: one error for the check, both waits expired, none left. */
  @Test
  void aCheckWhoseDependenciesNeverArriveGetsOneErrorAndLeavesNoWait() throws Exception {
    String a = Clusters.key(cluster.placement(), "never-a", 1, new int[] {VA, CA}, used);
    String b = Clusters.key(cluster.placement(), "never-b", 1, new int[] {VA, CA}, used);
    int server = cluster.placement().serverFor(VA, a);
    assertEquals(server, cluster.placement().serverFor(VA, b), "one server holds both");
    int origin = cluster.topology().serverId(CA, 0);
    long expiredBefore = stat(server, "waits_expired");
    CompletableFuture<DepOk> call = raw.call(server, DepCheck.newBuilder()
        .addDeps(Dep.newBuilder().setKey(a).setVersion(LamportClock.timestamp(8_000_001, origin)))
        .addDeps(Dep.newBuilder().setKey(b).setVersion(LamportClock.timestamp(8_000_002, origin))).build(),
        DepOk.class);
    Throwable err = failure(call);
    assertTrue(err.getMessage().contains("not committed here yet"), err.getMessage());
    assertEquals(expiredBefore + 2, stat(server, "waits_expired"), "both waits expired");
    assertEquals(0, stat(server, "waiting"), "nothing stays behind");
  }

  /**
   * A raw client sends its sub-request to the cohort only: the cohort prepares the key and
   * tells the coordinator, which never gets its own sub-request and so never commits. A
   * second-round read above the prepare time waits for the transaction, then gives up.
   */
  @Test
  void aSecondRoundReadBehindATransactionThatNeverCommitsExpires() throws Exception {
    String key = Clusters.key(cluster.placement(), "stuck", 0, new int[] {VA, CA}, used);
    String other = Clusters.key(cluster.placement(), "stuck-c", 1, new int[] {VA, CA}, used);
    int cohort = cluster.placement().serverFor(VA, key);
    int coordinator = cluster.placement().serverFor(VA, other);
    raw.send(cohort, WotSubRequest.newBuilder().setTxnId((1L << 16) | raw.id()).setCoordinatorKey(other)
        .setCoordinator(coordinator).setNumParticipants(2).addParticipants(cohort).addParticipants(coordinator)
        .addWrites(KeyValue.newBuilder().setKey(key).setValue(row("never"))).build());
    long deadline = System.currentTimeMillis() + 5_000;
    while (stat(cohort, "pending_client_txns") == 0) {
      assertTrue(System.currentTimeMillis() < deadline, "the cohort prepared the key");
      Clusters.sleep(10);
    }
    long ts = cluster.server(cohort).endpoint().clock().now(); // above the prepare time
    long unresolvedBefore = stat(cohort, "reads_unresolved");

    CompletableFuture<ReadByTimeReply> call = TestCluster.readByTime(raw, cohort, key, ts);
    Throwable err = failure(call);
    assertTrue(err.getMessage().contains("did not commit"), err.getMessage());
    assertEquals(unresolvedBefore + 1, stat(cohort, "reads_unresolved"));
    assertEquals(0, stat(cohort, "waiting"), "nothing stays behind");
  }
}
