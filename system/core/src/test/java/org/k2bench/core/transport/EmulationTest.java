package org.k2bench.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.UInt64Value;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;

/**
 * The embedded WAN emulation is observable and keeps channels FIFO, over gRPC
 * ({@code wire}) and between nodes of one process (in-process delivery).
 */
@Tag("alone") // bounds on timing from above: run with no other test class beside it (system/pom.xml)
class EmulationTest {
  static Transport transport(Topology t, boolean wire) {
    Transport tr = new Transport(t);
    return wire ? tr.wireOnly() : tr;
  }

  /** The paper's matrix divided by 10, one server per datacenter. */
  static Topology scaledPaperTopology(double jitterMs) {
    return FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000).withRttScale(0.1).withJitterMs(jitterMs));
  }

  /** Connects every pair and warms up the JIT; a cold JVM adds milliseconds to the first messages. */
  static void warmUp(Endpoint... eps) throws Exception {
    int rounds = Math.max(60, 600 / (eps.length * (eps.length - 1)));
    for (int round = 0; round < rounds; round++) {
      List<java.util.concurrent.CompletableFuture<Long>> pings = new ArrayList<>();
      for (Endpoint a : eps) {
        for (Endpoint b : eps) {
          if (a != b) {
            pings.add(a.ping(b.id(), 0));
          }
        }
      }
      for (var p : pings) {
        p.get(10, TimeUnit.SECONDS);
      }
    }
  }

  static double medianPingMs(Endpoint a, int to, int n) throws Exception {
    double[] ms = new double[n];
    for (int i = 0; i < n; i++) {
      ms[i] = a.ping(to, 0).get(10, TimeUnit.SECONDS) / 1e6;
    }
    Arrays.sort(ms);
    return ms[n / 2];
  }

  @ParameterizedTest(name = "wire={0}")
  @ValueSource(booleans = {false, true})
  void pingBetweenEveryPairMeasuresTheConfiguredRtt(boolean wire) throws Exception {
    Topology t = scaledPaperTopology(0);
    try (Transport transport = transport(t, wire)) {
      Endpoint[] eps = new Endpoint[t.numDcs()];
      for (int dc = 0; dc < t.numDcs(); dc++) {
        eps[dc] = transport.openServer(dc, Runnable::run, m -> { });
      }
      warmUp(eps);
      // 15 rounds of every pair at once, as in the warm-up: each pair's samples are still one
      // after another (0.5 s in all rather than 9 s for the pairs in turn), and 60 messages
      // in flight at a time are far from what would make the emulation late.
      int samples = 15;
      double[][][] ms = new double[t.numDcs()][t.numDcs()][samples];
      for (int i = 0; i < samples; i++) {
        List<java.util.concurrent.CompletableFuture<Long>> pings = new ArrayList<>();
        for (int a = 0; a < t.numDcs(); a++) {
          for (int b = 0; b < t.numDcs(); b++) {
            pings.add(a == b ? java.util.concurrent.CompletableFuture.completedFuture(0L) : eps[a].ping(b, 0));
          }
        }
        for (int j = 0; j < pings.size(); j++) {
          ms[j / t.numDcs()][j % t.numDcs()][i] = pings.get(j).get(10, TimeUnit.SECONDS) / 1e6;
        }
      }
      for (int a = 0; a < t.numDcs(); a++) {
        for (int b = 0; b < t.numDcs(); b++) {
          if (a == b) {
            continue;
          }
          Arrays.sort(ms[a][b]);
          double median = ms[a][b][samples / 2];
          String pair = t.dcName(a) + "->" + t.dcName(b);
          assertEquals(t.rttMs(a, b), median, 2.0, pair + " median RTT, samples " + Arrays.toString(ms[a][b]));
          assertTrue(ms[a][b][0] >= t.rttMs(a, b) - 0.05, pair + " no ping is faster than the link: " + ms[a][b][0]);
        }
      }
    }
  }

  @ParameterizedTest(name = "wire={0}")
  @ValueSource(booleans = {false, true})
  void channelsStayFifoUnderConcurrentLoadWithJitter(boolean wire) throws Exception {
    // Jitter (4 ms) far above the send spacing: without the FIFO clamp messages would reorder.
    Topology t = scaledPaperTopology(4.0);
    int perSender = 3000;
    try (Transport transport = transport(t, wire)) {
      Map<Integer, List<Long>> received = new ConcurrentHashMap<>();
      CountDownLatch done = new CountDownLatch(5 * perSender);
      transport.openServer(0, Runnable::run, m -> {
        received.computeIfAbsent(m.from(), k -> new ArrayList<>()).add(m.as(UInt64Value.class).getValue());
        done.countDown();
      });
      List<Thread> senders = new ArrayList<>();
      for (int dc = 1; dc < 6; dc++) {
        Endpoint ep = transport.openServer(dc, Runnable::run, m -> { });
        senders.add(new Thread(() -> {
          for (long i = 0; i < perSender; i++) {
            ep.send(0, UInt64Value.of(i));
            if (i % 100 == 0) {
              Thread.onSpinWait();
            }
          }
        }));
      }
      senders.forEach(Thread::start);
      for (Thread s : senders) {
        s.join();
      }
      assertTrue(done.await(30, TimeUnit.SECONDS), "all messages arrive");
      for (int dc = 1; dc < 6; dc++) {
        List<Long> got = received.get(dc);
        assertEquals(perSender, got.size());
        for (int i = 0; i < got.size(); i++) {
          assertEquals(i, got.get(i), "channel " + dc + "->0 position " + i);
        }
      }
    }
  }

  @ParameterizedTest(name = "wire={0}")
  @ValueSource(booleans = {false, true})
  void extraDelayOnOneLinkAffectsOnlyThatDirection(boolean wire) throws Exception {
    Topology t = scaledPaperTopology(0);
    try (Transport transport = transport(t, wire)) {
      Endpoint a = transport.openServer(0, Runnable::run, m -> { });
      Endpoint b = transport.openServer(1, Runnable::run, m -> { });
      warmUp(a, b);
      transport.links().setExtraDelayMs(0, 1, 20);
      assertEquals(t.rttMs(0, 1) + 20, medianPingMs(a, 1, 21), 2.0, "one direction delayed");
      assertEquals(t.rttMs(0, 1) + 20, medianPingMs(b, 0, 21), 2.0, "a round trip crosses it once");
      transport.links().clearExtraDelays();
      assertEquals(t.rttMs(0, 1), medianPingMs(a, 1, 21), 2.0);
    }
  }

  @Test
  void nodesOfOneProcessAnsweringEachOthersPingsAtOnceDoNotDeadlock() throws Exception {
    // Direct inboxes and pings answered in place: delivered on the sender's thread, under
    // its channel lock, two nodes pinging each other would each wait for the other's lock.
    // Two servers of one datacenter: no emulated delay, so nothing waits for a dispatcher.
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(2, 2, 7000));
    assertEquals(0.0, t.intraDcDelayMs());
    try (Transport transport = new Transport(t)) {
      Endpoint a = transport.openServer(t.serverId(0, 0), Runnable::run, m -> { });
      Endpoint b = transport.openServer(t.serverId(0, 1), Runnable::run, m -> { });
      List<java.util.concurrent.CompletableFuture<Long>> pings = new java.util.concurrent.CopyOnWriteArrayList<>();
      List<Thread> threads = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        Endpoint from = i % 2 == 0 ? a : b;
        Endpoint to = i % 2 == 0 ? b : a;
        threads.add(new Thread(() -> {
          for (int k = 0; k < 500; k++) {
            pings.add(from.ping(to.id(), 0));
          }
        }));
      }
      threads.forEach(Thread::start);
      for (Thread th : threads) {
        th.join(20_000);
        assertTrue(!th.isAlive(), "a sender is stuck");
      }
      for (var p : pings) {
        p.get(20, TimeUnit.SECONDS);
      }
      assertEquals(4000, pings.size());
    }
  }

  @Test
  void everyDeliveredMessageRecordsItsLatenessByLinkClass(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(2, 2, 7000).withRttScale(0.1));
    java.nio.file.Path log = dir.resolve("m.hlog");
    org.k2bench.core.metrics.ProcessMetrics.open(log, 100_000);
    try (Transport transport = new Transport(t)) {
      CountDownLatch got = new CountDownLatch(300);
      Endpoint va0 = transport.openServer(t.serverId(0, 0), Runnable::run, m -> got.countDown());
      Endpoint va1 = transport.openServer(t.serverId(0, 1), Runnable::run, m -> got.countDown());
      Endpoint ca0 = transport.openServer(t.serverId(1, 0), Runnable::run, m -> got.countDown());
      for (int i = 0; i < 100; i++) {
        va0.send(va1.id(), UInt64Value.of(i)); // local
        va0.send(ca0.id(), UInt64Value.of(i)); // wan
        ca0.send(va1.id(), UInt64Value.of(i)); // wan
      }
      assertTrue(got.await(10, TimeUnit.SECONDS));
    } finally {
      org.k2bench.core.metrics.ProcessMetrics.close();
    }
    Map<String, Long> counts = new java.util.HashMap<>();
    var reader = new org.HdrHistogram.HistogramLogReader(log.toFile());
    for (var h = reader.nextIntervalHistogram(); h != null; h = reader.nextIntervalHistogram()) {
      counts.merge(h.getTag(), ((org.HdrHistogram.AbstractHistogram) h).getTotalCount(), Long::sum);
    }
    // one lateness per message, by its class (and the path that delivered it)
    java.util.function.Function<String, Long> byClass = c -> counts.entrySet().stream()
        .filter(e -> e.getKey().startsWith("lateness:" + c + ":")).mapToLong(Map.Entry::getValue).sum();
    assertEquals(100L, byClass.apply("local"), "one value per local message: " + counts);
    assertEquals(200L, byClass.apply("wan"), "one value per wan message: " + counts);
    // and each message once by its class and payload type
    assertEquals(100L, counts.get("msg:local:UInt64Value"), counts.toString());
    assertEquals(200L, counts.get("msg:wan:UInt64Value"), counts.toString());
  }
}
