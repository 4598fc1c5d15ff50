package org.k2bench.core.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import org.k2bench.core.topology.HostPort;
import org.k2bench.core.topology.Topology;

/** Loopback ports the OS reports free, for tests and local clusters. */
public final class FreePorts {
  private FreePorts() {}

  /** The topology with every server on a distinct free loopback port. */
  public static Topology assign(Topology t) {
    List<ServerSocket> held = new ArrayList<>();
    List<List<HostPort>> servers = new ArrayList<>();
    try {
      for (int d = 0; d < t.numDcs(); d++) {
        List<HostPort> dc = new ArrayList<>();
        for (int s = 0; s < t.serversPerDc(); s++) {
          ServerSocket sock = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
          held.add(sock);
          dc.add(new HostPort("127.0.0.1", sock.getLocalPort()));
        }
        servers.add(dc);
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot find free loopback ports: " + e.getMessage(), e);
    } finally {
      for (ServerSocket s : held) {
        try {
          s.close();
        } catch (IOException ignored) {
          // best effort
        }
      }
    }
    return t.withServers(servers);
  }
}
