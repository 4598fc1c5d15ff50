package org.k2bench.core.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.k2bench.core.topology.HostPort;
import org.k2bench.core.topology.Topology;

/**
 * Loopback ports free now, for tests and local clusters.
 *
 * <p>They are drawn below the kernel's ephemeral range: outgoing connections take their local
 * ports from that range, as {@code bind(0)} does, so a port {@code bind(0)} reported free could
 * be taken by another process's connect before the server binds it.
 *
 * <p>Below that range, only another allocator can take a port between "free now" and the
 * server's bind: two test JVMs drawing at random hit each other's 36 ports about once a suite.
 * So the range is cut into blocks of {@link #BLOCK} ports and a process draws only from blocks
 * it holds a lock on ({@code block-<first port>.lock} in {@link #lockDir()}), until it exits.
 * The locks are POSIX record locks, the ones Python's {@code fcntl.lockf} takes, so
 * {@code k2bench/deploy/hosts.py} (same directory, same blocks) shares them.
 */
public final class FreePorts {
  static final int LOW = 10_000;
  static final int HIGH = 32_768;
  static final int BLOCK = 512;

  static final FreePorts PROCESS = new FreePorts(lockDir(), LOW, Math.min(HIGH, ephemeralLow()));

  private final Path dir;
  private final int lo;
  private final int hi;
  /** Blocks this process holds, as their first ports; their channels stay open, so locked. */
  private final List<Integer> held = new ArrayList<>();
  private final List<FileChannel> channels = new ArrayList<>();
  /** Where the next draw starts, an index into the held blocks' ports in order. */
  private int cursor;

  FreePorts(Path dir, int lo, int hi) {
    this.dir = dir;
    this.lo = lo;
    this.hi = hi;
  }

  /** The topology with every server on a distinct free loopback port. */
  public static Topology assign(Topology t) {
    List<Integer> ports = PROCESS.take(t.numDcs() * t.serversPerDc());
    List<List<HostPort>> servers = new ArrayList<>();
    int i = 0;
    for (int d = 0; d < t.numDcs(); d++) {
      List<HostPort> dc = new ArrayList<>();
      for (int s = 0; s < t.serversPerDc(); s++) {
        dc.add(new HostPort("127.0.0.1", ports.get(i++)));
      }
      servers.add(dc);
    }
    return t.withServers(servers);
  }

  /** {@code count} distinct ports nothing listens on now, from this process's blocks. */
  synchronized List<Integer> take(int count) {
    List<ServerSocket> probes = new ArrayList<>();
    List<Integer> ports = new ArrayList<>();
    try {
      while (ports.size() < count) {
        ServerSocket s = next();
        probes.add(s);
        ports.add(s.getLocalPort());
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot find free loopback ports: " + e.getMessage(), e);
    } finally {
      for (ServerSocket s : probes) {
        try {
          s.close();
        } catch (IOException ignored) {
          // best effort
        }
      }
    }
    return ports;
  }

  /** A socket bound to the next free port of a held block, claiming a block when they are all busy. */
  private ServerSocket next() throws IOException {
    while (true) {
      int size = held.size() * BLOCK;
      for (int tried = 0; tried < size; tried++) {
        int i = cursor;
        cursor = (cursor + 1) % size;
        int port = held.get(i / BLOCK) + i % BLOCK;
        try {
          return new ServerSocket(port, 1, InetAddress.getLoopbackAddress());
        } catch (IOException taken) {
          // a server of ours, or a listener that is no allocator's: try the next one
        }
      }
      if (!claimBlock()) {
        return unlocked();
      }
      cursor = size; // the new block's first port
    }
  }

  /** Locks a block no process holds, starting at a random one so processes spread out. */
  private boolean claimBlock() {
    int blocks = (hi - lo) / BLOCK;
    if (blocks <= 0) {
      return false;
    }
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      return false;
    }
    int start = ThreadLocalRandom.current().nextInt(blocks);
    for (int k = 0; k < blocks; k++) {
      int first = lo + ((start + k) % blocks) * BLOCK;
      if (held.contains(first)) {
        continue;
      }
      try {
        FileChannel ch = FileChannel.open(dir.resolve("block-" + first + ".lock"),
            StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = ch.tryLock();
        if (lock == null) {
          ch.close();
          continue;
        }
        channels.add(ch);
        held.add(first);
        return true;
      } catch (IOException e) {
        return false; // the directory is not ours to write: draw without locks
      }
    }
    return false;
  }

  /** Every block is held or the directory unusable: a random port below the range, as before blocks. */
  private ServerSocket unlocked() throws IOException {
    for (int attempt = 0; hi - lo >= 1000 && attempt < 100; attempt++) {
      try {
        return new ServerSocket(ThreadLocalRandom.current().nextInt(lo, hi), 1, InetAddress.getLoopbackAddress());
      } catch (IOException taken) {
        // another listener has it: draw again
      }
    }
    return new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
  }

  /** Blocks this process holds, as their first ports. */
  synchronized List<Integer> heldBlocks() {
    return List.copyOf(held);
  }

  /** {@code K2BENCH_PORT_LOCKS}, else {@code /tmp/k2bench-ports-<user>}: Python uses the same rule. */
  static Path lockDir() {
    String env = System.getenv("K2BENCH_PORT_LOCKS");
    if (env != null && !env.isBlank()) {
      return Path.of(env);
    }
    return Path.of("/tmp", "k2bench-ports-" + System.getProperty("user.name", "user"));
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
