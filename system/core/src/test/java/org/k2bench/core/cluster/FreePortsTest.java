package org.k2bench.core.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;

class FreePortsTest {
  @TempDir
  Path locks;

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

  /** Every block's first port but the one left free, for a holder to lock. */
  static List<Integer> allBut(int free, int hi) {
    List<Integer> firsts = new ArrayList<>();
    for (int first = FreePorts.LOW; first + FreePorts.BLOCK <= hi; first += FreePorts.BLOCK) {
      if (first != free) {
        firsts.add(first);
      }
    }
    return firsts;
  }

  @Test
  void anotherProcesssBlocksAreNeverDrawnFromUntilItExits() throws Exception {
    int hi = Math.min(FreePorts.HIGH, FreePorts.ephemeralLow());
    int free = FreePorts.LOW + 3 * FreePorts.BLOCK;
    FreePorts mine = new FreePorts(locks, FreePorts.LOW, hi);
    try (Holder other = new Holder(locks, allBut(free, hi))) {
      // a random draw would leave the free block 43 times in 44 on each of 300 ports
      List<Integer> ports = mine.take(300);
      assertEquals(300, new HashSet<>(ports).size(), "distinct ports");
      for (int p : ports) {
        assertTrue(p >= free && p < free + FreePorts.BLOCK, "port " + p + " is outside the only unheld block " + free);
      }
      assertEquals(List.of(free), mine.heldBlocks());
    }
    // the holder exited, so the kernel dropped its locks: one draw of more than a block claims another
    assertEquals(FreePorts.BLOCK + 1, new HashSet<>(mine.take(FreePorts.BLOCK + 1)).size());
    assertEquals(2, mine.heldBlocks().size(), "a second block once the first is used up: " + mine.heldBlocks());
  }

  @Test
  void aPortSomethingListensOnIsSkipped() throws Exception {
    int hi = Math.min(FreePorts.HIGH, FreePorts.ephemeralLow());
    // A block this JVM holds among every process's locks: no other test process draws from it,
    // so the ports after the listened-on one are free (CI failed once on a fixed block).
    FreePorts.PROCESS.take(1);
    assertFalse(FreePorts.PROCESS.heldBlocks().isEmpty(), "this JVM holds a block of the shared lock directory");
    int free = FreePorts.PROCESS.heldBlocks().get(0);
    FreePorts mine = new FreePorts(locks, FreePorts.LOW, hi);
    try (Holder other = new Holder(locks, allBut(free, hi));
         ServerSocket busy = new ServerSocket(free, 1, InetAddress.getLoopbackAddress())) {
      List<Integer> ports = mine.take(3);
      assertEquals(List.of(free + 1, free + 2, free + 3), ports, "the block in order, past the listened-on port");
      assertFalse(ports.contains(busy.getLocalPort()));
    }
  }

  /** A child JVM that locks the given blocks' files and holds them until its stdin closes. */
  static final class Holder implements AutoCloseable {
    final Process process;

    Holder(Path dir, List<Integer> firsts) throws Exception {
      List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
          "-cp", System.getProperty("java.class.path"), HoldLocks.class.getName(), dir.toString()));
      firsts.forEach(f -> cmd.add(Integer.toString(f)));
      process = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
      String line = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)).readLine();
      assertEquals("locked " + firsts.size(), line, "the holder's report");
    }

    @Override
    public void close() throws Exception {
      process.getOutputStream().close();
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new AssertionError("the lock holder did not exit when its stdin closed");
      }
    }
  }

  /** The holder's main: lock {@code block-<first>.lock} for each argument after the directory. */
  public static final class HoldLocks {
    public static void main(String[] args) throws Exception {
      List<FileChannel> open = new ArrayList<>();
      for (int i = 1; i < args.length; i++) {
        FileChannel ch = FileChannel.open(Path.of(args[0], "block-" + args[i] + ".lock"),
            StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        if (ch.tryLock() == null) {
          throw new IllegalStateException("block " + args[i] + " is already locked");
        }
        open.add(ch);
      }
      System.out.println("locked " + open.size());
      System.out.flush();
      while (System.in.read() >= 0) {
        // hold until the test closes our stdin
      }
    }
  }
}
