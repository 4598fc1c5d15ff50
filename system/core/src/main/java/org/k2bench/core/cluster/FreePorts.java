package org.k2bench.core.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.k2bench.core.topology.HostPort;
import org.k2bench.core.topology.Topology;

/**
 * Loopback ports free now, for tests and local clusters. They are drawn below the kernel's
 * ephemeral range: outgoing connections take their local ports from that range, as
 * {@code bind(0)} does, so a port {@code bind(0)} reported free could be taken by another
 * process's connect (a test JVM beside this one) before the server binds it.
 */
public final class FreePorts {
  private FreePorts() {}

  /** The topology with every server on a distinct free loopback port. */
  public static Topology assign(Topology t) {
    int lo = 10_000;
    int hi = Math.min(32_768, ephemeralLow());
    List<ServerSocket> held = new ArrayList<>();
    List<List<HostPort>> servers = new ArrayList<>();
    try {
      for (int d = 0; d < t.numDcs(); d++) {
        List<HostPort> dc = new ArrayList<>();
        for (int s = 0; s < t.serversPerDc(); s++) {
          ServerSocket sock = bindLow(lo, hi);
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

  private static ServerSocket bindLow(int lo, int hi) throws IOException {
    for (int attempt = 0; hi - lo >= 1000 && attempt < 100; attempt++) {
      try {
        return new ServerSocket(ThreadLocalRandom.current().nextInt(lo, hi), 1, InetAddress.getLoopbackAddress());
      } catch (IOException taken) {
        // another listener has it: draw again
      }
    }
    return new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
  }

  private static final String RANGE = "/proc/sys/net/ipv4/ip_local_port_range";

  /** The first port of the kernel's ephemeral range (Linux), or its usual value. */
  static int ephemeralLow() {
    try {
      // readAllLines, not readString: procfs reports a size that readString trusts, and it
      // returned "3" of "32768\t60999" here, so every port came from bind(0)
      return Integer.parseInt(Files.readAllLines(Path.of(RANGE)).get(0).trim().split("\\s+")[0]);
    } catch (IOException | RuntimeException e) {
      return 32_768;
    }
  }
}
