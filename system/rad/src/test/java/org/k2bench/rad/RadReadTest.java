package org.k2bench.rad;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Row;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.testing.TestOptions;

/**
 * RAD's read-only transactions (Eiger's algorithm) on the replica-group layout. The reader
 * sits in CA, group {CA, LDN, SG}: key A lives in LDN and key B in SG for it, both remote.
 */
class RadReadTest {
  static LocalCluster cluster;
  static Placement placement;
  static final List<String> used = new ArrayList<>();

  @BeforeAll
  static void start() {
    cluster = Clusters.start(new RadSystem(), TestOptions.defaults());
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

  static CompletableFuture<ReadResult> readLater(KvClient reader, List<String> keys) {
    return CompletableFuture.supplyAsync(() -> reader.readTxn(keys));
  }

  /** Messages between the participants of the A/B transactions (LDN and SG) take {@code ms} longer, both ways. */
  static void slowParticipants(long ms) {
    Clusters.slowLink(cluster, LDN, SG, ms);
  }

  /** A write-only transaction writing {@code value} to {@code a} and {@code b}, in that order. */
  static Map<String, Row> both(String a, String b, String value) {
    Map<String, Row> t = new LinkedHashMap<>();
    t.put(a, row(value));
    t.put(b, row(value));
    return t;
  }

  /**
   * Round one returns A before and B after a causal pair of writes (A then B): B's EVT is
   * later than A's LVT, so A is read again at the effective time, a second wide-area
   * round, and the transaction returns the consistent pair.
   */
  @Test
  void inconsistentFirstRoundVersionsCostASecondWideAreaRound() throws Exception {
    String a = key("r2-a", SP, LDN);
    String b = key("r2-b", TYO, SG);
    KvClient reader = cluster.client(CA);
    KvClient writer = cluster.client(LDN);
    writer.write(a, row("a0"));
    writer.write(b, row("b0"));
    reader.readTxn(List.of(a, b)); // connections up
    long round2Before = cluster.stat(LDN, "round2_requests");
    long waitedBefore = cluster.stat(-1, "round2_keys_pending");
    long keysBefore = cluster.stat(-1, "round2_keys");
    // The reader's request to SG takes 1 s longer: it reads B well after A. (Delays and
    // sleeps in this class leave hundreds of ms either side: a loaded machine stalls.)
    cluster.transport().links().setExtraDelayMs(CA, SG, 1_000);
    CompletableFuture<ReadResult> read = readLater(reader, List.of(a, b));
    Clusters.sleep(250); // A has been read in LDN (7 ms away); B's request is still on its way
    writer.write(a, row("a1"));
    writer.write(b, row("b1")); // causally after a1, committed in SG long before B's read arrives
    ReadResult r = read.get(10, TimeUnit.SECONDS);
    assertEquals("a1", str(r.rows().get(a)), "A re-read at the effective time");
    assertEquals("b1", str(r.rows().get(b)));
    assertEquals(2, r.wanRounds(), "round one (LDN, SG) and round two (LDN) both crossed datacenters");
    assertEquals(round2Before + 1, cluster.stat(LDN, "round2_requests"));
    assertEquals(keysBefore + 1, cluster.stat(-1, "round2_keys"), "A alone is read again");
    assertEquals(waitedBefore, cluster.stat(-1, "round2_keys_pending"),
        "a second round for a version committed after round one, with nothing pending to wait for");
  }

  /**
   * A write-only transaction on A and B is committed at its coordinator but still pending
   * at the other participant, whose commit is slowed down: the second round there must
   * first ask the coordinator in the other datacenter, a third wide-area round trip.
   */
  @Test
  void aPendingWriteOnlyTransactionCostsAThirdRound() throws Exception {
    String a = key("r3-a", SP, LDN);
    String b = key("r3-b", TYO, SG);
    KvClient reader = cluster.client(CA);
    KvClient writer = cluster.client(CA); // its own links stay fast
    writer.writeTxn(Map.of(a, row("t0"), b, row("t0")));
    reader.readTxn(List.of(a, b));
    long checksBefore = cluster.stat(-1, "status_checks");
    long pendingBefore = cluster.stat(-1, "round1_lvt_pending");
    long waitedBefore = cluster.stat(-1, "round2_keys_pending");
    // Messages between the two participants take 600 ms longer: whichever coordinates, it
    // commits at ~615 ms (the other's "yes" is slow) and the other learns of the commit at
    // ~1,230 ms. The reader arrives in between.
    slowParticipants(600);
    Map<String, Row> t1 = both(a, b, "t1");
    CompletableFuture<Void> write = CompletableFuture.runAsync(() -> writer.writeTxn(t1));
    Clusters.sleep(920);
    ReadResult r = reader.readTxn(List.of(a, b));
    write.get(10, TimeUnit.SECONDS);
    assertEquals("t1", str(r.rows().get(a)), "atomic: both keys of the transaction");
    assertEquals("t1", str(r.rows().get(b)));
    assertEquals(3, r.wanRounds(), "round one, round two, and the status check with the coordinator");
    assertTrue(cluster.stat(-1, "status_checks") > checksBefore);
    assertTrue(cluster.stat(-1, "round1_lvt_pending") > pendingBefore, "round one found t1 pending");
    assertTrue(cluster.stat(-1, "round2_keys_pending") > waitedBefore, "round two waited for it");
  }

  /**
   * The coordinator answers the writer once it committed, while the other participant
   * still holds the transaction pending (its commit message is slowed down). The writer's
   * next reads, of each key alone, must return its own write: without a floor on the
   * effective time, round one at the pending participant returns the previous version and
   * nothing sends it to round two.
   */
  @Test
  void aSessionReadsItsOwnWriteOnlyTransactionWhileAParticipantStillHasItPending() {
    String a = key("ryw-a", SP, LDN);
    String b = key("ryw-b", TYO, SG);
    KvClient me = cluster.client(CA);
    me.writeTxn(Map.of(a, row("t0"), b, row("t0")));
    me.readTxn(List.of(a, b));
    slowParticipants(600);
    Map<String, Row> t1 = both(a, b, "t1");
    me.writeTxn(t1); // returns at ~615 ms; the other participant commits at ~1,230 ms
    long checksBefore = cluster.stat(-1, "status_checks");
    assertEquals("t1", str(me.readTxn(List.of(a)).rows().get(a)), "read-your-writes on " + a);
    assertEquals("t1", str(me.readTxn(List.of(b)).rows().get(b)), "read-your-writes on " + b);
    assertTrue(cluster.stat(-1, "status_checks") > checksBefore, "the pending participant asked the coordinator");
  }

  /**
   * Another session's write-only transaction on A and B is committed at its coordinator and
   * still pending at the other participant (messages between them slowed by 600 ms). Two
   * readers read A then B, and B then A, one key per transaction: whichever participant
   * coordinates, one reader reads the new version there first and then the other key where
   * it is still pending. Round one there returns the previous version, valid until the
   * pending prepare; without the session's floor on the effective time (the EVT it read)
   * nothing sends that key to round two, and the reader sees half of the transaction after
   * having seen the rest: a causality anomaly. (Seen in a run with a paused datacenter.)
   */
  @Test
  void aSessionThatReadOnePartOfATransactionReadsTheRestWhereItIsStillPending() throws Exception {
    String a = key("floor-a", SP, LDN);
    String b = key("floor-b", TYO, SG);
    KvClient writer = cluster.client(CA);
    KvClient first = cluster.client(CA);
    KvClient second = cluster.client(CA);
    writer.writeTxn(Map.of(a, row("t0"), b, row("t0")));
    first.readTxn(List.of(a, b));
    second.readTxn(List.of(a, b));
    slowParticipants(600);
    Map<String, Row> t1 = both(a, b, "t1");
    writer.writeTxn(t1); // returns once the coordinator committed; the other commits ~600 ms later
    long checksBefore = cluster.stat(-1, "status_checks");
    CompletableFuture<List<String>> ab = CompletableFuture.supplyAsync(() -> List.of(
        str(first.readTxn(List.of(a)).rows().get(a)), str(first.readTxn(List.of(b)).rows().get(b))));
    CompletableFuture<List<String>> ba = CompletableFuture.supplyAsync(() -> List.of(
        str(second.readTxn(List.of(b)).rows().get(b)), str(second.readTxn(List.of(a)).rows().get(a))));
    List<String> readAb = ab.get(10, TimeUnit.SECONDS);
    List<String> readBa = ba.get(10, TimeUnit.SECONDS);
    assertTrue(readAb.get(0).equals("t1") || readBa.get(0).equals("t1"),
        "one reader read the coordinator's key first and saw the commit: " + readAb + " " + readBa);
    for (List<String> r : List.of(readAb, readBa)) {
      if (r.get(0).equals("t1")) {
        assertEquals("t1", r.get(1), "having read part of the transaction, the rest: " + r);
      }
    }
    assertTrue(cluster.stat(-1, "status_checks") > checksBefore, "the pending participant asked the coordinator");
  }

  /**
   * The reader's keys are all held in its own datacenter (VA), but a write-only transaction
   * pending on two of them has a participant in SP (slowed by 600 ms): resolving it is a
   * wait on another datacenter, whichever server coordinates, so the transaction took one
   * wide-area round although no request left VA. Both keys go to their server in one
   * round-two request.
   */
  @Test
  void aLocalSecondRoundThatWaitsOnAnotherDatacenterCountsAWideAreaRound() throws Exception {
    int shard = 0;
    String k1 = Clusters.key(placement, "wr-k1", shard, new int[] {VA, CA}, used);
    String k2 = Clusters.key(placement, "wr-k2", shard, new int[] {VA, CA}, used);
    String remote = key("wr-sp", SP, LDN);
    String later = key("wr-x", VA, CA);
    KvClient writer = cluster.client(VA);
    KvClient other = cluster.client(VA);
    KvClient reader = cluster.client(VA);
    Map<String, Row> t0 = new LinkedHashMap<>();
    for (String k : List.of(k1, k2, remote)) {
      t0.put(k, row("t0"));
    }
    writer.writeTxn(t0);
    reader.readTxn(List.of(k1, k2, later));
    Clusters.slowLink(cluster, VA, SP, 600);
    Map<String, Row> t1 = new LinkedHashMap<>();
    for (String k : List.of(k1, k2, remote)) {
      t1.put(k, row("t1"));
    }
    CompletableFuture<Void> write = CompletableFuture.runAsync(() -> writer.writeTxn(t1));
    Clusters.sleep(300); // t1 is pending on k1 and k2 in VA (until SP's vote, >= 1.2 s)
    other.write(later, row("x")); // a version with an EVT after t1's prepare time
    long round2Before = cluster.stat(VA, "round2_requests");
    ReadResult r = reader.readTxn(List.of(k1, k2, later));
    write.get(10, TimeUnit.SECONDS);
    assertEquals(str(r.rows().get(k1)), str(r.rows().get(k2)), "atomic");
    assertEquals("x", str(r.rows().get(later)));
    assertEquals(1, r.wanRounds(), "no request left VA, but the second round waited on SP");
    assertEquals(round2Before + 1, cluster.stat(VA, "round2_requests"), "k1 and k2 in one request");
  }

  /**
   * A version committed while an older transaction is pending on the key (its prepare time
   * is before the version's EVT) is still valid at its own EVT when that transaction can
   * only commit with a smaller version (a local client's version is its EVT): Eiger's LVT
   * floor, so the read needs no second round.
   */
  @Test
  void aVersionCommittedAfterAPendingPrepareIsValidAtItsOwnEvt() throws Exception {
    String k = key("lvt-k", VA, CA);
    String remote = key("lvt-sp", SP, LDN);
    KvClient writer = cluster.client(VA);
    KvClient single = cluster.client(VA);
    KvClient reader = cluster.client(VA);
    writer.writeTxn(Map.of(k, row("t0"), remote, row("t0")));
    reader.readTxn(List.of(k));
    Clusters.slowLink(cluster, VA, SP, 600);
    Map<String, Row> t1 = both(k, remote, "t1");
    CompletableFuture<Void> write = CompletableFuture.runAsync(() -> writer.writeTxn(t1));
    Clusters.sleep(300); // t1 pending on k in VA (until SP's vote, >= 1.2 s)
    single.write(k, row("w")); // committed while t1 is pending: EVT after t1's prepare time
    long floorBefore = cluster.stat(VA, "round1_lvt_at_evt");
    ReadResult r = reader.readTxn(List.of(k));
    assertEquals("w", str(r.rows().get(k)));
    assertEquals(0, r.wanRounds(), "valid at its own EVT: no second round, no wait for t1");
    assertTrue(cluster.stat(VA, "round1_lvt_at_evt") > floorBefore);
    write.get(10, TimeUnit.SECONDS);
  }

  /** Participants of a RAD write-only transaction span the group's datacenters. */
  @Test
  void writeLatencyIsSetByTheGroupsWideAreaRtts() {
    // From VA (group VA, SP, TYO): the keys live in VA, SP and TYO.
    List<String> keys = List.of(key("w", VA, CA), key("w", SP, LDN), key("w", TYO, SG));
    KvClient me = cluster.client(VA);
    Map<String, Row> w = new LinkedHashMap<>();
    keys.forEach(k -> w.put(k, row("w")));
    me.writeTxn(w);
    double farthest = cluster.topology().rttMs(VA, TYO);
    for (int i = 0; i < 3; i++) {
      long start = System.nanoTime();
      assertEquals(1, me.writeTxn(w).wanRounds());
      double ms = (System.nanoTime() - start) / 1e6;
      assertTrue(ms >= farthest, "the transaction waits for TYO: " + ms + " ms >= RTT " + farthest);
    }
    // A bound a loaded machine cannot break by stalling: a wide-area message would take 1 s more.
    Clusters.slowWideArea(cluster, VA, 1_000);
    long start = System.nanoTime();
    assertEquals(0, me.write(keys.get(0), row("local")).wanRounds(), "a key held in VA is written locally");
    double ms = (System.nanoTime() - start) / 1e6;
    assertTrue(ms < 1_000, "no wide-area message on the path: " + ms + " ms with +1 s on VA's links");
  }
}
