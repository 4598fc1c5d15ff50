package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.k2.proto.ReadByTimeReplies;
import org.k2bench.k2.proto.ReadByTimeReply;
import org.k2bench.k2.proto.ReadByTimeRequest;
import org.k2bench.k2.proto.ReadReply;
import org.k2bench.k2.proto.ReadRequest;

/** K2-specific test helpers; the generic ones are in core's {@link Clusters}. */
final class TestCluster {
  private TestCluster() {}

  static LocalCluster start(ServerOptions options) {
    return Clusters.start(new K2System(), options);
  }

  /** A second-round read of one key from {@code from}: a client's request to its server, with one key. */
  static CompletableFuture<ReadByTimeReply> readByTime(Endpoint from, int server, String key, long ts) {
    return from.call(server, ReadByTimeRequest.newBuilder().addKeys(key).setTs(ts).build(), ReadByTimeReplies.class)
        .thenApply(r -> r.getReplies(0));
  }

  /**
   * Fills datacenter {@code dc}'s cache with the current version of {@code key} by reading
   * it at the server's present directly (first and second round, no client session
   * involved), until it returns {@code expected}.
   */
  static void warmCache(LocalCluster cluster, int dc, String key, String expected) {
    int server = cluster.placement().serverFor(dc, key);
    Endpoint raw = cluster.transport().openClient(61_000 + dc, dc, Runnable::run, m -> { });
    try {
      long deadline = System.currentTimeMillis() + 5_000;
      while (System.currentTimeMillis() < deadline) {
        // A first round, as a transaction's, protects what it saw from GC until the second.
        raw.call(server, ReadRequest.newBuilder().addKeys(key).setReadTs(0).build(), ReadReply.class)
            .get(5, TimeUnit.SECONDS);
        long now = cluster.server(server).endpoint().clock().now();
        ReadByTimeReply r = readByTime(raw, server, key, now).get(5, TimeUnit.SECONDS);
        if (expected.equals(Clusters.str(r.getValue()))) {
          return;
        }
        Clusters.sleep(5);
      }
      fail("datacenter " + dc + " never had " + expected + " for " + key);
    } catch (Exception e) {
      throw new AssertionError(e);
    } finally {
      raw.close();
    }
  }
}
