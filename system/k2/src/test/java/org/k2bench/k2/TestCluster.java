package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.ByteString;
import java.util.List;
import java.util.function.Predicate;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Row;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;

/** Helpers for tests on a six-datacenter K2 cluster in this JVM (paper matrix / 10). */
final class TestCluster {
  static final int VA = 0;
  static final int CA = 1;
  static final int SP = 2;
  static final int LDN = 3;
  static final int TYO = 4;
  static final int SG = 5;

  private TestCluster() {}

  static Topology topology(int serversPerDc) {
    return FreePorts.assign(TopologyLoader.paperDefault(serversPerDc, 2, 7000).withRttScale(0.1));
  }

  static LocalCluster start(ServerOptions options) {
    return LocalCluster.start(new K2System(), topology(2), options.withNumKeys(10_000));
  }

  static Row row(String v) {
    return Row.newBuilder().putColumns("field0", ByteString.copyFromUtf8(v)).build();
  }

  static String str(Row r) {
    ByteString b = r.getColumnsOrDefault("field0", ByteString.EMPTY);
    return b.toStringUtf8();
  }

  /** The first key "prefix-i" satisfying {@code p}, skipping {@code used}. */
  static String key(Placement placement, String prefix, Predicate<String> p, List<String> used) {
    for (int i = 0; i < 100_000; i++) {
      String k = prefix + "-" + i;
      if (!used.contains(k) && p.test(k)) {
        return k;
      }
    }
    throw new AssertionError("no key satisfies the predicate");
  }

  /**
   * Moves the session's read_ts to its datacenter's present with a local write to a key of
   * its own. K2 reads at the earliest time all values are local, so a session that never
   * writes may keep reading an older consistent state (up to the GC window, §V-B); real
   * clients move forward by writing, and so do test readers that must see recent writes.
   */
  static void advance(KvClient client) {
    client.write("scratch-" + client.id(), row("scratch"));
  }

  /** Reads {@code key} at {@code client}, advancing it each time, until it returns {@code expected}. */
  static ReadResult awaitValue(KvClient client, String key, String expected, long timeoutMs) {
    long deadline = System.currentTimeMillis() + timeoutMs;
    ReadResult last = null;
    while (System.currentTimeMillis() < deadline) {
      advance(client);
      last = client.readTxn(List.of(key));
      if (expected.equals(str(last.rows().get(key)))) {
        return last;
      }
      sleep(5);
    }
    fail("datacenter " + client.dc() + " never read " + expected + " for " + key + "; last "
        + (last == null ? null : str(last.rows().get(key))));
    return null;
  }

  /**
   * Fills datacenter {@code dc}'s cache with the current version of {@code key} by reading
   * it at the server's present directly (second round, no client session involved), until
   * it returns {@code expected}.
   */
  static void warmCache(LocalCluster cluster, int dc, String key, String expected) {
    int server = cluster.placement().serverFor(dc, key);
    org.k2bench.core.transport.Endpoint raw =
        cluster.transport().openClient(61_000 + dc, dc, Runnable::run, m -> { });
    try {
      long deadline = System.currentTimeMillis() + 5_000;
      while (System.currentTimeMillis() < deadline) {
        long now = cluster.server(server).endpoint().clock().now();
        org.k2bench.k2.proto.ReadByTimeReply r = raw.call(server,
            org.k2bench.k2.proto.ReadByTimeRequest.newBuilder().setKey(key).setTs(now).build(),
            org.k2bench.k2.proto.ReadByTimeReply.class).get(5, java.util.concurrent.TimeUnit.SECONDS);
        if (expected.equals(str(r.getValue()))) {
          return;
        }
        sleep(5);
      }
      fail("datacenter " + dc + " never had " + expected + " for " + key);
    } catch (Exception e) {
      throw new AssertionError(e);
    } finally {
      raw.close();
    }
  }

  /** Adds {@code ms} of delay to every wide-area link out of and into {@code dc}. */
  static void slowWideArea(LocalCluster cluster, int dc, double ms) {
    for (int other = 0; other < cluster.topology().numDcs(); other++) {
      if (other != dc) {
        cluster.transport().links().setExtraDelayMs(dc, other, ms);
        cluster.transport().links().setExtraDelayMs(other, dc, ms);
      }
    }
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
