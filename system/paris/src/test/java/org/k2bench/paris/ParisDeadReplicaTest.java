package org.k2bench.paris;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.Calls;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ReadWriteTxn;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.paris.proto.CommitTx;
import org.k2bench.paris.proto.KeyRow;
import org.k2bench.paris.proto.PrepareReq;
import org.k2bench.paris.proto.PrepareResp;
import org.k2bench.core.testing.TestOptions;

/**
 * The PaRiS paper, §III-C (availability among DCs): "PaRiS achieves availability in a DC as
 * long as one replica per partition is reachable by the DC, so that remote items can be read,
 * and the 2PC can be executed". TYO dies after start-up. A writer in VA keeps committing
 * read-write transactions over a key replicated at TYO and SG whose preferred replica from VA
 * is TYO and a key replicated at VA and CA; a reader in SP, which replicates neither and
 * never writes, reads the TYO keys, whose preferred replica from SP is TYO too. And TYO slow
 * rather than dead: a replica passed over aborts what it prepared and gets the writes by
 * replication.
 */
class ParisDeadReplicaTest {
  static final long FAILOVER_MS = 300;
  /**
   * The kill test's detector timeout: TYO is suspected 1.5 s plus a round trip after it dies,
   * long after the first transaction's prepares went to it (the fail-over wait stays at half
   * the cohort wait, 500 ms). At 300 ms the first read's fail-over raced the suspicion, and a
   * prepare sent after it went straight to SG on a busy machine, with nothing failed over.
   */
  static final long SLOW_SUSPICION_MS = 1_500;
  static final long RPC_TIMEOUT_MS = 2_000; // a coordinator waits half of it for its cohorts

  /** A key replicated at TYO and SG whose preferred replica from {@code dc} is TYO (ParisServer#targets). */
  static String tyoFirst(Placement placement, String name, int dc, List<String> used) {
    return Cast.farPreferring(placement, name, dc, TYO, used);
  }

  /** A cluster of {@code system} once every server has heard from every datacenter (TYO dies after start-up). */
  static LocalCluster started(StoreSystem system, long rpcTimeoutMs) {
    return started(system, rpcTimeoutMs, FAILOVER_MS);
  }

  static LocalCluster started(StoreSystem system, long rpcTimeoutMs, long failoverMs) {
    LocalCluster c = Clusters.start(system, TestOptions.defaults().withFailoverTimeoutMs(failoverMs)
        .withRpcTimeoutMs(rpcTimeoutMs));
    long deadline = System.currentTimeMillis() + 15_000;
    while (c.stat(-1, "dcs_never_answered") != 0) {
      assertTrue(System.currentTimeMillis() < deadline, "every server heard from every datacenter");
      Clusters.sleep(20);
    }
    return c;
  }

  /** Waits until every server of {@code dc} suspects TYO (the only dead datacenter). */
  static void awaitSuspected(LocalCluster c, int dc) {
    long deadline = System.currentTimeMillis() + 10_000;
    while (c.stat(dc, "suspected_dcs") < c.topology().serversPerDc()) {
      assertTrue(System.currentTimeMillis() < deadline, "every server of dc " + dc + " suspects TYO");
      Clusters.sleep(20);
    }
  }

  static void killTyo(LocalCluster c) {
    for (int shard = 0; shard < c.topology().serversPerDc(); shard++) {
      c.server(TYO, shard).close();
    }
  }

  @Test
  void commitsAndReadsFailOverToTheLiveReplicaWhileTheUstStandsStill() {
    try (LocalCluster c = started(new ParisSystem(), RPC_TIMEOUT_MS, SLOW_SUSPICION_MS)) {
      List<String> used = new ArrayList<>();
      List<String> far = new ArrayList<>();
      List<String> near = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        far.add(tyoFirst(c.placement(), "far" + i, VA, used));
        near.add(Clusters.key(c.placement(), "near" + i, -1, new int[] {VA, CA}, used));
      }
      KvClient writer = c.client(VA);
      KvClient reader = c.client(SP);
      killTyo(c);
      long killed = System.currentTimeMillis();

      for (int i = 0; i < 10; i++) { // without fail-over, every prepare at TYO fails the commit
        ReadWriteTxn t = writer.begin();
        ReadResult read = t.read(List.of(far.get(i), near.get(i)));
        if (i == 0) {
          assertEquals(2, read.wanRounds(), "TYO asked, then SG: two wide-area rounds, reported as such");
        }
        t.write(Map.of(far.get(i), row("w" + i), near.get(i), row("w" + i)));
        t.commit();
      }
      ReadResult own = writer.readTxn(far);
      for (int i = 0; i < 10; i++) {
        assertEquals("w" + i, str(own.rows().get(far.get(i))), "the writer reads its own writes (private cache)");
      }
      assertTrue(c.stat(VA, "prepare_failovers") > 0, "the first prepares waited for TYO, then asked SG");
      awaitSuspected(c, VA);

      List<String> tyoFirstFromSp = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        tyoFirstFromSp.add(tyoFirst(c.placement(), "spfar" + i, SP, used));
      }
      awaitSuspected(c, SP);
      long failovers = c.stat(SP, "read_failovers");
      ReadResult r = reader.readTxn(tyoFirstFromSp);
      assertEquals(10, r.rows().size());
      assertEquals(failovers, c.stat(SP, "read_failovers"), "SG asked first: TYO is suspected");
      // "the failure of a server blocks the progress of UST, but only as long as a backup has not
      // taken over" (§III-C); nothing takes over here: snapshots stay at the UST of the kill.
      long sinceKill = System.currentTimeMillis() - killed;
      assertTrue(r.snapshotLagMs() > sinceKill - 200, "the UST stands still: lag " + r.snapshotLagMs()
          + " ms, " + sinceKill + " ms after the kill");

      Clusters.sleep(500); // the survivors apply what they committed: nothing waits for TYO
      for (int dc : new int[] {VA, CA, SG}) {
        assertEquals(0, c.stat(dc, "prepared"), "no transaction left prepared in dc " + dc);
        assertEquals(0, c.stat(dc, "committed_pending"), "none left unapplied in dc " + dc);
      }
    }
  }

  /**
   * BPR reads at a fresh snapshot, which a partition installs only once every replica of it
   * has sent updates up to it: a partition with a dead replica never does, and its reads
   * fail once blocked for three quarters of the cohort wait, from whichever replica.
   */
  @Test
  void bprBlocksOnAPartitionWithADeadReplica() {
    // A cohort gives up on a blocked read at 3/4 of the 2 s cohort wait: well before its coordinator.
    try (LocalCluster c = started(new BprSystem(), 4_000)) {
      List<String> used = new ArrayList<>();
      String far = tyoFirst(c.placement(), "far", SP, used);
      String near = Clusters.key(c.placement(), "near", -1, new int[] {VA, CA}, used);
      KvClient reader = c.client(SP);
      killTyo(c);
      Clusters.sleep(FAILOVER_MS * 3); // TYO suspected: reads go to SG
      assertEquals(1, reader.readTxn(List.of(near)).rows().size(), "a partition without TYO answers");
      RuntimeException e = assertThrows(RuntimeException.class, () -> reader.readTxn(List.of(far)));
      assertTrue(e.getMessage().contains("not installed"), e.getMessage());
    }
  }

  /**
   * A passed-over replica's abort follows its prepare on one link; should a link lose that
   * order, the abort comes first and finds nothing. The prepare that follows must then be
   * refused: accepted, it would stay prepared for good and hold the partition's applied time,
   * the UST and garbage collection back.
   */
  @Test
  void aPrepareThatComesAfterItsAbortIsRefused() {
    try (LocalCluster c = Clusters.start(new ParisSystem(), TestOptions.defaults())) {
      int cohort = c.topology().serverId(VA, 0);
      Endpoint raw = c.transport().openClient(60_000, VA, Runnable::run, m -> { });
      String key = Clusters.key("late", k -> c.placement().partitionOf(k)
          == c.placement().partitionOfServer(cohort), new ArrayList<>());
      raw.send(cohort, CommitTx.newBuilder().setTxnId(7).setCoordinator(raw.id()).setAbort(true).build());
      RuntimeException e = assertThrows(RuntimeException.class, () -> Calls.await(raw.call(cohort,
          PrepareReq.newBuilder().setTxnId(7).setCoordinator(raw.id()).addWrites(KeyRow.newBuilder().setKey(key)
              .setValue(row("late"))).build(), PrepareResp.class), "prepare", 5_000));
      assertTrue(e.getMessage().contains("aborted here before its prepare came"), e.getMessage());
      assertEquals(0, c.stat(VA, "prepared"), "nothing left prepared");
      raw.close();
    }
  }

  /**
   * TYO slow, not dead (400 ms more each way): the first prepares at TYO go unanswered for the
   * fail-over timeout and SG prepares instead. TYO still gets each prepare, and the abort
   * right behind it; once TYO is fast again nothing is left prepared there, and TYO reads the
   * values it got by replication from SG.
   */
  @Test
  void aSlowReplicaPassedOverAbortsWhatItPreparedAndGetsTheWritesByReplication() {
    // The kill test's slow suspicion: at 300 ms, a first write started late on a busy machine
    // found TYO suspected already and prepared at SG with nothing failed over.
    try (LocalCluster c = started(new ParisSystem(), RPC_TIMEOUT_MS, SLOW_SUSPICION_MS)) {
      List<String> used = new ArrayList<>();
      KvClient writer = c.client(VA);
      Clusters.slowWideArea(c, TYO, 400);
      List<String> far = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        far.add(tyoFirst(c.placement(), "slow" + i, VA, used));
        writer.writeTxn(Map.of(far.get(i), row("s" + i)));
      }
      assertTrue(c.stat(VA, "prepare_failovers") > 0, "a prepare waited for TYO, then asked SG");
      Clusters.slowWideArea(c, TYO, 0);
      KvClient tyo = c.client(TYO);
      for (int i = 0; i < 5; i++) {
        Clusters.awaitValue(tyo, far.get(i), "s" + i, 10_000);
      }
      Clusters.sleep(300); // the last decisions (one-way) reach their cohorts
      assertEquals(0, c.stat(TYO, "prepared"), "TYO aborted every prepare it was passed over for");
      assertEquals(0, c.stat(TYO, "committed_pending"));
      assertEquals(0, c.stat(TYO, "cohort_commits"), "nothing committed at a replica passed over");
      assertTrue(c.stat(TYO, "cohort_aborts") >= c.stat(VA, "prepare_failovers"),
          "an abort for every prepare passed over");
      KvClient sg = c.client(SG);
      for (int i = 0; i < 5; i++) {
        Clusters.awaitValue(sg, far.get(i), "s" + i, 10_000);
      }
      assertEquals(sg.readTxn(far).versions(), tyo.readTxn(far).versions(),
          "TYO has SG's versions (one commit, at one time), by replication");
    }
  }
}
