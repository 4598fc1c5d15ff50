package org.k2bench.core.topology;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class PlacementTest {
  private static final int KEYS = 100_000;

  @ParameterizedTest(name = "f={0}")
  @ValueSource(ints = {1, 2, 3})
  void everyKeyHasExactlyFReplicasOnePerGroup(int f) {
    GroupPlacement p = new GroupPlacement(TopologyLoader.paperDefault(4, f, 7000));
    for (int i = 0; i < KEYS; i++) {
      String key = "user" + i;
      int[] replicas = p.replicaDcs(key);
      assertEquals(f, replicas.length);
      Set<Integer> groups = new HashSet<>();
      Set<Integer> dcs = new HashSet<>();
      for (int dc : replicas) {
        groups.add(p.groupOf(dc));
        dcs.add(dc);
      }
      assertEquals(f, groups.size(), "one replica per group for " + key);
      assertEquals(f, dcs.size());
      int replicaCount = 0;
      for (int dc = 0; dc < 6; dc++) {
        if (p.isReplica(dc, key)) {
          replicaCount++;
          assertTrue(dcs.contains(dc));
        }
      }
      assertEquals(f, replicaCount, "isReplica agrees with replicaDcs for " + key);
    }
  }

  @ParameterizedTest(name = "f={0}")
  @ValueSource(ints = {1, 2, 3})
  void eachDcHoldsItsShareOfKeys(int f) {
    GroupPlacement p = new GroupPlacement(TopologyLoader.paperDefault(4, f, 7000));
    int[] perDc = new int[6];
    int[] perShard = new int[4];
    for (int i = 0; i < KEYS; i++) {
      String key = "user" + i;
      for (int dc : p.replicaDcs(key)) {
        perDc[dc]++;
      }
      perShard[p.shardOf(key)]++;
    }
    double expected = 1.0 / (6.0 / f);
    for (int dc = 0; dc < 6; dc++) {
      double share = perDc[dc] / (double) KEYS;
      assertEquals(expected, share, 0.02, "share of DC " + dc);
    }
    for (int s = 0; s < 4; s++) {
      assertEquals(0.25, perShard[s] / (double) KEYS, 0.02, "share of shard " + s);
    }
  }

  @Test
  void groupsFollowIndexModuloF() {
    GroupPlacement p = new GroupPlacement(TopologyLoader.paperDefault(4, 2, 7000));
    // f=2 on VA, CA, SP, LDN, TYO, SG gives {VA, SP, TYO} and {CA, LDN, SG}.
    assertArrayEquals(new int[] {0, 2, 4}, p.group(0));
    assertArrayEquals(new int[] {1, 3, 5}, p.group(1));
  }

  @Test
  void hashIsMurmur3X86_32() {
    // Published MurmurHash3_x86_32 test vectors.
    assertEquals(0, Murmur3.hash32("", 0));
    assertEquals(0x514E28B7, Murmur3.hash32("", 1));
    assertEquals(0x81F16F39, Murmur3.hash32("", 0xffffffff));
    assertEquals(0x704B81DC, Murmur3.hash32("test", 0x9747b28c));
    assertEquals(0x24884CBA, Murmur3.hash32("Hello, world!", 0x9747b28c));
    assertEquals(0x2FA826CD, Murmur3.hash32("The quick brown fox jumps over the lazy dog", 0x9747b28c));
  }

  @Test
  void placementIsPinned() {
    // Golden values: a change here silently changes every experiment's data layout.
    GroupPlacement p = new GroupPlacement(TopologyLoader.paperDefault(4, 2, 7000));
    StringBuilder sb = new StringBuilder();
    for (String key : new String[] {"user0", "user1", "user42", "user999999"}) {
      sb.append(key).append(':').append(p.shardOf(key)).append(java.util.Arrays.toString(p.replicaDcs(key))).append(' ');
    }
    assertEquals(GOLDEN, sb.toString().trim());
    int[] r = p.replicaDcs("user42");
    assertEquals(r[0] / 2, r[1] / 2, "the same position in both groups: equivalent datacenters");
  }

  private static final String GOLDEN =
      "user0:2[4, 5] user1:0[4, 5] user42:1[2, 3] user999999:3[2, 3]";

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"groups", "partitions"})
  void nearestReplicaIsTheReplicaWithSmallestRtt(String scheme) {
    Topology t = scheme.equals("groups") ? TopologyLoader.paperDefault(4, 2, 7000)
        : TopologyLoader.paperDefault(4, 2, 7000).withPartitions(12, "127.0.0.1", 7000);
    Placement p = Placement.of(t);
    for (int i = 0; i < 1000; i++) {
      String key = "k" + i;
      for (int dc = 0; dc < 6; dc++) {
        int nearest = p.nearestReplica(dc, key);
        assertTrue(p.isReplica(nearest, key));
        for (int other : p.replicaDcs(key)) {
          assertTrue(t.rttMs(dc, nearest) <= t.rttMs(dc, other));
        }
      }
    }
  }

  @Test
  void groupsAsPartitionsAreTheSamePlacement() {
    GroupPlacement p = new GroupPlacement(TopologyLoader.paperDefault(4, 2, 7000));
    assertEquals(3 * 4, p.numPartitions(), "3 positions x 4 shards");
    for (int i = 0; i < 10_000; i++) {
      String key = "user" + i;
      int part = p.partitionOf(key);
      assertArrayEquals(p.replicaDcs(key), p.partitionDcs(part), key);
      for (int dc = 0; dc < 6; dc++) {
        assertEquals(p.serverFor(dc, key), p.serverOf(dc, part), key + " in " + dc);
      }
    }
    assertArrayEquals(new int[] {0, 2, 4}, p.firstReplicaDcs(), "the first group loads");
    for (int part = 0; part < p.numPartitions(); part++) {
      for (int dc : p.partitionDcs(part)) {
        assertEquals(part, p.partitionOfServer(p.serverOf(dc, part)), "server of partition " + part + " in " + dc);
      }
    }
  }

  @Test
  void partitionsAreDealtRoundRobinOverConsecutiveDatacenters() {
    // The PaRiS paper's evaluation: 5 DCs, 45 partitions, f = 2, 18 servers per DC.
    Topology t = fiveDcs(45, 2);
    Placement p = Placement.of(t);
    assertEquals(18, t.serversPerDc());
    assertEquals(45, p.numPartitions());
    java.util.Map<Integer, Integer> partitionOfServer = new java.util.HashMap<>();
    for (int part = 0; part < 45; part++) {
      int[] dcs = p.partitionDcs(part);
      assertEquals(2, dcs.length);
      assertEquals((dcs[0] + 1) % 5, dcs[1], "consecutive datacenters for partition " + part);
      for (int dc : dcs) {
        int server = p.serverOf(dc, part);
        assertEquals(dc, t.dcOfServer(server), "a replica's server is in its datacenter");
        assertEquals(null, partitionOfServer.put(server, part), "server " + server + " holds one partition");
      }
      for (int dc = 0; dc < 5; dc++) {
        assertEquals(dc, t.dcOfServer(p.serverOf(dc, part)), "a home server is in its datacenter too");
      }
    }
    assertEquals(t.numServers(), partitionOfServer.size(), "every server holds exactly one partition replica");
    partitionOfServer.forEach((server, part) -> assertEquals(part, p.partitionOfServer(server)));
    assertArrayEquals(new int[] {0, 1, 2, 3, 4}, p.firstReplicaDcs(), "every datacenter loads some");
  }

  @Test
  void keysSpreadOverPartitionsAndOnlyTheirReplicasHoldThem() {
    Placement p = Placement.of(fiveDcs(10, 2));
    int[] perPartition = new int[10];
    for (int i = 0; i < KEYS; i++) {
      String key = "user" + i;
      int part = p.partitionOf(key);
      perPartition[part]++;
      int[] replicas = p.replicaDcs(key);
      int count = 0;
      for (int dc = 0; dc < 5; dc++) {
        boolean replica = p.isReplica(dc, key);
        assertEquals(dc == replicas[0] || dc == replicas[1], replica, key + " in " + dc);
        count += replica ? 1 : 0;
      }
      assertEquals(2, count);
    }
    for (int part = 0; part < 10; part++) {
      assertEquals(0.1, perPartition[part] / (double) KEYS, 0.01, "share of partition " + part);
    }
  }

  @Test
  void partitionPlacementIsPinned() {
    Placement p = Placement.of(fiveDcs(10, 2));
    StringBuilder sb = new StringBuilder();
    for (String key : new String[] {"user0", "user1", "user42", "user999999"}) {
      int part = p.partitionOf(key);
      sb.append(key).append(':').append(part).append(java.util.Arrays.toString(p.replicaDcs(key)))
          .append(p.serverFor(p.replicaDcs(key)[0], key)).append(' ');
    }
    assertEquals(PARTITION_GOLDEN, sb.toString().trim());
  }

  // Checked by hand: partition p is at DCs (2p mod 5, 2p+1 mod 5); a DC holds its partitions in order.
  private static final String PARTITION_GOLDEN =
      "user0:8[1, 2]7 user1:6[2, 3]10 user42:7[4, 0]18 user999999:5[0, 1]2";

  /**
   * The PaRiS paper's five datacenters (OR, NV, IR, MU, SY) with its Fig. 1 RTTs, each pair's
   * two measured directions averaged and rounded, N partitions on f of them.
   */
  static Topology fiveDcs(int partitions, int f) {
    double[][] rtt = {
      {0, 87, 142, 246, 153},
      {87, 0, 78, 190, 216},
      {142, 78, 0, 135, 286},
      {246, 190, 135, 0, 288},
      {153, 216, 286, 288, 0},
    };
    int each = partitions * f / 5;
    return new Topology(java.util.List.of("OR", "NV", "IR", "MU", "SY"), rtt, each, f,
        Topology.localAddresses(5, each, "127.0.0.1", 7000), 0, 0, true, Placement.Scheme.PARTITIONS, partitions);
  }
}
