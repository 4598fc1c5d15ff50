package org.k2bench.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.Systems;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.topology.GroupPlacement;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.testing.TestOptions;

/** A system refuses, before any server starts, a placement it does not declare. */
class PlacementChoiceTest {
  @Test
  void aSystemRefusesAPlacementItDoesNotRunOn() throws Exception {
    Topology partitions = FreePorts.assign(TopologyLoader.paperDefault(2, 2, 7000).withPartitions(6, "127.0.0.1", 7000));
    int port = partitions.address(0).port();
    int checked = 0;
    for (StoreSystem system : Systems.available().values()) {
      if (system.placements().contains(Placement.Scheme.PARTITIONS)) {
        continue;
      }
      ConfigException e = assertThrows(ConfigException.class,
          () -> LocalCluster.start(system, partitions, TestOptions.defaults()).close(), system.name());
      assertEquals("placement", e.field());
      assertTrue(e.getMessage().contains(system.name() + " does not run on placement: partitions"), e.getMessage());
      assertFalse(e.getMessage().contains("\n"), e.getMessage());
      try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
        assertEquals(port, s.getLocalPort(), "no server of " + system.name() + " was left listening");
      }
      checked++;
    }
    assertTrue(checked >= 3, "K2, RAD and PaRiS* run on groups only");
    ConfigException e = assertThrows(ConfigException.class, () -> GroupPlacement.of(partitions, "RAD"));
    assertTrue(e.getMessage().contains("RAD needs replica groups"), e.getMessage());
  }
}
