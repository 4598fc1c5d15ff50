package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.RemoteException;
import org.k2bench.k2.proto.RemoteRead;
import org.k2bench.k2.proto.RemoteReadReply;
import org.k2bench.core.testing.TestOptions;

/**
 * A remote read that a replica server cannot answer at once (K2Server.onRemoteRead) never
 * stays behind: a version it has garbage-collected is refused at once, and a read waiting
 * for a version that never arrives is answered with an error after the RPC timeout, and
 * forgotten. VA's servers are real and are the replica server asked (as another
 * datacenter's server would ask them); the other datacenters are {@link StandInServers}.
 */
class K2RemoteReadWaitTest {
  static final long WINDOW_MS = 200;
  /** Long enough that a read is seen waiting before it expires on a loaded machine. */
  static final long RPC_TIMEOUT_MS = 3_000;
  static LocalCluster cluster;
  static StandInServers others;
  static Endpoint raw;
  static final List<String> used = new ArrayList<>();

  @BeforeAll
  static void start() {
    Topology topology = Clusters.topology(2);
    ServerOptions options = TestOptions.defaults().withNumKeys(10_000).withGc(WINDOW_MS, WINDOW_MS, 3_000)
        .withRpcTimeoutMs(RPC_TIMEOUT_MS);
    cluster = LocalCluster.start(new K2System(), topology, options, id -> topology.dcOfServer(id) == VA);
    others = StandInServers.forServersNotIn(cluster);
    raw = cluster.transport().openClient(62_100, CA, Runnable::run, m -> { }); // as a CA server would ask
  }

  @AfterAll
  static void stop() {
    others.close();
    cluster.close();
  }

  static CompletableFuture<RemoteReadReply> remoteRead(int server, String key, long version) {
    return raw.call(server, RemoteRead.newBuilder().setKey(key).setVersion(version).build(), RemoteReadReply.class);
  }

  static long stat(int server, String name) {
    return cluster.server(server).stats().getOrDefault(name, 0L);
  }

  static Throwable failure(CompletableFuture<?> call, long timeoutMs) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(timeoutMs, TimeUnit.MILLISECONDS));
    assertTrue(e.getCause() instanceof RemoteException, "the replica answered with an error: " + e.getCause());
    return e.getCause();
  }

  @Test
  void aCollectedVersionIsRefusedAtOnce() throws Exception {
    String key = Clusters.key(cluster.placement(), "gc", -1, new int[] {VA, CA}, used);
    int server = cluster.placement().serverFor(VA, key);
    KvClient writer = cluster.client(VA);
    long gcBefore = stat(server, "gc_removed");
    long v1 = writer.write(key, row("v1")).version();
    writer.write(key, row("v2"));
    long deadline = System.currentTimeMillis() + 5_000;
    do { // GC is lazy: a commit past the replica retention removes the prefix 0, v1
      assertTrue(System.currentTimeMillis() < deadline, "VA collected v1");
      Clusters.sleep(WINDOW_MS * 2);
      writer.write(key, row("v3"));
    } while (stat(server, "gc_removed") < gcBefore + 2);

    long waitsBefore = stat(server, "remote_read_waits");
    long start = System.nanoTime();
    Throwable err = failure(remoteRead(server, key, v1), RPC_TIMEOUT_MS * 3);
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertTrue(err.getMessage().contains("garbage-collected"), err.getMessage());
    assertEquals(1, stat(server, "remote_read_collected"));
    assertEquals(waitsBefore, stat(server, "remote_read_waits"), "the read did not wait");
    assertEquals(0, stat(server, "waiting_remote_reads"));
    assertTrue(ms < RPC_TIMEOUT_MS, "refused at once, not after the RPC timeout: " + ms + " ms");
  }

  @Test
  void aReadOfAVersionThatNeverArrivesExpiresAfterTheRpcTimeout() throws Exception {
    String key = Clusters.key(cluster.placement(), "never", -1, new int[] {VA, CA}, used);
    int server = cluster.placement().serverFor(VA, key);
    long v1 = cluster.client(VA).write(key, row("v1")).version();
    long never = LamportClock.timestamp(LamportClock.counterOf(v1) + 1_000_000, LamportClock.nodeOf(v1));

    long expiredBefore = stat(server, "remote_read_wait_timeouts");
    CompletableFuture<RemoteReadReply> call = remoteRead(server, key, never);
    long deadline = System.currentTimeMillis() + RPC_TIMEOUT_MS;
    while (stat(server, "waiting_remote_reads") == 0) {
      assertTrue(!call.isDone() && System.currentTimeMillis() < deadline, "the read waits at the replica");
      Clusters.sleep(10);
    }
    Throwable err = failure(call, RPC_TIMEOUT_MS * 3);
    assertTrue(err.getMessage().contains("did not arrive"), err.getMessage());
    assertEquals(expiredBefore + 1, stat(server, "remote_read_wait_timeouts"));
    assertEquals(0, stat(server, "waiting_remote_reads"), "nothing stays behind");
  }
}
