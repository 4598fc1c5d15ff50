package org.k2bench.k2;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Predicate;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.txn.proto.DepCheck;
import org.k2bench.core.txn.proto.DepOk;
import org.k2bench.core.txn.proto.Replicate;
import org.k2bench.core.txn.proto.ReplicateAck;

/**
 * Stand-ins for the servers of a topology that a test's {@link LocalCluster} does not run:
 * endpoints on those servers' addresses that record every message they get, in arrival
 * order, so a test can read what the real servers sent, message by message. They answer
 * like healthy peers where the real servers wait for an answer: a first-phase
 * {@link Replicate} is acknowledged (the data is "stored"), a {@link DepCheck} is answered
 * {@link DepOk} (the dependency is "committed").
 */
final class StandInServers implements AutoCloseable {
  /** One message a stand-in got: to which server, from which node, whether a call. */
  record Received(int to, int toDc, int from, String type, Replicate replicate, DepCheck depCheck, boolean call) {}

  private final Topology topology;
  /** One thread for every stand-in: what they record is in one arrival order. */
  private final ExecutorService inbox = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "stand-in-servers");
    t.setDaemon(true);
    return t;
  });
  private final List<Received> received = new ArrayList<>();
  private final List<Endpoint> endpoints = new ArrayList<>();
  /** How a stand-in answers a dependency check (on the stand-ins' thread): DepOk at once unless set. */
  private volatile java.util.function.BiConsumer<Incoming, DepCheck> depChecks = (m, d) -> m.reply(DepOk.getDefaultInstance());

  private StandInServers(Topology topology) {
    this.topology = topology;
  }

  /** Opens a stand-in for every server of the topology that {@code cluster} does not run. */
  static StandInServers forServersNotIn(LocalCluster cluster) {
    StandInServers s = new StandInServers(cluster.topology());
    for (int id = 0; id < cluster.topology().numServers(); id++) {
      if (cluster.server(id) == null) {
        int to = id;
        s.endpoints.add(cluster.transport().openServer(id, s.inbox, m -> s.handle(to, m)));
      }
    }
    return s;
  }

  private void handle(int to, Incoming m) {
    Replicate r = m.is(Replicate.class) ? m.as(Replicate.class) : null;
    DepCheck d = m.is(DepCheck.class) ? m.as(DepCheck.class) : null;
    synchronized (received) {
      received.add(new Received(to, topology.dcOfServer(to), m.from(), m.typeName(), r, d, m.expectsReply()));
    }
    if (r != null && m.expectsReply()) {
      m.reply(ReplicateAck.getDefaultInstance());
    } else if (d != null) {
      depChecks.accept(m, d);
    }
  }

  /** Answers dependency checks with {@code answer} from now on (it may keep {@code m} to answer later). */
  void answerDepChecks(java.util.function.BiConsumer<Incoming, DepCheck> answer) {
    depChecks = answer;
  }

  /** What the stand-ins got so far that {@code p} accepts, in arrival order. */
  List<Received> received(Predicate<Received> p) {
    synchronized (received) {
      return received.stream().filter(p).toList();
    }
  }

  /**
   * The {@link Replicate} messages of {@code version} that datacenter {@code dc} got, in
   * arrival order, each once: a resend of an unanswered one (the Retransmitter's, identical:
   * same sender, receiver and content) is dropped, as a real receiver drops what it has.
   * On a loaded machine a stand-in may answer after the fail-over timeout, and a test that
   * counts messages would count the resend.
   */
  List<Received> replicates(long version, int dc) {
    return received(x -> x.replicate() != null && x.replicate().getVersion() == version && x.toDc() == dc)
        .stream().distinct().toList();
  }

  /** Waits until datacenter {@code dc} got {@code keys} keys of {@code version}, over all its messages. */
  void awaitReplicatedKeys(long version, int dc, int keys, long timeoutMs) {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (replicates(version, dc).stream().mapToInt(x -> x.replicate().getKeysCount()).sum() < keys) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError("datacenter " + dc + " did not get the " + keys + " keys of version " + version
            + " within " + timeoutMs + " ms; got " + replicates(version, dc));
      }
      Clusters.sleep(10);
    }
  }

  /** Closes the stand-ins (before or after their cluster) and ends their thread. */
  @Override
  public void close() {
    endpoints.forEach(Endpoint::close);
    inbox.shutdownNow();
  }
}
