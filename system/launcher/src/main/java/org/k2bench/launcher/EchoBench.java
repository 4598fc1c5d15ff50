package org.k2bench.launcher;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.google.protobuf.BytesValue;
import com.google.protobuf.ByteString;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.metrics.LatencyHistogram;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The throughput ceiling of the transport: echo request/reply pairs between a client in one
 * datacenter and a server in another, through the same gRPC transport and WAN emulation
 * the systems use. Every bundled operation costs at least one such round trip, so a
 * system's throughput divided by this one says how much of the machine the protocol leaves.
 *
 * <p>A ceiling, not a queue: after a warm-up, the number of requests in flight climbs a
 * ladder until the rate stops growing (two steps in a row below {@value #GROWTH} times the
 * best so far) or the ladder ends (saturated if its last step added less than that). The
 * two best steps are measured again, {@code --repeats} windows each; the ceiling is the
 * better median (the smaller concurrency unless the larger is {@value #KNEE_OVER} times
 * faster: beyond saturation more requests in flight only queue, the RTT grows, the rate
 * does not), with the spread of its windows and the RTT measured there beside the
 * emulated one.
 */
@Command(name = "bench-echo", mixinStandardHelpOptions = true,
    description = "Peak echo RPCs/s through the transport (the ceiling for bench-throughput).")
final class EchoBench implements Callable<Integer> {
  static final double GROWTH = 1.05;
  /** A larger concurrency counts only if its rate is this much higher: else it only queues. */
  static final double KNEE_OVER = 1.05;
  /** Windows at the ceiling's concurrency further apart than this (of the median): UNSTABLE. */
  static final double STABLE_SPREAD = 0.10;

  @Spec
  CommandSpec spec;

  @Option(names = "--step-s", defaultValue = "5", description = "Measured seconds per ladder step and per repeat. Default ${DEFAULT-VALUE}.")
  int stepS;

  @Option(names = "--warmup-s", defaultValue = "10", description = "Seconds of warm-up before the ladder. Default ${DEFAULT-VALUE}.")
  int warmupS;

  @Option(names = "--in-flight", split = ",", defaultValue = "250,500,1000,2000,4000,6000,8000,11000,16000,23000,32000",
      description = "The ladder of requests outstanding, increasing. Default ${DEFAULT-VALUE}.")
  int[] inFlights;

  @Option(names = "--repeats", defaultValue = "3", description = "Windows at the saturating concurrency. Default ${DEFAULT-VALUE}.")
  int repeats;

  @Option(names = "--repeat-s", defaultValue = "10", description = "Measured seconds per repeat. Default ${DEFAULT-VALUE}.")
  int repeatS;

  @Option(names = "--payload-bytes", defaultValue = "700", description = "Request and reply size. Default ${DEFAULT-VALUE}.")
  int payloadBytes;

  @Option(names = "--json", paramLabel = "FILE", description = "Also write the result as JSON.")
  Path json;

  private record Window(int inFlight, double perSecond, LatencyHistogram rtt) {
    Map<String, Object> json() {
      return Map.of("in_flight", inFlight, "rpcs_per_s", Math.round(perSecond), "rtt_ms", rtt.summary());
    }
  }

  @Override
  public Integer call() throws Exception {
    if (stepS < 2 || repeatS < 2 || warmupS < 2 || repeats < 1) {
      throw new ConfigException("--step-s/--repeat-s/--warmup-s/--repeats",
          "the seconds must be at least 2, --repeats at least 1");
    }
    for (int i = 0; i < inFlights.length; i++) {
      if (inFlights[i] < 1 || i > 0 && inFlights[i] <= inFlights[i - 1]) {
        throw new ConfigException("--in-flight", "must be positive and increasing, got "
            + java.util.Arrays.toString(inFlights));
      }
    }
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000));
    BytesValue payload = BytesValue.of(ByteString.copyFrom(new byte[payloadBytes]));
    var out = spec.commandLine().getOut();
    try (Transport transport = new Transport(t).wireOnly()) {
      // The server answers on its transport thread: nothing but the transport is measured.
      int server = t.serverId(1, 0);
      transport.openServer(server, Runnable::run, m -> m.reply(payload));
      Endpoint client = transport.openClient(60_000, 0, Runnable::run, m -> { });
      int cores = Runtime.getRuntime().availableProcessors();
      double rttMs = t.rttMs(0, 1);
      window(client, server, payload, inFlights[inFlights.length / 2], warmupS); // JIT, pools, connections
      java.util.List<Window> ladder = new java.util.ArrayList<>();
      double best = 0;
      int flat = 0;
      for (int inFlight : inFlights) {
        Window w = window(client, server, payload, inFlight, stepS);
        ladder.add(w);
        out.printf("  %,6d in flight: %,9.0f RPCs/s; RTT p50 %.1f ms%n", inFlight, w.perSecond, w.rtt.percentileMs(50));
        out.flush();
        flat = w.perSecond < GROWTH * best ? flat + 1 : 0;
        best = Math.max(best, w.perSecond);
        if (flat == 2) {
          break;
        }
      }
      boolean saturated = flat >= 1; // the last step added less than 5%
      // One 5 s step is noisy (+-15% here: GC, JIT, the other threads of a 2-core machine),
      // so the two best steps are measured again and the better median counts.
      java.util.List<Window> top2 = ladder.stream()
          .sorted(java.util.Comparator.comparingDouble(Window::perSecond).reversed()).limit(2)
          .sorted(java.util.Comparator.comparingInt(Window::inFlight)).toList();
      java.util.List<Window> repeated = null;
      double ceiling = -1;
      for (Window candidate : top2) {
        java.util.List<Window> r = new java.util.ArrayList<>();
        for (int i = 0; i < repeats; i++) {
          r.add(window(client, server, payload, candidate.inFlight, repeatS));
        }
        double median = sortedRates(r)[repeats / 2];
        out.printf("  %,6d in flight again: %s RPCs/s%n", candidate.inFlight,
            r.stream().map(w -> String.format("%,.0f", w.perSecond)).collect(java.util.stream.Collectors.joining(", ")));
        out.flush();
        if (median > KNEE_OVER * ceiling) { // the smaller concurrency unless the larger one is clearly faster
          ceiling = median;
          repeated = r;
        }
      }
      Window knee = repeated.get(0);
      double[] rates = sortedRates(repeated);
      double spread = (rates[rates.length - 1] - rates[0]) / ceiling;
      LatencyHistogram rtt = new LatencyHistogram();
      repeated.forEach(w -> rtt.add(w.rtt));
      out.printf("echo ceiling through the transport (VA -> CA, emulated RTT %.0f ms, %d-byte messages): "
          + "%,.0f RPCs/s (%,.0f per core) at %,d in flight, the median of %d windows of %d s "
          + "(spread %.1f%%%s); RTT there p50 %.1f ms p99 %.1f ms%s%n", rttMs, payloadBytes, ceiling,
          ceiling / cores, knee.inFlight, repeats, repeatS, 100 * spread, spread > STABLE_SPREAD ? ": UNSTABLE, more than 10%" : "",
          rtt.percentileMs(50), rtt.percentileMs(99),
          saturated ? "" : "; NOT SATURATED: the rate still grew at the ladder's top");
      out.flush();
      Map<String, Object> doc = new LinkedHashMap<>();
      doc.put("echo_rpcs_per_s", Math.round(ceiling));
      doc.put("cores", cores);
      doc.put("echo_rpcs_per_s_per_core", Math.round(ceiling / cores));
      doc.put("in_flight", knee.inFlight);
      doc.put("saturated", saturated);
      doc.put("repeats", repeated.stream().map(w -> Math.round(w.perSecond)).toList());
      doc.put("spread", Math.round(spread * 1000) / 1000.0);
      doc.put("stable", spread <= STABLE_SPREAD);
      doc.put("rtt_ms", rtt.summary());
      doc.put("payload_bytes", payloadBytes);
      doc.put("configured_rtt_ms", rttMs);
      doc.put("ladder", ladder.stream().map(Window::json).toList());
      if (json != null) {
        EmulationBench.writeAtomically(json, os ->
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(os, doc));
      }
    }
    return 0;
  }

  /**
   * {@code seconds} of echoes with {@code inFlight} outstanding: the rate and RTT of the
   * replies that arrive after the first second (the pipe filling is not measured); returns
   * once every request came back.
   */
  private static Window window(Endpoint client, int server, BytesValue payload, int inFlight, int seconds)
      throws InterruptedException {
    LatencyHistogram rtt = new LatencyHistogram();
    LongAdder done = new LongAdder();
    Semaphore window = new Semaphore(inFlight);
    long from = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
    long end = from + TimeUnit.SECONDS.toNanos(seconds - 1);
    while (System.nanoTime() < end) {
      window.acquire();
      long start = System.nanoTime();
      client.call(server, payload).whenComplete((r, e) -> {
        window.release();
        long now = System.nanoTime();
        if (e == null && now >= from && now < end) {
          done.increment();
          rtt.recordNanos(now - start);
        }
      });
    }
    window.acquire(inFlight);
    return new Window(inFlight, done.sum() / (seconds - 1.0), rtt);
  }

  private static double[] sortedRates(java.util.List<Window> windows) {
    return windows.stream().mapToDouble(Window::perSecond).sorted().toArray();
  }
}
