package org.k2bench.launcher;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.k2bench.core.metrics.LatencyHistogram;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.RttProbe;
import org.k2bench.core.transport.Transport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Measures the RTT matrix of a running cluster through its transport: a client placed in
 * each datacenter pings shard 0 of every other datacenter. The orchestrator stores the
 * result with each run.
 */
@Command(name = "ping", mixinStandardHelpOptions = true, description = "Measures the RTT matrix of running servers (median and p99 per pair).")
final class PingCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Option(names = "--topology", required = true, paramLabel = "FILE")
  Path topology;

  @Option(names = "--samples", defaultValue = "20", description = "Pings per pair. Default ${DEFAULT-VALUE}.")
  int samples;

  @Option(names = "--warmup-s", defaultValue = "3",
      description = "Ping without recording first (connections, JIT). Default ${DEFAULT-VALUE}.")
  int warmupS;

  @Option(names = "--json", paramLabel = "FILE", description = "Also write the matrix as JSON.")
  Path json;

  @Option(names = "--from", paramLabel = "DC",
      description = "Measure only this datacenter's row, from this machine: where the network "
          + "itself has the latency (real regions, tc), a probe must sit in the datacenter it "
          + "measures from. Without it, one process measures every pair (embedded emulation).")
  String fromDc;

  @Override
  public Integer call() throws Exception {
    Topology t = org.k2bench.core.topology.TopologyLoader.load(topology);
    if (samples < 1) {
      throw new org.k2bench.core.topology.ConfigException("--samples", "must be at least 1");
    }
    int only = fromDc == null ? -1 : t.dcIndex("--from", fromDc);
    try (Transport transport = new Transport(t)) {
      Endpoint[] from = new Endpoint[t.numDcs()];
      int[] to = new int[t.numDcs()];
      for (int dc = 0; dc < t.numDcs(); dc++) {
        from[dc] = transport.openClient(65_000 - dc, dc, Runnable::run, m -> { });
        to[dc] = t.serverId(dc, 0);
      }
      java.util.function.BiPredicate<Integer, Integer> pairs = (a, b) -> only < 0 || a == only || b == only;
      long warmEnd = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(warmupS);
      do {
        RttProbe.measure(from, to, 2, 0, pairs, only);
      } while (System.nanoTime() < warmEnd);
      LatencyHistogram[][] h = RttProbe.measure(from, to, samples, 0, pairs, only);
      Map<String, Object> result = matrix(t, h, only);
      print(t, h);
      if (json != null) {
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), result);
      }
    }
    return 0;
  }

  /** The measured matrix; with {@code only >= 0}, that datacenter's row alone. */
  static Map<String, Object> matrix(Topology t, LatencyHistogram[][] h, int only) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (int a = 0; a < t.numDcs(); a++) {
      if (only >= 0 && a != only) {
        continue;
      }
      Map<String, Object> row = new LinkedHashMap<>();
      for (int b = 0; b < t.numDcs(); b++) {
        LatencyHistogram x = a < b ? h[a][b] : b < a ? h[b][a] : null;
        row.put(t.dcName(b), x == null ? 0.0 : Map.of("configured", t.rttMs(a, b),
            "p50", x.percentileMs(50), "p99", x.percentileMs(99)));
      }
      out.put(t.dcName(a), row);
    }
    return out;
  }

  private void print(Topology t, LatencyHistogram[][] h) {
    var out = spec.commandLine().getOut();
    out.printf("%-10s %10s %10s %10s%n", "pair", "configured", "p50", "p99");
    for (int a = 0; a < t.numDcs(); a++) {
      for (int b = a + 1; b < t.numDcs(); b++) {
        if (h[a][b] == null) {
          continue;
        }
        out.printf("%-10s %10.2f %10.2f %10.2f%n", t.dcName(a) + "-" + t.dcName(b), t.rttMs(a, b),
            h[a][b].percentileMs(50), h[a][b].percentileMs(99));
      }
    }
    out.flush();
  }
}
