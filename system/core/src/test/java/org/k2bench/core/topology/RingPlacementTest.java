package org.k2bench.core.topology;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class RingPlacementTest {
  private static final String RINGS = """
      datacenters: [VA, CA, SP, LDN, TYO, SG]
      rtt_ms:
        VA:  {CA: 60, SP: 146, LDN: 76, TYO: 162, SG: 243}
        CA:  {SP: 194, LDN: 136, TYO: 110, SG: 178}
        SP:  {LDN: 214, TYO: 269, SG: 333}
        LDN: {TYO: 233, SG: 163}
        TYO: {SG: 68}
      servers_per_dc: 4
      replication_factor: 3
      placement: rings
      rings: [[VA, CA, LDN], [TYO, SG], [SP]]
      base_port: 7000
      """;

  static Topology rings() {
    return TopologyLoader.parse(RINGS);
  }

  @Test
  void everyKeyHasOneReplicaPerRingAndEachRingDatacenterItsShare() {
    RingPlacement p = (RingPlacement) Placement.of(rings());
    assertEquals(4 * 6, p.numPartitions(), "S x lcm(3, 2, 1)");
    int keys = 60_000;
    int[] perDc = new int[6];
    int[] perServer = new int[24];
    for (int i = 0; i < keys; i++) {
      String key = "user" + i;
      int[] replicas = p.replicaDcs(key);
      assertEquals(3, replicas.length);
      for (int r = 0; r < 3; r++) {
        assertEquals(r, p.ringOf(replicas[r]), "replica " + r + " of " + key + " is in ring " + r);
        assertEquals(replicas[r], p.replicaInRing(r, key));
        assertEquals(p.serverFor(replicas[r], key), p.serverInRing(r, key));
        perDc[replicas[r]]++;
        perServer[p.serverInRing(r, key)]++;
      }
      for (int dc = 0; dc < 6; dc++) {
        boolean replica = dc == replicas[0] || dc == replicas[1] || dc == replicas[2];
        assertEquals(replica, p.isReplica(dc, key), key + " at " + dc);
        // The key's shard is the same in every datacenter (replica or home).
        assertEquals(p.serverFor(replicas[0], key) % 4, p.serverFor(dc, key) % 4);
      }
    }
    // VA, CA, LDN: a third each; TYO, SG: half; SP: all.
    double[] share = {1 / 3.0, 1 / 3.0, 1.0, 1 / 3.0, 0.5, 0.5};
    for (int dc = 0; dc < 6; dc++) {
      assertEquals(share[dc], perDc[dc] / (double) keys, 0.02, "share of DC " + dc);
      for (int s = 0; s < 4; s++) {
        assertEquals(share[dc] / 4, perServer[dc * 4 + s] / (double) keys, 0.01, "share of server " + dc + "/" + s);
      }
    }
    assertArrayEquals(new int[] {0, 1, 3}, p.firstReplicaDcs(), "ring 0 loads");
  }

  @Test
  void badRingsAreRefusedNamingTheField() {
    ConfigException missing = assertThrows(ConfigException.class,
        () -> TopologyLoader.parse(RINGS.replace("rings: [[VA, CA, LDN], [TYO, SG], [SP]]\n", "")));
    assertEquals("rings", missing.field());
    ConfigException twice = assertThrows(ConfigException.class,
        () -> TopologyLoader.parse(RINGS.replace("[[VA, CA, LDN], [TYO, SG], [SP]]", "[[VA, CA, LDN], [TYO, SG, VA], [SP]]")));
    assertTrue(twice.getMessage().contains("VA is already in rings[0]"), twice.getMessage());
    ConfigException none = assertThrows(ConfigException.class,
        () -> TopologyLoader.parse(RINGS.replace("[[VA, CA, LDN], [TYO, SG], [SP]]", "[[VA, CA, LDN], [TYO, SG]]")));
    assertTrue(none.getMessage().contains("SP is in no ring"), none.getMessage());
    ConfigException f = assertThrows(ConfigException.class,
        () -> TopologyLoader.parse(RINGS.replace("replication_factor: 3", "replication_factor: 2")));
    assertEquals("replication_factor", f.field());
    ConfigException unknown = assertThrows(ConfigException.class,
        () -> TopologyLoader.parse(RINGS.replace("[SP]]", "[BR]]")));
    assertTrue(unknown.getMessage().contains("unknown datacenter 'BR'"), unknown.getMessage());
    ConfigException notRings = assertThrows(ConfigException.class,
        () -> TopologyLoader.parse(RINGS.replace("placement: rings", "placement: groups")));
    assertEquals("rings", notRings.field());
  }
}
