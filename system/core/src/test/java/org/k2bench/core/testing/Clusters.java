package org.k2bench.core.testing;

import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.ByteString;
import java.util.List;
import java.util.function.Predicate;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Column;
import org.k2bench.core.data.Row;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;

/** Helpers for tests on a six-datacenter cluster in this JVM (the paper's matrix / 10). */
public final class Clusters {
  public static final int VA = 0;
  public static final int CA = 1;
  public static final int SP = 2;
  public static final int LDN = 3;
  public static final int TYO = 4;
  public static final int SG = 5;

  private Clusters() {}

  public static Topology topology(int serversPerDc) {
    return FreePorts.assign(TopologyLoader.paperDefault(serversPerDc, 2, 7000).withRttScale(0.1));
  }

  /**
   * The paper's six datacenters (matrix / 10) in the Karma paper's three rings: {VA, CA, LDN},
   * {TYO, SG}, {SP} (placement: rings, f = 3).
   */
  public static Topology ringTopology(int serversPerDc) {
    Topology t = TopologyLoader.paperDefault(serversPerDc, 3, 7000);
    return FreePorts.assign(new Topology(t.dcs(), t.rttMatrixMs(), serversPerDc, 3, t.servers(), 0, 0, true,
        Placement.Scheme.RINGS, 0, new int[][] {{VA, CA, LDN}, {TYO, SG}, {SP}}).withRttScale(0.1));
  }

  /** Two servers per datacenter, so transactions span shards. */
  public static LocalCluster start(StoreSystem system, ServerOptions options) {
    return LocalCluster.start(system, topology(2), options.withNumKeys(10_000));
  }

  public static Row row(String v) {
    return Row.newBuilder().addColumns(Column.newBuilder().setName("field0").setValue(ByteString.copyFromUtf8(v))).build();
  }

  public static String str(Row r) {
    return r.getColumnsList().stream().filter(c -> c.getName().equals("field0")).findFirst()
        .map(c -> c.getValue().toStringUtf8()).orElse("");
  }

  /** The first key "prefix-i" satisfying {@code p} and not in {@code used}; adds it to {@code used}. */
  public static String key(String prefix, Predicate<String> p, List<String> used) {
    for (int i = 0; i < 100_000; i++) {
      String k = prefix + "-" + i;
      if (!used.contains(k) && p.test(k)) {
        used.add(k);
        return k;
      }
    }
    throw new AssertionError("no key satisfies the predicate");
  }

  /** A key with exactly these replica datacenters (and this shard, if >= 0). */
  public static String key(Placement placement, String prefix, int shard, int[] replicaDcs, List<String> used) {
    return key(prefix, k -> java.util.Arrays.equals(placement.replicaDcs(k), replicaDcs)
        && (shard < 0 || placement.topology().shardOfServer(placement.serverFor(replicaDcs[0], k)) == shard), used);
  }

  /**
   * Moves the session forward with a write to a key of its own. A causally consistent
   * store may serve an older consistent state to a session that never writes (K2 reads at
   * the earliest time all values are local, §V-B); tests that must see recent writes
   * advance their readers the way real clients do, by writing.
   */
  public static void advance(KvClient client) {
    client.write("scratch-" + client.id(), row("scratch"));
  }

  /** Reads {@code key} at {@code client}, advancing it each time, until it returns {@code expected}. */
  public static ReadResult awaitValue(KvClient client, String key, String expected, long timeoutMs) {
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

  /** Adds {@code ms} of delay to every wide-area link out of and into {@code dc}. */
  public static void slowWideArea(LocalCluster cluster, int dc, double ms) {
    for (int other = 0; other < cluster.topology().numDcs(); other++) {
      if (other != dc) {
        slowLink(cluster, dc, other, ms);
      }
    }
  }

  /** Messages between datacenters {@code a} and {@code b} take {@code ms} longer, both ways (0 restores them). */
  public static void slowLink(LocalCluster cluster, int a, int b, double ms) {
    cluster.transport().links().setExtraDelayMs(a, b, ms);
    cluster.transport().links().setExtraDelayMs(b, a, ms);
  }

  public static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
