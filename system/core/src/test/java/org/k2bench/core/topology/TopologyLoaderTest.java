package org.k2bench.core.topology;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;
import org.k2bench.core.transport.Transport;

class TopologyLoaderTest {
  static final String GOOD = """
      datacenters: [VA, CA, SP]
      rtt_ms:
        VA: {CA: 60, SP: 146.5}
        CA: {SP: 194}
      servers_per_dc: 2
      replication_factor: 3
      base_port: 7100
      """;

  private static ConfigException bad(String yaml) {
    ConfigException e = assertThrows(ConfigException.class, () -> TopologyLoader.parse(yaml));
    assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
    return e;
  }

  @Test
  void parsesAValidFileKeepingFractionalRtt() {
    Topology t = TopologyLoader.parse(GOOD);
    assertEquals(3, t.numDcs());
    assertEquals(146.5, t.rttMs(2, 0));
    assertEquals(194, t.rttMs(1, 2));
    assertEquals(7100 + 5, t.address(5).port());
    assertEquals("servers.SP[1]", t.addressField(5));
  }

  @Test
  void rttScaleMultipliesTheMatrix() {
    Topology t = TopologyLoader.parse(GOOD + "rtt_scale: 0.1\n");
    assertEquals(6.0, t.rttMs(0, 1), 1e-9);
  }

  @Test
  void withoutWanEmulationTheTransportAddsNoDelayButKeepsTheMatrix() {
    Topology t = TopologyLoader.parse(GOOD + "wan_emulation: none\njitter_ms: 3\n");
    assertFalse(t.wanEmulation());
    assertEquals(146.5, t.rttMs(2, 0), "the matrix still ranks datacenters by distance");
    org.k2bench.core.transport.LinkConditions links = new org.k2bench.core.transport.LinkConditions(t);
    assertEquals(0, links.sampleDelayNanos(0, 2), "the network has the latency: no delay, no jitter");
    links.setExtraDelayMs(0, 2, 5);
    assertEquals(5_000_000, links.sampleDelayNanos(0, 2), "injected delays still apply");
    assertFalse(t.withRttScale(0.5).withServers(t.withLocalPorts("127.0.0.1", 7200).servers()).wanEmulation(),
        "the setting survives every copy");
    org.k2bench.core.transport.LinkConditions emulated =
        new org.k2bench.core.transport.LinkConditions(TopologyLoader.parse(GOOD));
    assertEquals(73_250_000, emulated.baseDelayNanos(0, 2), "embedded (default): RTT/2, fractional ms kept");
    ConfigException e = bad(GOOD + "wan_emulation: netem\n");
    assertEquals("wan_emulation", e.field());
  }

  @Test
  void unknownDatacenterIsNamed() {
    ConfigException e = bad(GOOD.replace("CA: {SP: 194}", "CA: {SP: 194, XX: 3}"));
    assertEquals("rtt_ms.CA.XX", e.field());
    assertTrue(e.getMessage().contains("unknown datacenter 'XX'"), e.getMessage());
  }

  @Test
  void asymmetricRttIsNamed() {
    ConfigException e = bad(GOOD.replace("CA: {SP: 194}", "CA: {SP: 194, VA: 61}"));
    assertEquals("rtt_ms.CA.VA", e.field());
    assertTrue(e.getMessage().contains("asymmetric"), e.getMessage());
  }

  @Test
  void missingRttIsNamed() {
    ConfigException e = bad(GOOD.replace("CA: {SP: 194}", "CA: {}"));
    assertEquals("rtt_ms.CA.SP", e.field());
    assertTrue(e.getMessage().contains("missing"), e.getMessage());
  }

  @Test
  void replicationFactorMustDivideTheDatacenters() {
    ConfigException e = bad(GOOD.replace("replication_factor: 3", "replication_factor: 2"));
    assertEquals("replication_factor", e.field());
    assertTrue(e.getMessage().contains("does not divide"), e.getMessage());
  }

  @Test
  void partitionPlacementHasItsOwnRules() {
    // Three datacenters, f = 2: groups cannot place it, partitions can (6 partitions, 4 per DC).
    String partitions = GOOD.replace("replication_factor: 3", "replication_factor: 2")
        .replace("servers_per_dc: 2", "servers_per_dc: 4") + "placement: partitions\npartitions: 6\n";
    Topology t = TopologyLoader.parse(partitions);
    assertEquals(Placement.Scheme.PARTITIONS, t.placementScheme());
    assertEquals(6, t.partitions());
    assertEquals(Placement.Scheme.PARTITIONS, t.withRttScale(0.5).withLocalPorts("127.0.0.1", 7300)
        .withJitterMs(1).withWanEmulation(false).placementScheme(), "the placement survives every copy");
    assertEquals(6, t.withRttScale(0.5).partitions());
    assertEquals(Placement.Scheme.GROUPS, TopologyLoader.parse(GOOD).placementScheme(), "groups by default");

    ConfigException e = bad(partitions.replace("servers_per_dc: 4", "servers_per_dc: 3"));
    assertEquals("servers_per_dc", e.field());
    assertTrue(e.getMessage().contains("must be 4"), e.getMessage());
    e = bad(partitions.replace("partitions: 6", "partitions: 5"));
    assertEquals("partitions", e.field());
    assertTrue(e.getMessage().contains("multiple of 3"), e.getMessage());
    e = bad(partitions.replace("partitions: 6\n", ""));
    assertEquals("partitions", e.field());
    assertTrue(e.getMessage().contains("missing"), e.getMessage());
    e = bad(partitions.replace("placement: partitions", "placement: ring"));
    assertEquals("placement", e.field());
    assertTrue(e.getMessage().contains("groups, partitions, rings or table"), e.getMessage());
    e = bad(GOOD + "partitions: 6\n");
    assertEquals("partitions", e.field());
    assertTrue(e.getMessage().contains("only to placement: partitions"), e.getMessage());
  }

  @Test
  void unknownFieldAndWrongTypeAreNamed() {
    assertEquals("replicaton_factor", bad(GOOD + "replicaton_factor: 2\n").field());
    assertEquals("servers_per_dc",
        bad(GOOD.replace("servers_per_dc: 2", "servers_per_dc: two")).field());
    assertEquals("rtt_ms.VA.CA", bad(GOOD.replace("CA: 60", "CA: sixty")).field());
  }

  @Test
  void explicitServerListsAreChecked() {
    String explicit = GOOD.replace("base_port: 7100", """
        servers:
          VA: ["10.0.0.1:7000", "10.0.0.1:7001"]
          CA: ["10.0.0.2:7000", "10.0.0.2:7001"]
          SP: ["10.0.0.3:7000"]
        """);
    ConfigException e = bad(explicit);
    assertEquals("servers.SP", e.field());
    e = bad(explicit.replace("\"10.0.0.3:7000\"]", "\"10.0.0.3:7000\", \"10.0.0.3\"]"));
    assertEquals("servers.SP[1]", e.field());
  }

  @Test
  void portInUseIsNamedWhenTheServerStarts() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Topology t = TopologyLoader.parse(GOOD).withLocalPorts("127.0.0.1", taken.getLocalPort() - 3);
      try (Transport transport = new Transport(t)) {
        ConfigException e = assertThrows(ConfigException.class,
            () -> transport.openServer(3, Runnable::run, m -> { }));
        assertEquals("servers.CA[1]", e.field());
        assertTrue(e.getMessage().contains("in use"), e.getMessage());
      }
    }
  }
}
