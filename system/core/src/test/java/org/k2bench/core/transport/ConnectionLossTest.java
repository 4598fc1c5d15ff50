package org.k2bench.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Any;
import com.google.protobuf.StringValue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;

/**
 * A server process that dies resets its connections: the calls of a client of its datacenter
 * fail at once, as a database driver's do, not at the caller's timeout; calls from other
 * datacenters and from servers are left to their timeouts and the protocols' failure
 * detection.
 */
@Tag("alone") // bounds on timing from above: run with no other test class beside it (system/pom.xml)
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
  void aClientsCallsToItsDeadServerFailAtOnceAndOthersWait() throws Exception {
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000).withRttScale(0.1));
    int client = Topology.firstClientId();
    try (Transport survivor = new Transport(t)) {
      Transport dying = new Transport(t);
      try {
        dying.openServer(0, Runnable::run, m -> { }); // VA: takes requests, answers none
        dying.openServer(1, Runnable::run, m -> { }); // CA: the same
        Endpoint driver = survivor.openClient(client, 0, Runnable::run, m -> { }); // in VA
        Endpoint peer = survivor.openServer(2, Runnable::run, m -> { });
        for (Endpoint e : new Endpoint[] {driver, peer}) { // every stream open
          e.ping(0, 0).get(5, TimeUnit.SECONDS);
          e.ping(1, 0).get(5, TimeUnit.SECONDS);
        }

        CompletableFuture<Any> fromClient = driver.call(0, NEVER_ANSWERED);
        CompletableFuture<Any> otherDc = driver.call(1, NEVER_ANSWERED);
        CompletableFuture<Any> fromServer = peer.call(0, NEVER_ANSWERED);
        Thread.sleep(300);
        assertFalse(fromClient.isDone(), "unanswered while the server lives");

        long died = System.nanoTime();
        dying.close();
        Throwable why = failure(fromClient, 5_000);
        double ms = (System.nanoTime() - died) / 1e6;
        assertInstanceOf(ConnectionLostException.class, why);
        assertTrue(why.getMessage().contains("connection to node 0 lost"), why.getMessage());
        assertTrue(ms < 2_000, "failed with the connection, not at a timeout: " + ms + " ms");

        Thread.sleep(500);
        assertFalse(otherDc.isDone(), "a call to another datacenter waits for its caller's timeout");
        assertFalse(fromServer.isDone(), "a server's call waits for its protocol's timeout");

        for (int i = 0; i < 5; i++) { // a new stream each time, never a dead one kept
          long again = System.nanoTime();
          failure(driver.call(0, NEVER_ANSWERED), 5_000);
          double nextMs = (System.nanoTime() - again) / 1e6;
          assertTrue(nextMs < 2_000, "call " + i + " to the dead server fails at once too: " + nextMs + " ms");
        }
        assertEquals(1, driver.pendingCalls(), "only the call to the other datacenter is left");
      } finally {
        dying.close();
      }
    }
  }
}
