package org.k2bench.ycsb;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;
import site.ycsb.DBException;

/**
 * A client's start-up check: every server must answer its pings, but a server that answers
 * later than one RPC timeout (a machine still starting its JVMs) is slow, not unreachable.
 */
@Tag("alone") // bounds on timing from above (800 ms of patience): run with no other test class beside it
class ConnectTest {
  @Test
  void aServerSlowerThanTheRpcTimeoutAtStartUpIsWaitedForWithinThePatience() throws Exception {
    Topology topology = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000));
    Transport t = new Transport(topology);
    List<Endpoint> servers = new ArrayList<>();
    try {
      for (int s = 0; s < topology.numServers(); s++) {
        servers.add(t.openServer(s, Runnable::run, m -> { }));
      }
      // Every ping from VA to SG's server takes 1.2 s more than its RTT: more than the 500 ms RPC timeout.
      int sg = topology.dcIndex("dc", "SG");
      t.links().setExtraDelayMs(0, sg, 1200);
      long start = System.nanoTime();
      K2BenchDB.connectToEveryServer(t, topology, Topology.firstClientId(), 0, 500, 10_000);
      assertTrue(System.nanoTime() - start > 3 * 1_200_000_000L, "three rounds, each waiting for SG");

      DBException e = assertThrows(DBException.class,
          () -> K2BenchDB.connectToEveryServer(t, topology, Topology.firstClientId() + 1, 0, 500, 800));
      assertTrue(e.getMessage().startsWith("servers.SG[0]: server ") && e.getMessage().endsWith(
          " did not answer a ping within 800 ms"), e.getMessage());
    } finally {
      t.close();
    }
  }

  @Test
  void aServerOfItsDatacenterNotListeningYetIsAskedAgainWithinThePatience() throws Exception {
    Topology topology = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000).withRttScale(0.1));
    Transport servers = new Transport(topology);
    Transport clients = new Transport(topology); // apart: the client reaches them over gRPC
    try {
      for (int s = 1; s < topology.numServers(); s++) {
        servers.openServer(s, Runnable::run, m -> { });
      }
      // VA's server (node 0) is not listening: the connection is refused until the patience ends
      DBException e = assertThrows(DBException.class,
          () -> K2BenchDB.connectToEveryServer(clients, topology, Topology.firstClientId(), 0, 500, 800));
      assertTrue(e.getMessage().startsWith("servers.VA[0]: server ")
          && e.getMessage().contains(" refused the connection for 800 ms: connection to node 0 lost"), e.getMessage());

      Thread late = new Thread(() -> {
        try {
          Thread.sleep(700);
          servers.openServer(0, Runnable::run, m -> { });
        } catch (InterruptedException ignored) {
          Thread.currentThread().interrupt();
        }
      });
      long start = System.nanoTime();
      late.start();
      K2BenchDB.connectToEveryServer(clients, topology, Topology.firstClientId() + 1, 0, 500, 10_000);
      late.join();
      assertTrue(System.nanoTime() - start >= 700_000_000L, "it waited for VA's server to listen");
    } finally {
      clients.close();
      servers.close();
    }
  }
}
