package org.k2bench.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.Tag;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;

/** Faults written into the faults file reach the links of a running transport. */
@Tag("alone") // bounds on timing from above: run with no other test class beside it (system/pom.xml)
class FaultFileTest {
  @TempDir
  Path dir;

  /** Replaces the faults file, then waits until the transport's links show the change. */
  void write(Path file, String json, java.util.function.BooleanSupplier applied) throws Exception {
    Path tmp = dir.resolve("faults.tmp");
    Files.writeString(tmp, json);
    Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    long deadline = System.currentTimeMillis() + 5_000;
    while (!applied.getAsBoolean()) {
      assertTrue(System.currentTimeMillis() < deadline, "the watcher applied " + json);
      Thread.sleep(5);
    }
  }

  static double pingMs(Endpoint a, int to, long timeoutMs) throws Exception {
    return a.ping(to, 0).get(timeoutMs, TimeUnit.MILLISECONDS) / 1e6;
  }

  @Test
  void partitionsHoldOrDropAndSpikesDelayUntilHealed() throws Exception {
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000).withRttScale(0.1)); // VA-CA 6 ms
    Path file = dir.resolve("faults.json");
    System.setProperty("k2bench.faults_file", file.toString());
    try (Transport transport = new Transport(t)) {
      Endpoint va = transport.openServer(0, Runnable::run, m -> { });
      transport.openServer(1, Runnable::run, m -> { });
      for (int i = 0; i < 50; i++) {
        pingMs(va, 1, 5_000); // connections and JIT
      }
      double base = pingMs(va, 1, 5_000);
      assertTrue(base < 30, "unfaulted VA-CA: " + base + " ms");

      LinkConditions links = transport.links();
      write(file, "{\"links\": [{\"from\": \"VA\", \"to\": \"CA\", \"extra_ms\": 100}]}",
          () -> links.sampleDelayNanos(0, 1) >= 100_000_000L);
      double spiked = pingMs(va, 1, 5_000);
      assertTrue(spiked >= 105 && spiked < 200, "a 100 ms spike one way: " + spiked + " ms");

      long until = System.currentTimeMillis() + 400;
      write(file, "{\"partitions\": [{\"a\": \"VA\", \"b\": \"CA\", \"until_ms\": " + until + "}]}",
          () -> links.sampleDelayNanos(1, 0) > 100_000_000L && links.sampleDelayNanos(0, 1) < 100_000_000L + 400_000_000L);
      long sent = System.currentTimeMillis();
      double held = pingMs(va, 1, 5_000);
      assertTrue(sent + held >= until, "held until the partition healed, then delivered: " + held + " ms");
      assertTrue(held < 1_000, "and not longer: " + held + " ms");

      write(file, "{\"partitions\": [{\"a\": \"CA\", \"b\": \"VA\", \"until_ms\": " + (until + 60_000)
          + ", \"mode\": \"drop\"}]}", () -> links.dropping(0, 1) && links.dropping(1, 0));
      assertThrows(TimeoutException.class, () -> pingMs(va, 1, 500), "dropped both ways");

      write(file, "{}", () -> !links.dropping(0, 1) && links.sampleDelayNanos(0, 1) < 10_000_000L);
      double healed = pingMs(va, 1, 5_000);
      assertTrue(healed < 30, "an empty set heals everything: " + healed + " ms");
    } finally {
      System.clearProperty("k2bench.faults_file");
    }
  }

  @Test
  void aRedirectReachesTheLinksAndARedirectedClientStaysWhereItIs() throws Exception {
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000).withRttScale(0.5)); // VA-CA 30 ms
    Path file = dir.resolve("faults.json");
    System.setProperty("k2bench.faults_file", file.toString());
    try (Transport transport = new Transport(t)) {
      transport.openServer(0, Runnable::run, m -> { }); // VA
      transport.openServer(1, Runnable::run, m -> { }); // CA
      LinkConditions links = transport.links();
      assertEquals(0, links.servingDc(0));
      write(file, "{\"redirects\": [{\"from\": \"VA\", \"to\": \"CA\"}]}", () -> links.servingDc(0) == 1);
      assertEquals(1, links.servingDc(1), "CA's own clients stay");
      // VA's client, redirected to CA's servers, is opened for CA but located in VA
      int id = Topology.firstClientId();
      transport.locateClient(id, 0);
      Endpoint moved = transport.openClient(id, 1, Runnable::run, m -> { });
      Endpoint local = transport.openClient(id + 1, 1, Runnable::run, m -> { });
      assertEquals(0, moved.dc());
      assertEquals(1, local.dc());
      double movedMs = Double.MAX_VALUE;
      double localMs = Double.MAX_VALUE;
      for (int i = 0; i < 30; i++) {
        movedMs = Math.min(movedMs, pingMs(moved, 1, 5_000));
        localMs = Math.min(localMs, pingMs(local, 1, 5_000));
      }
      assertTrue(movedMs >= 29, "the redirected client's messages cross VA-CA: " + movedMs + " ms");
      assertTrue(localMs < 15, "a CA client's do not: " + localMs + " ms");
      write(file, "{}", () -> links.servingDc(0) == 0);
    } finally {
      System.clearProperty("k2bench.faults_file");
    }
  }
}
