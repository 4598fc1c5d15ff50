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
 * the systems use, with many requests in flight so the CPU, not the emulated RTT, limits
 * the rate. Every bundled operation costs at least one such round trip, so a system's
 * throughput divided by this one says how much of the machine the protocol leaves. Too
 * few requests in flight and the emulated RTT limits the rate, too many and memory does:
 * several windows are tried and the best is the ceiling.
 */
@Command(name = "bench-echo", mixinStandardHelpOptions = true,
    description = "Peak echo RPCs/s through the transport (the ceiling for bench-throughput).")
final class EchoBench implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Option(names = "--seconds", defaultValue = "20", description = "Measured seconds. Default ${DEFAULT-VALUE}.")
  int seconds;

  @Option(names = "--warmup-s", defaultValue = "10", description = "Default ${DEFAULT-VALUE}.")
  int warmupS;

  @Option(names = "--in-flight", split = ",", defaultValue = "5000,20000,40000",
      description = "Requests outstanding; each window is measured, the best counts. Default ${DEFAULT-VALUE}.")
  int[] inFlights;

  @Option(names = "--payload-bytes", defaultValue = "700", description = "Request and reply size. Default ${DEFAULT-VALUE}.")
  int payloadBytes;

  @Option(names = "--json", paramLabel = "FILE", description = "Also write the result as JSON.")
  Path json;

  @Override
  public Integer call() throws Exception {
    for (int w : inFlights) {
      if (w < 1 || seconds < 1) {
        throw new ConfigException("--in-flight/--seconds", "must be positive");
      }
    }
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000));
    BytesValue payload = BytesValue.of(ByteString.copyFrom(new byte[payloadBytes]));
    try (Transport transport = new Transport(t).wireOnly()) {
      // The server answers on its transport thread: nothing but the transport is measured.
      transport.openServer(t.serverId(1, 0), Runnable::run, m -> m.reply(payload));
      Endpoint client = transport.openClient(60_000, 0, Runnable::run, m -> { });
      int cores = Runtime.getRuntime().availableProcessors();
      Map<String, Object> out = new LinkedHashMap<>();
      java.util.List<Map<String, Object>> tried = new java.util.ArrayList<>();
      double best = -1;
      for (int inFlight : inFlights) {
        LatencyHistogram rtt = new LatencyHistogram();
        LongAdder done = new LongAdder();
        Semaphore window = new Semaphore(inFlight);
        long warmEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(warmupS);
        long end = warmEnd + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < end) {
          window.acquire();
          long start = System.nanoTime();
          boolean measured = start >= warmEnd;
          client.call(t.serverId(1, 0), payload).whenComplete((r, e) -> {
            window.release();
            if (e == null && measured) {
              done.increment();
              rtt.recordNanos(System.nanoTime() - start);
            }
          });
        }
        window.acquire(inFlight);
        double perSecond = done.sum() / (double) seconds;
        spec.commandLine().getOut().printf("echo through the transport (VA -> CA, RTT %.0f ms emulated, %d in flight): "
            + "%,.0f RPCs/s, %,.0f per core; RTT p50 %.1f ms p99 %.1f ms%n", t.rttMs(0, 1), inFlight, perSecond,
            perSecond / cores, rtt.percentileMs(50), rtt.percentileMs(99));
        spec.commandLine().getOut().flush();
        tried.add(Map.of("in_flight", inFlight, "rpcs_per_s", Math.round(perSecond), "rtt_ms", rtt.summary()));
        if (perSecond > best) {
          best = perSecond;
          out.put("in_flight", inFlight);
        }
      }
      out.put("echo_rpcs_per_s", Math.round(best));
      out.put("cores", cores);
      out.put("echo_rpcs_per_s_per_core", Math.round(best / cores));
      out.put("payload_bytes", payloadBytes);
      out.put("configured_rtt_ms", t.rttMs(0, 1));
      out.put("windows", tried);
      if (json != null) {
        EmulationBench.writeAtomically(json, os ->
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(os, out));
      }
    }
    return 0;
  }
}
