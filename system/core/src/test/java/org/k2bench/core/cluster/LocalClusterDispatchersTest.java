package org.k2bench.core.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;

/** How many WAN dispatchers a process gets for the servers it runs. */
class LocalClusterDispatchersTest {
  private final Topology six = TopologyLoader.paperDefault(2, 2, 17000);

  @AfterEach
  void clear() {
    System.clearProperty("k2bench.dispatchers");
  }

  @Test
  void oneDispatcherPerHostedDatacenterAndAtLeastTwo() {
    assertEquals(6, LocalCluster.dispatchers(six, id -> true));
    assertEquals(2, LocalCluster.dispatchers(six, id -> six.dcOfServer(id) == 3));
    assertEquals(2, LocalCluster.dispatchers(six, id -> id == 0));
    assertEquals(3, LocalCluster.dispatchers(six, id -> six.dcOfServer(id) < 3));
  }

  @Test
  void thePropertyOverridesAndABadValueIsNamed() {
    System.setProperty("k2bench.dispatchers", "12");
    assertEquals(12, LocalCluster.dispatchers(six, id -> true));
    System.setProperty("k2bench.dispatchers", "0");
    ConfigException e = assertThrows(ConfigException.class, () -> LocalCluster.dispatchers(six, id -> true));
    assertEquals("-Dk2bench.dispatchers", e.field());
    System.setProperty("k2bench.dispatchers", "many");
    e = assertThrows(ConfigException.class, () -> LocalCluster.dispatchers(six, id -> true));
    assertTrue(e.getMessage().contains("'many'"), e.getMessage());
  }
}
