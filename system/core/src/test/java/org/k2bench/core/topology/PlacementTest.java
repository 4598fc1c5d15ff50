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
    Placement p = new Placement(TopologyLoader.paperDefault(4, f, 7000));
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
    Placement p = new Placement(TopologyLoader.paperDefault(4, f, 7000));
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
    Placement p = new Placement(TopologyLoader.paperDefault(4, 2, 7000));
    // f=2 on VA, CA, SP, LDN, TYO, SG gives {VA, SP, TYO} and {CA, LDN, SG}.
    assertArrayEquals(new int[] {0, 2, 4}, p.group(0));
    assertArrayEquals(new int[] {1, 3, 5}, p.group(1));
  }

  @Test
  void hashIsMurmur3X86_32() {
    // Published MurmurHash3_x86_32 test vectors.
    assertEquals(0, Placement.hash("", 0));
    assertEquals(0x514E28B7, Placement.hash("", 1));
    assertEquals(0x81F16F39, Placement.hash("", 0xffffffff));
    assertEquals(0x704B81DC, Placement.hash("test", 0x9747b28c));
    assertEquals(0x24884CBA, Placement.hash("Hello, world!", 0x9747b28c));
    assertEquals(0x2FA826CD, Placement.hash("The quick brown fox jumps over the lazy dog", 0x9747b28c));
  }

  @Test
  void placementIsPinned() {
    // Golden values: a change here silently changes every experiment's data layout.
    Placement p = new Placement(TopologyLoader.paperDefault(4, 2, 7000));
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

  @Test
  void nearestReplicaIsTheReplicaWithSmallestRtt() {
    Topology t = TopologyLoader.paperDefault(4, 2, 7000);
    Placement p = new Placement(t);
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
}
