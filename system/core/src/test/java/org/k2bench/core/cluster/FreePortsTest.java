package org.k2bench.core.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;

class FreePortsTest {
  @Test
  void portsAreDrawnBelowTheKernelsEphemeralRange() throws Exception {
    String range;
    try (InputStream in = Files.newInputStream(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
      range = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
    }
    int low = Integer.parseInt(range.trim().split("\\s+")[0]);
    assertEquals(low, FreePorts.ephemeralLow(), "the range's first port, as the kernel gives it: " + range);
    assertTrue(low >= 11_000, "this test needs an ephemeral range above 11000, the kernel's is " + range);

    Topology t = FreePorts.assign(TopologyLoader.paperDefault(2, 2, 7000));
    Set<Integer> ports = new HashSet<>();
    for (int s = 0; s < t.numDcs() * t.serversPerDc(); s++) {
      int port = t.address(s).port();
      assertTrue(port >= 10_000 && port < Math.min(32_768, low), "server " + s + " got port " + port);
      ports.add(port);
    }
    assertEquals(t.numDcs() * t.serversPerDc(), ports.size(), "distinct ports");
  }
}
