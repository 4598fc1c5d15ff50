package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
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
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Dep;
import org.k2bench.core.data.Row;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.Replicate;
import org.k2bench.core.txn.proto.ReplicateAck;
import org.k2bench.core.txn.proto.ReplicatedKey;
import org.k2bench.core.txn.proto.WotReply;
import org.k2bench.core.txn.proto.WotSubRequest;
import org.k2bench.k2.StandInServers.Received;
import org.k2bench.core.testing.TestOptions;

/**
 * How one-hop dependencies travel with replication (K2 §IV-A: "Only the coordinator needs
 * to include causal dependencies with its metadata replication because each remote
 * coordinator does dependency checks for its transaction group"): only the coordinator
 * participant sends them, once to each datacenter, with the first message that datacenter
 * gets from it; the initial version 0, committed everywhere, is never a dependency.
 *
 * <p>The real servers run in some datacenters only; the others are {@link StandInServers}
 * that record every message, so the tests see exactly what was sent. (Counting dependency
 * checks at real receivers could not tell: a receiver keeps a transaction's dependencies
 * as a set and only the coordinator's server checks them, so repeated or cohort-sent
 * dependencies cost bytes on the wide area, not checks.)
 */
class K2ReplicationDepsTest {
  static final ServerOptions OPTIONS = TestOptions.defaults().withNumKeys(10_000);
  static final int[] OTHERS = {CA, SP, LDN, TYO, SG};

  /** Starts the real servers {@code which} accepts; tests open stand-ins for the rest. */
  static LocalCluster start(Topology topology, IntPredicate which) {
    return LocalCluster.start(new K2System(), topology, OPTIONS, which);
  }

  static Dep dep(String key, long version) {
    return Dep.newBuilder().setKey(key).setVersion(version).build();
  }

  /**
   * A session in VA depends on its last write and on two written keys it read, and read a
   * never-written key (version 0); then it writes four keys on both shards whose replica
   * datacenters differ, so the coordinator participant sends some datacenters a first- and
   * a second-phase message, and the other participant sends every datacenter messages too.
   */
  @Test
  void onlyTheCoordinatorSendsDependenciesOncePerDatacenterWithItsFirstMessage() throws Exception {
    Topology topology = Clusters.topology(2);
    try (LocalCluster cluster = start(topology, id -> topology.dcOfServer(id) == VA);
        StandInServers others = StandInServers.forServersNotIn(cluster)) {
      Placement p = cluster.placement();
      List<String> used = new ArrayList<>();
      String y = Clusters.key(p, "y", -1, new int[] {VA, CA}, used);
      String u = Clusters.key(p, "u", -1, new int[] {VA, CA}, used);
      String z = Clusters.key(p, "z", -1, new int[] {VA, CA}, used); // never written
      String scratch = Clusters.key(p, "s", -1, new int[] {VA, CA}, used);
      KvClient writer = cluster.client(VA);
      writer.write(y, row("y1"));
      writer.write(u, row("u1"));

      KvClient session = cluster.client(VA);
      long lastWrite;
      ReadResult r;
      long deadline = System.currentTimeMillis() + 5_000;
      do { // each write moves the session's read_ts on (Clusters.advance), until it sees y1 and u1
        assertTrue(System.currentTimeMillis() < deadline, "the session reads y1 and u1");
        lastWrite = session.write(scratch, row("s")).version();
        r = session.readTxn(List.of(y, u, z));
      } while (!"y1".equals(str(r.rows().get(y))) || !"u1".equals(str(r.rows().get(u))));
      assertEquals(0L, r.versions().get(z), "z was never written: the session read its initial version");
      Set<Dep> expected = Set.of(dep(scratch, lastWrite), dep(y, r.versions().get(y)), dep(u, r.versions().get(u)));

      Map<String, Row> w = new LinkedHashMap<>();
      w.put(Clusters.key(p, "w0a", 0, new int[] {VA, CA}, used), row("w"));
      w.put(Clusters.key(p, "w0b", 0, new int[] {SP, LDN}, used), row("w"));
      w.put(Clusters.key(p, "w1a", 1, new int[] {TYO, SG}, used), row("w"));
      w.put(Clusters.key(p, "w1b", 1, new int[] {VA, CA}, used), row("w"));
      long version = session.writeTxn(w).version();
      for (int dc : OTHERS) {
        others.awaitReplicatedKeys(version, dc, w.size(), 5_000);
      }

      String coordinatorKey = others.replicates(version, CA).get(0).replicate().getCoordinatorKey();
      int coordinator = p.serverFor(VA, coordinatorKey);
      boolean someDcGotBothPhases = false;
      boolean aCohortSentToo = false;
      for (int dc : OTHERS) {
        List<Received> got = others.replicates(version, dc);
        List<Received> fromCoordinator = got.stream().filter(x -> x.from() == coordinator).toList();
        List<Received> withDeps = got.stream().filter(x -> x.replicate().getDepsCount() > 0).toList();
        assertEquals(1, withDeps.size(), "datacenter " + dc + " gets the dependencies in exactly one message: " + got);
        assertSame(fromCoordinator.get(0), withDeps.get(0),
            "datacenter " + dc + " gets them from the coordinator, with its first message: " + got);
        List<Dep> deps = withDeps.get(0).replicate().getDepsList();
        assertEquals(expected.size(), deps.size(), "no dependency twice, none of version 0: " + deps);
        assertEquals(expected, Set.copyOf(deps), "datacenter " + dc);
        someDcGotBothPhases |= fromCoordinator.size() == 2;
        aCohortSentToo |= got.size() > fromCoordinator.size();
      }
      // What makes the assertions above bite: otherwise there is no second message to a
      // datacenter, or no message from another participant, that could carry them again.
      assertTrue(someDcGotBothPhases, "some datacenter got a first- and a second-phase message from the coordinator");
      assertTrue(aCohortSentToo, "the cohort participant replicated its keys too");
    }
  }

  /**
   * Dependencies a client should not have sent are not forwarded: those in a cohort's
   * sub-request (only the coordinator's carries the session's dependencies) and any of
   * version 0 (a client of another library, or one whose session kept a read of the
   * initial version). A raw client sends both participants the same dependencies.
   */
  @Test
  void onlyTheCoordinatorsNonZeroDependenciesAreForwarded() throws Exception {
    Topology topology = Clusters.topology(2);
    try (LocalCluster cluster = start(topology, id -> topology.dcOfServer(id) == VA);
        StandInServers others = StandInServers.forServersNotIn(cluster)) {
      Placement p = cluster.placement();
      List<String> used = new ArrayList<>();
      String y = Clusters.key(p, "y", -1, new int[] {VA, CA}, used);
      String z = Clusters.key(p, "z", -1, new int[] {SP, LDN}, used); // never written
      String k = Clusters.key(p, "k", 0, new int[] {TYO, SG}, used);
      String j = Clusters.key(p, "j", 1, new int[] {SP, LDN}, used);
      long vy = cluster.client(VA).write(y, row("y1")).version();

      Endpoint raw = cluster.transport().openClient(62_000, VA, Runnable::run, m -> { });
      int coordinator = p.serverFor(VA, k);
      int cohort = p.serverFor(VA, j);
      WotSubRequest.Builder sub = WotSubRequest.newBuilder().setTxnId((1L << 16) | raw.id()).setCoordinatorKey(k)
          .setCoordinator(coordinator).setNumParticipants(2).addParticipants(coordinator).addParticipants(cohort)
          .addDeps(dep(y, vy)).addDeps(dep(z, 0));
      raw.send(cohort, sub.clone().addWrites(KeyValue.newBuilder().setKey(j).setValue(row("j1"))).build());
      long version = raw.call(coordinator, sub.addWrites(KeyValue.newBuilder().setKey(k).setValue(row("k1"))).build(),
          WotReply.class).get(5, TimeUnit.SECONDS).getVersion();
      for (int dc : OTHERS) {
        others.awaitReplicatedKeys(version, dc, 2, 5_000);
        List<Received> got = others.replicates(version, dc);
        assertTrue(got.stream().anyMatch(x -> x.from() == cohort), "the cohort replicated j to " + dc);
        List<Dep> deps = got.stream().flatMap(x -> x.replicate().getDepsList().stream()).toList();
        assertEquals(List.of(dep(y, vy)), deps, "datacenter " + dc + " gets y's dependency once, not z's version 0");
        assertTrue(got.stream().allMatch(x -> x.replicate().getDepsCount() == 0 || x.from() == coordinator),
            "datacenter " + dc + " gets no dependency from the cohort: " + got);
      }
    }
  }

  /**
   * A replicated transaction's coordinator checks no version-0 dependency, even if the
   * origin sent one: it would cost a dependency check (here, to another server) for a
   * version committed everywhere. CA's server of the transaction's key is real; the server
   * holding the dependencies' keys is a stand-in that records the checks.
   */
  @Test
  void aReceiverChecksNoVersionZeroDependency() throws Exception {
    Topology topology = Clusters.topology(2);
    int receiver = topology.serverId(CA, 0);
    try (LocalCluster cluster = start(topology, id -> id == receiver);
        StandInServers others = StandInServers.forServersNotIn(cluster)) {
      Placement p = cluster.placement();
      List<String> used = new ArrayList<>();
      String k = Clusters.key(p, "k", 0, new int[] {VA, CA}, used);
      String written = Clusters.key(p, "d1", 1, new int[] {SP, LDN}, used);
      String initial = Clusters.key(p, "d0", 1, new int[] {SP, LDN}, used);
      long origin = topology.serverId(VA, 0);
      long version = LamportClock.timestamp(100, (int) origin);
      long depVersion = LamportClock.timestamp(90, topology.serverId(VA, 1));
      Replicate r = Replicate.newBuilder().setVersion(version).setOriginDc(VA).setCoordinatorKey(k)
          .setNumParticipants(1).setSubrequestKeys(1)
          .addKeys(ReplicatedKey.newBuilder().setKey(k).setHasValue(true).setValue(row("k1")))
          .addDeps(dep(written, depVersion)).addDeps(dep(initial, 0)).build();
      Endpoint raw = cluster.transport().openClient(62_001, VA, Runnable::run, m -> { });
      raw.call(receiver, r, ReplicateAck.class).get(5, TimeUnit.SECONDS);

      long deadline = System.currentTimeMillis() + 5_000;
      while (cluster.stat(CA, "replicated_wots") < 1) {
        assertTrue(System.currentTimeMillis() < deadline, "the replicated transaction committed in CA");
        Clusters.sleep(10);
      }
      List<Dep> checked = others.received(x -> x.depCheck() != null).stream()
          .flatMap(x -> x.depCheck().getDepsList().stream()).toList();
      assertEquals(List.of(dep(written, depVersion)), checked, "one check, for the written dependency only");
      assertFalse(checked.stream().anyMatch(d -> d.getVersion() == 0));
    }
  }

  /**
   * Sends {@code receiver} (in CA) a transaction replicated from VA whose two dependencies
   * live on one other CA server; returns them.
   */
  static Set<Dep> replicateWithTwoDepsOnOneServer(LocalCluster cluster, int receiver, int port) throws Exception {
    Topology topology = cluster.topology();
    Placement p = cluster.placement();
    List<String> used = new ArrayList<>();
    String k = Clusters.key(p, "k", 0, new int[] {VA, CA}, used);
    Dep a = dep(Clusters.key(p, "a", 1, new int[] {VA, CA}, used), LamportClock.timestamp(90, topology.serverId(VA, 1)));
    Dep b = dep(Clusters.key(p, "b", 1, new int[] {VA, CA}, used), LamportClock.timestamp(91, topology.serverId(VA, 1)));
    Replicate r = Replicate.newBuilder().setVersion(LamportClock.timestamp(100, topology.serverId(VA, 0)))
        .setOriginDc(VA).setCoordinatorKey(k).setNumParticipants(1).setSubrequestKeys(1)
        .addKeys(ReplicatedKey.newBuilder().setKey(k).setHasValue(true).setValue(row("k1")))
        .addDeps(a).addDeps(b).build();
    Endpoint raw = cluster.transport().openClient(port, VA, Runnable::run, m -> { });
    raw.call(receiver, r, ReplicateAck.class).get(5, TimeUnit.SECONDS);
    return Set.of(a, b);
  }

  /**
   * Two dependencies held by one server of the receiving datacenter (a stand-in that records
   * what it gets): the coordinator sends it one check carrying both, and commits once it
   * answered.
   */
  @Test
  void aReceiverSendsOneCheckPerServerWithEveryDependencyItHolds() throws Exception {
    Topology topology = Clusters.topology(2);
    int receiver = topology.serverId(CA, 0);
    try (LocalCluster cluster = start(topology, id -> id == receiver);
        StandInServers others = StandInServers.forServersNotIn(cluster)) {
      Set<Dep> deps = replicateWithTwoDepsOnOneServer(cluster, receiver, 62_002);

      long deadline = System.currentTimeMillis() + 5_000;
      while (cluster.stat(CA, "replicated_wots") < 1) {
        assertTrue(System.currentTimeMillis() < deadline, "the replicated transaction committed in CA");
        Clusters.sleep(10);
      }
      List<StandInServers.Received> checks = others.received(x -> x.depCheck() != null);
      assertEquals(1, checks.size(), "one message to the server holding both: " + checks);
      assertEquals(topology.serverId(CA, 1), checks.get(0).to());
      assertEquals(deps, Set.copyOf(checks.get(0).depCheck().getDepsList()));
    }
  }

  /**
   * The server holding both dependencies first answers "not yet" (an error), then takes the
   * check and holds it: the coordinator asks again with the same dependencies, does not
   * commit while the answer is held, and commits once, when it comes.
   */
  @Test
  void aCheckAnsweredNotYetIsAskedAgainWholeAndTheCommitWaitsForItsAnswer() throws Exception {
    Topology topology = Clusters.topology(2);
    int receiver = topology.serverId(CA, 0);
    try (LocalCluster cluster = start(topology, id -> id == receiver);
        StandInServers others = StandInServers.forServersNotIn(cluster)) {
      java.util.concurrent.atomic.AtomicReference<org.k2bench.core.transport.Incoming> held =
          new java.util.concurrent.atomic.AtomicReference<>();
      java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
      others.answerDepChecks((m, d) -> {
        if (asked.incrementAndGet() == 1) {
          m.replyError("not committed here yet");
        } else {
          held.set(m);
        }
      });
      Set<Dep> deps = replicateWithTwoDepsOnOneServer(cluster, receiver, 62_003);

      long deadline = System.currentTimeMillis() + 5_000;
      while (held.get() == null) {
        assertTrue(System.currentTimeMillis() < deadline, "the check was asked again after \"not yet\"");
        Clusters.sleep(10);
      }
      List<Received> checks = others.received(x -> x.depCheck() != null);
      assertEquals(2, checks.size(), "asked twice: " + checks);
      assertEquals(deps, Set.copyOf(checks.get(0).depCheck().getDepsList()));
      assertEquals(deps, Set.copyOf(checks.get(1).depCheck().getDepsList()), "asked again whole");
      assertTrue(cluster.stat(CA, "dep_check_retries") >= 1);
      Clusters.sleep(300);
      assertEquals(0, cluster.stat(CA, "replicated_wots"), "no commit while the answer is held");
      held.get().reply(org.k2bench.core.txn.proto.DepOk.getDefaultInstance());
      deadline = System.currentTimeMillis() + 5_000;
      while (cluster.stat(CA, "replicated_wots") < 1) {
        assertTrue(System.currentTimeMillis() < deadline, "committed once answered");
        Clusters.sleep(10);
      }
      Clusters.sleep(100);
      assertEquals(1, cluster.stat(CA, "replicated_wots"), "committed once");
    }
  }
}
