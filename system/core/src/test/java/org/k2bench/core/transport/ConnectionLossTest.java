package org.k2bench.core.transport;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Any;
import com.google.protobuf.StringValue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;

/**
 * A server process that dies resets its connections: a client's calls to it fail at once,
 * as a database driver's do, not at the caller's timeout; a server's calls to it are left to
 * the protocol's own timeouts and failure detection.
 */
class ConnectionLossTest {
  static final StringValue NEVER_ANSWERED = StringValue.of("no reply");

  /** Waits for the future's failure, at most {@code ms}; returns the cause. */
  static Throwable failure(CompletableFuture<Any> f, long ms) throws Exception {
    try {
      f.get(ms, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      return e.getCause();
    }
    throw new AssertionError("answered");
  }

  @Test
  void aClientsCallsToADeadServerFailAtOnceAndAServersWait() throws Exception {
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000).withRttScale(0.1));
    int client = Topology.firstClientId();
    try (Transport survivor = new Transport(t)) {
      Transport dying = new Transport(t);
      try {
        dying.openServer(0, Runnable::run, m -> { }); // VA: takes requests, answers none
        Endpoint driver = survivor.openClient(client, 0, Runnable::run, m -> { });
        Endpoint peer = survivor.openServer(1, Runnable::run, m -> { }); // CA
        driver.ping(0, 0).get(5, TimeUnit.SECONDS); // both streams open
        peer.ping(0, 0).get(5, TimeUnit.SECONDS);

        CompletableFuture<Any> fromClient = driver.call(0, NEVER_ANSWERED);
        CompletableFuture<Any> fromServer = peer.call(0, NEVER_ANSWERED);
        Thread.sleep(300);
        assertFalse(fromClient.isDone(), "unanswered while the server lives");

        long died = System.nanoTime();
        dying.close();
        Throwable why = failure(fromClient, 5_000);
        double ms = (System.nanoTime() - died) / 1e6;
        assertInstanceOf(RemoteException.class, why);
        assertTrue(why.getMessage().contains("connection to node 0 lost"), why.getMessage());
        assertTrue(ms < 2_000, "failed with the connection, not at a timeout: " + ms + " ms");

        Thread.sleep(500);
        assertFalse(fromServer.isDone(), "a server's call waits for its protocol's timeout");
        assertTrue(driver.pendingCalls() == 0, "the failed call is forgotten");

        long again = System.nanoTime();
        CompletableFuture<Any> next = driver.call(0, NEVER_ANSWERED);
        failure(next, 5_000);
        double nextMs = (System.nanoTime() - again) / 1e6;
        assertTrue(nextMs < 2_000, "a new call to the dead server fails too, without waiting for it: " + nextMs);
      } finally {
        dying.close();
      }
    }
  }
}
