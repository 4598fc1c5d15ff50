package org.k2bench.core.topology;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TablePlacementTest {
  @TempDir
  Path dir;

  private static final String TOPOLOGY = """
      datacenters: [VA, CA, SP, LDN, TYO, SG]
      rtt_ms:
        VA:  {CA: 60, SP: 146, LDN: 76, TYO: 162, SG: 243}
        CA:  {SP: 194, LDN: 136, TYO: 110, SG: 178}
        SP:  {LDN: 214, TYO: 269, SG: 333}
        LDN: {TYO: 233, SG: 163}
        TYO: {SG: 68}
      servers_per_dc: 3
      replication_factor: 2
      placement: table
      placement_table: t.csv
      base_port: 7000
      """;

  private static final String TABLE = """
      # made by hand for this test
      ids,replicas,bucket
      0-49,VA;LDN,0
      50,SG;TYO,1
      51-99,CA;SP,2
      """;

  private Topology load(String table) throws Exception {
    Files.writeString(dir.resolve("t.csv"), table);
    Path topo = dir.resolve("topology.yaml");
    Files.writeString(topo, TOPOLOGY);
    return TopologyLoader.load(topo);
  }

  private String problem(String table) {
    return assertThrows(ConfigException.class, () -> load(table)).getMessage();
  }

  @Test
  void everyKeyIsWhereTheTableSaysOnItsShardsServer() throws Exception {
    Topology t = load(TABLE);
    Placement p = Placement.of(t);
    assertTrue(p instanceof TablePlacement);
    assertEquals(3 * 3, p.numPartitions(), "three replica sets x three shards");
    for (int id = 0; id < 100; id++) {
      String key = "user" + id;
      int[] want = id < 50 ? new int[] {0, 3} : id == 50 ? new int[] {5, 4} : new int[] {1, 2};
      assertArrayEquals(want, p.replicaDcs(key), key);
      for (int dc = 0; dc < 6; dc++) {
        assertEquals(dc == want[0] || dc == want[1], p.isReplica(dc, key), key + " at " + dc);
        int server = p.serverFor(dc, key);
        assertEquals(dc, t.dcOfServer(server));
        assertEquals(t.shardOfServer(server), t.shardOfServer(p.serverFor(0, key)), "one shard per key everywhere");
        assertEquals(server, p.serverOf(dc, p.partitionOf(key)));
      }
      assertEquals(want[0], p.nearestReplica(want[0], key));
    }
    assertEquals(5, p.nearestReplica(5, "user50"));
    assertEquals(4, p.nearestReplica(1, "user50"), "CA is nearer TYO (110 ms) than SG (178 ms)");
    assertArrayEquals(new int[] {0, 1, 5}, p.firstReplicaDcs(), "VA, CA and SG load their keys");
    assertArrayEquals(new long[] {50, 49, 49, 50, 1, 1}, t.placementTable().keysPerDc(6));
    assertEquals(100, t.placementTable().keys());
    assertEquals(64, t.placementTable().sha256().length());
    assertThrows(UnsupportedOperationException.class, () -> p.partitionOfServer(0));
    // the derived topologies (other ports, scale, jitter, emulation) keep the table
    for (Topology u : new Topology[] {t.withLocalPorts("127.0.0.1", 9000), t.withRttScale(0.5), t.withJitterMs(1),
        t.withWanEmulation(false)}) {
      assertEquals(t.placementTable(), u.placementTable());
      assertArrayEquals(new int[] {5, 4}, Placement.of(u).replicaDcs("user50"));
    }
  }

  @Test
  void aKeyOutsideTheTableIsNamed() throws Exception {
    Placement p = Placement.of(load(TABLE));
    for (String key : new String[] {"user100", "x", "user", "user1a", "user-1"}) {
      String m = assertThrows(IllegalArgumentException.class, () -> p.partitionOf(key)).getMessage();
      assertTrue(m.contains("'" + key + "'") && m.contains("user0 .. user99"), m);
    }
  }

  @Test
  void aBadTableIsRefusedNamingTheLineAndTheFix() {
    String head = "ids,replicas\n";
    String m = problem("id,dcs\n0-99,VA;LDN\n");
    assertTrue(m.startsWith("topology.yaml: placement_table: ") || m.contains("placement_table"), m);
    assertTrue(m.contains("t.csv:1: the header must be"), m);
    assertTrue(problem(head + "0-49,VA;LDN\n60-99,CA;SP\n").contains("t.csv:3: the ids 50..59 are in no row"));
    assertTrue(problem(head + "0-49,VA;LDN\n40-99,CA;SP\n").contains("t.csv:3: the ids from 40 overlap"));
    assertTrue(problem(head + "1-99,VA;LDN\n").contains("the ids 0..0 are in no row"));
    assertTrue(problem(head + "0-99,VA;XX\n").contains("t.csv:2: unknown datacenter 'XX'"));
    assertTrue(problem(head + "0-99,VA;VA\n").contains("t.csv:2: VA is listed twice"));
    assertTrue(problem(head + "0-99,VA;CA;SP\n").contains("t.csv:2: lists 3 replica datacenters (VA;CA;SP), the "
        + "topology's replication_factor is 2"));
    assertTrue(problem(head + "9-3,VA;CA\n").contains("t.csv:2: ids must be a key id or a range"));
    assertTrue(problem(head + "0-9223372036854775807,VA;CA\n").contains("t.csv:2: id 9223372036854775807 is beyond"));
    assertTrue(problem(head + "0-99\n").contains("t.csv:2: a row is 'ids,replicas[,bucket]'"));
    assertTrue(problem("# nothing\n").contains("no rows"));
  }

  @Test
  void aTableNeedsPlacementTableAndTheOtherWayRound() throws Exception {
    Files.writeString(dir.resolve("t.csv"), TABLE);
    String noTable = TOPOLOGY.replace("placement_table: t.csv\n", "");
    String m = assertThrows(ConfigException.class, () -> TopologyLoader.parse(noTable, dir)).getMessage();
    assertTrue(m.startsWith("placement_table: missing"), m);
    String groups = TOPOLOGY.replace("placement: table", "placement: groups");
    m = assertThrows(ConfigException.class, () -> TopologyLoader.parse(groups, dir)).getMessage();
    assertTrue(m.startsWith("placement_table: applies only to placement: table"), m);
    String missing = TOPOLOGY.replace("t.csv", "nope.csv");
    m = assertThrows(ConfigException.class, () -> TopologyLoader.parse(missing, dir)).getMessage();
    assertTrue(m.contains("nope.csv: no such file"), m);
    assertNull(TopologyLoader.parse(groups.replace("placement_table: t.csv\n", ""), dir).placementTable());
    assertFalse(TopologyLoader.parse(TOPOLOGY, dir).placementScheme() != Placement.Scheme.TABLE);
  }
}
