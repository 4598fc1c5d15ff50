package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.awaitValue;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.data.Row;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.txn.proto.Commit;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.Prepared;
import org.k2bench.core.txn.proto.WotSubRequest;
import org.k2bench.k2.proto.ReadByTimeReplies;
import org.k2bench.k2.proto.ReadByTimeReply;
import org.k2bench.k2.proto.ReadByTimeRequest;
import org.k2bench.core.testing.TestOptions;

/** K2 read-only transactions: wide-area rounds, non-blocking remote reads, read-your-writes. */
class K2ReadTest {
  static LocalCluster cluster;
  static Placement placement;
  static final List<String> used = new ArrayList<>();

  @BeforeAll
  static void start() {
    cluster = TestCluster.start(TestOptions.defaults());
    placement = cluster.placement();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  @AfterEach
  void healLinks() {
    cluster.transport().links().clearExtraDelays();
  }

  static String key(String prefix, int... replicaDcs) {
    return Clusters.key(placement, prefix, -1, replicaDcs, used);
  }

  /** (a) Once the non-replica values are in the DC cache, a ROT takes zero wide-area rounds. */
  @Test
  void aTransactionWhoseNonReplicaKeysAreCachedIsAllLocal() {
    // Reader in VA. Non-replica keys live in {TYO, SG} and {SP, LDN}; replica keys in VA.
    List<String> keys = List.of(key("a-nr", TYO, SG), key("a-nr", SP, LDN), key("a-r", VA, CA),
        key("a-nr", SP, LDN), key("a-r", VA, CA));
    KvClient writer = cluster.client(CA);
    Map<String, Row> w = new LinkedHashMap<>();
    keys.forEach(k -> w.put(k, row("a1")));
    writer.writeTxn(w);
    KvClient reader = cluster.client(VA);
    for (String k : keys) {
      awaitValue(reader, k, "a1", 5_000);
    }
    ReadResult first = reader.readTxn(keys); // may fetch what the polling did not cache
    assertTrue(first.wanRounds() <= 1);
    // Cut VA off by 1 s each way: an all-local transaction does not notice (and a loaded
    // machine's stalls do not reach the bound below).
    Clusters.slowWideArea(cluster, VA, 1_000);
    long remoteBefore = cluster.stat(-1, "remote_reads_served");
    long cachedBefore = cluster.stat(VA, "round1_cached_keys");
    long fetchesBefore = cluster.stat(VA, "remote_fetches");
    long start = System.nanoTime();
    ReadResult warm = reader.readTxn(keys);
    double ms = (System.nanoTime() - start) / 1e6;
    for (String k : keys) {
      assertEquals("a1", str(warm.rows().get(k)));
    }
    assertEquals(0, warm.wanRounds(), "all values are local: replica or cached");
    assertEquals(remoteBefore, cluster.stat(-1, "remote_reads_served"), "no datacenter served a remote read");
    assertTrue(ms < 1_000, "no wide-area message on the path (" + ms + " ms with +1 s on every link)");
    assertEquals(3, cluster.stat(VA, "round1_cached_keys") - cachedBefore,
        "the DC cache offered values for the three non-replica keys");
    assertEquals(fetchesBefore, cluster.stat(VA, "remote_fetches"));
  }

  /**
   * (b) A ROT needing remote values takes exactly one wide-area round and never blocks on
   * the remote datacenter, also while a newer version's data is still replicating: the
   * reading datacenter learns the new metadata only once every replica has the data.
   *
   * <p>Blocking is made possible: the data path from the writer to the reader's nearest
   * replica is slowed by 1 s (below the 2 s fail-over timeout, after which replication
   * would go on without TYO), so a design that let metadata race ahead of data would
   * make the remote read wait ~1 s at TYO. Non-blocking is asserted by the replica's
   * own counter (no remote read waited for its version) and by every read finishing well
   * inside that delay; "exactly one round" by the rounds each ROT reports and by counting
   * the wide-area requests: one request per remote fetch, all to the nearest replica.
   */
  @Test
  void aTransactionNeedingRemoteValuesTakesOneNonBlockingRound() {
    // Key in {TYO, SG}; reader in CA, whose nearest replica is TYO (11 ms vs 17.8 ms).
    String k = key("b", TYO, SG);
    String local = key("b-r", VA, CA);
    assertEquals(TYO, placement.nearestReplica(CA, k));
    KvClient writer = cluster.client(VA);
    KvClient reader = cluster.client(CA);
    writer.writeTxn(Map.of(k, row("b1"), local, row("b1")));
    awaitValue(reader, k, "b1", 5_000);

    double extraMs = 1_000;
    cluster.transport().links().setExtraDelayMs(VA, TYO, extraMs);
    long waitsBefore = cluster.stat(-1, "remote_read_waits");
    long fetchesBefore = cluster.stat(CA, "remote_fetches");
    long tyoBefore = cluster.stat(TYO, "remote_reads_served");
    long sgBefore = cluster.stat(SG, "remote_reads_served");
    writer.writeTxn(Map.of(k, row("b2"), local, row("b2")));
    long writtenAt = System.nanoTime();
    boolean sawNew = false;
    int remote = 0;
    double slowest = 0;
    while (!sawNew && (System.nanoTime() - writtenAt) < 5_000_000_000L) {
      Clusters.advance(reader); // read at CA's present: the newest metadata CA has
      long start = System.nanoTime();
      ReadResult r = reader.readTxn(List.of(k, local));
      double ms = (System.nanoTime() - start) / 1e6;
      assertTrue(r.wanRounds() <= 1, "at most one wide-area round");
      String v = str(r.rows().get(k));
      assertTrue(v.equals("b1") || v.equals("b2"), v);
      if (r.wanRounds() == 1) {
        remote++;
      }
      slowest = Math.max(slowest, ms);
      if (v.equals("b2")) {
        sawNew = true;
        assertEquals(1, r.wanRounds(), "b2 is not cached in CA: one round to fetch it");
        double sinceWrite = (System.nanoTime() - writtenAt) / 1e6;
        assertTrue(sinceWrite >= extraMs, "CA must not see b2 before TYO has its data (" + sinceWrite + " ms)");
      }
    }
    assertTrue(sawNew, "the new version becomes visible once replicated");
    assertTrue(remote > 0, "reading b2 fetched it from TYO");
    assertEquals(waitsBefore, cluster.stat(-1, "remote_read_waits"), "no remote read waited for its version");
    assertTrue(slowest < extraMs / 2, "no read waited for the delayed data: slowest " + slowest + " ms");
    long fetches = cluster.stat(CA, "remote_fetches") - fetchesBefore;
    assertTrue(fetches >= remote, "every remote round was a fetch by a CA server: " + fetches);
    assertEquals(fetches, cluster.stat(TYO, "remote_reads_served") - tyoBefore,
        "each remote fetch is one request, to the nearest replica TYO");
    assertEquals(sgBefore, cluster.stat(SG, "remote_reads_served"), "no remote read went to the farther replica SG");
  }

  /**
   * (c), deterministically at one server: a second-round read at ts must wait for a
   * write-only transaction that is prepared below ts, and then return that transaction's
   * version. The test plays the transaction's coordinator itself, so the transaction stays
   * pending for as long as the test wants: the interleaving in which the read arrives
   * between prepare and commit, which concurrent tests hit only rarely.
   */
  @Test
  void aSecondRoundWaitsForATransactionPendingBelowItsTime() throws Exception {
    String k = key("c-pending", VA, CA);
    int server = placement.serverFor(VA, k);
    cluster.client(VA).write(k, row("v1"));
    try (Pending p = Pending.prepare(62_000, server, k, "v2")) {
      CompletableFuture<ReadByTimeReply> read = TestCluster.readByTime(p.coordinator(), server, k, p.ts());
      Clusters.sleep(200);
      assertFalse(read.isDone(), "the read at ts must wait for the transaction prepared below ts"
          + (read.isDone() ? "; it returned " + str(read.get().getValue()) : ""));
      p.commit();
      ReadByTimeReply r = read.get(5, TimeUnit.SECONDS);
      assertEquals(p.evt(), r.getVersion(), "the committed transaction is the version valid at ts");
      assertEquals("v2", str(r.getValue()));
    }
  }

  /**
   * A write-only transaction of one key that the test coordinates itself, prepared at the
   * key's server and left pending until {@link #commit}: EVT and a read time {@code ts}
   * above its prepare time.
   */
  private record Pending(Endpoint coordinator, int server, long txn, long evt, long ts) implements AutoCloseable {
    static Pending prepare(int coordinatorId, int server, String key, String value) throws Exception {
      CompletableFuture<Prepared> prepared = new CompletableFuture<>();
      Endpoint coordinator = cluster.transport().openClient(coordinatorId, VA, Runnable::run, m -> {
        if (m.is(Prepared.class)) {
          prepared.complete(m.as(Prepared.class));
        }
      });
      long txn = (1L << 16) | coordinator.id();
      coordinator.send(server, WotSubRequest.newBuilder().setTxnId(txn).setCoordinatorKey(key)
          .setCoordinator(coordinator.id()).setNumParticipants(1)
          .addWrites(KeyValue.newBuilder().setKey(key).setValue(row(value))).build());
      long prepareTs;
      try {
        prepareTs = prepared.get(5, TimeUnit.SECONDS).getPrepareTs();
      } catch (Exception e) {
        coordinator.close();
        throw e;
      }
      return new Pending(coordinator, server, txn, LamportClock.timestamp(LamportClock.counterOf(prepareTs) + 5,
          coordinator.id()), LamportClock.timestamp(LamportClock.counterOf(prepareTs) + 10, 0));
    }

    void commit() {
      coordinator.send(server, Commit.newBuilder().setTxnId(txn).setVersion(evt).setEvt(evt).build());
    }

    @Override
    public void close() {
      coordinator.close();
    }
  }

  /**
   * (c) with the client's one second-round request per server: a request for two keys of
   * one server, one of them pending below ts, answers neither until that transaction
   * commits, then both, each as read alone, in the request's order.
   */
  @Test
  void aBatchedSecondRoundAnswersOnlyOnceItsPendingKeyCommitsAndKeepsTheOrder() throws Exception {
    String k = key("c-batch", VA, CA);
    int server = placement.serverFor(VA, k);
    String other = Clusters.key(placement, "c-batch", placement.topology().shardOfServer(server), new int[] {VA, CA},
        used);
    assertEquals(server, placement.serverFor(VA, other), "both keys on one server");
    cluster.client(VA).writeTxn(Map.of(k, row("v1"), other, row("o1")));
    try (Pending p = Pending.prepare(62_001, server, k, "v2")) {
      long requests = cluster.stat(VA, "round2_requests");
      long keys = cluster.stat(VA, "round2_keys");
      CompletableFuture<ReadByTimeReplies> read = p.coordinator().call(server,
          ReadByTimeRequest.newBuilder().addKeys(k).addKeys(other).setTs(p.ts()).build(), ReadByTimeReplies.class);
      Clusters.sleep(200);
      assertFalse(read.isDone(), "the request must wait for its key's transaction prepared below ts");
      p.commit();
      List<ReadByTimeReply> r = read.get(5, TimeUnit.SECONDS).getRepliesList();
      // "o1" was ready at once, "v2" only after the commit: the request's order, not the answers'
      assertEquals(List.of("v2", "o1"), r.stream().map(a -> str(a.getValue())).toList(), "in the request's order");
      assertEquals(p.evt(), r.get(0).getVersion(), "the committed transaction is the version valid at ts");
      assertEquals(requests + 1, cluster.stat(VA, "round2_requests"));
      assertEquals(keys + 2, cluster.stat(VA, "round2_keys"));
    }
  }

  /** A second-round request naming no key is refused with a line saying so; the server goes on. */
  @Test
  void aSecondRoundRequestWithoutKeysIsRefused() throws Exception {
    String k = key("c-nokeys", VA, CA);
    int server = placement.serverFor(VA, k);
    cluster.client(VA).write(k, row("n1"));
    Endpoint raw = cluster.transport().openClient(62_002, VA, Runnable::run, m -> { });
    try {
      long requests = cluster.stat(VA, "round2_requests");
      ExecutionException e = assertThrows(ExecutionException.class, () -> raw.call(server,
          ReadByTimeRequest.newBuilder().setTs(1).build(), ReadByTimeReplies.class).get(5, TimeUnit.SECONDS));
      assertTrue(e.getCause().getMessage().contains("names no key"), e.getCause().getMessage());
      assertEquals(requests, cluster.stat(VA, "round2_requests"), "a refused request is not counted");
      long now = cluster.server(server).endpoint().clock().now();
      assertEquals("n1", str(TestCluster.readByTime(raw, server, k, now).get(5, TimeUnit.SECONDS).getValue()));
    } finally {
      raw.close();
    }
  }

  /**
   * The client's side of the batch: two keys of one CA server that CA does not replicate,
   * each with a value of its own, fetched in one second-round request: each value lands on
   * its own key, and every second-round request of these reads carried both keys.
   */
  @Test
  void aSecondRoundRequestForTwoKeysOfOneServerGivesEachKeyItsValue() {
    String a = key("c-two", TYO, SG);
    int server = placement.serverFor(CA, a);
    String b = Clusters.key(placement, "c-two", placement.topology().shardOfServer(server), new int[] {TYO, SG}, used);
    assertEquals(server, placement.serverFor(CA, b), "both keys on one CA server");
    cluster.client(VA).writeTxn(Map.of(a, row("x1"), b, row("y1")));
    KvClient reader = cluster.client(CA);
    long requests = cluster.stat(CA, "round2_requests");
    long keys = cluster.stat(CA, "round2_keys");
    ReadResult r = null;
    long deadline = System.currentTimeMillis() + 5_000;
    while (System.currentTimeMillis() < deadline && (r == null || r.remoteKeys() < 2)) {
      Clusters.advance(reader);
      r = reader.readTxn(List.of(b, a));
      String va = str(r.rows().get(a));
      String vb = str(r.rows().get(b));
      assertTrue(va.isEmpty() && vb.isEmpty() || va.equals("x1") && vb.equals("y1"), "a=" + va + ", b=" + vb);
    }
    assertEquals(2, r.remoteKeys(), "both values fetched from a replica datacenter in one read");
    long asked = cluster.stat(CA, "round2_requests") - requests;
    assertTrue(asked >= 1, "a second round was asked");
    assertEquals(2 * asked, cluster.stat(CA, "round2_keys") - keys, "each second-round request carried both keys");
  }

  /** (e) A session reads its own writes, even when an older version of the key is cached. */
  @Test
  void aClientReadsItsOwnWrites() {
    String nonReplica = key("e-nr", SP, LDN);
    String replica = key("e-r", VA, CA);
    KvClient other = cluster.client(CA);
    other.writeTxn(Map.of(nonReplica, row("old"), replica, row("old")));
    TestCluster.warmCache(cluster, VA, nonReplica, "old"); // VA's shared DC cache now holds "old"
    KvClient me = cluster.client(VA); // a fresh session: read_ts 0, older versions attractive
    for (int i = 0; i < 20; i++) {
      me.write(nonReplica, row("mine-" + i));
      ReadResult r = me.readTxn(List.of(nonReplica, replica));
      assertEquals("mine-" + i, str(r.rows().get(nonReplica)), "after a single write");
      me.writeTxn(Map.of(nonReplica, row("txn-" + i), replica, row("txn-" + i)));
      r = me.readTxn(List.of(replica, nonReplica));
      assertEquals("txn-" + i, str(r.rows().get(nonReplica)), "after a write-only transaction");
      assertEquals("txn-" + i, str(r.rows().get(replica)));
      assertEquals(0, r.wanRounds(), "own writes are local: replica key stored, non-replica cached");
    }
  }

  /** Writes commit in the local datacenter: no wide-area round on the client's path. */
  @Test
  void writeOnlyTransactionsCommitLocally() {
    KvClient me = cluster.client(LDN);
    List<String> keys = List.of(key("w", VA, CA), key("w", TYO, SG), key("w", SP, LDN));
    Map<String, Row> w = new LinkedHashMap<>();
    keys.forEach(k -> w.put(k, row("w")));
    me.writeTxn(w); // warm up connections
    Clusters.slowWideArea(cluster, LDN, 1_000);
    for (int i = 0; i < 5; i++) {
      long start = System.nanoTime();
      me.writeTxn(w);
      me.write(keys.get(i % 3), row("single"));
      double ms = (System.nanoTime() - start) / 1e6;
      assertTrue(ms < 1_000, "a write-only transaction and a write took " + ms
          + " ms with +1 s on every link of LDN: no wide-area round on their path");
    }
  }
}
