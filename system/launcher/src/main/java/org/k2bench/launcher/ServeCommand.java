package org.k2bench.launcher;

import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.function.IntPredicate;
import org.k2bench.core.api.RunSpec;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.Systems;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Runs servers until SIGTERM/SIGINT: one server, all servers of one datacenter, or the
 * whole topology, in this JVM. Prints one {@code ready} line to stdout once every server
 * listens, so an orchestrator can wait for it. What runs (the system, the topology and
 * every shared parameter) is the trial's spec.json; the flags say only which servers this
 * host runs and where its files go.
 */
@Command(name = "serve", mixinStandardHelpOptions = true, description = "Runs servers of one system until stopped (SIGTERM/SIGINT).")
final class ServeCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Option(names = "--spec", required = true, paramLabel = "FILE",
      description = "The trial's spec.json (k2bench run writes one per trial): the system, the topology file "
          + "(files.topology, beside it) and every shared parameter.")
  java.nio.file.Path specFile;

  static final class Which {
    @Option(names = "--dc", paramLabel = "DC", description = "All servers of this datacenter.")
    String dc;

    @Option(names = "--server", paramLabel = "DC:SHARD", description = "One server, e.g. VA:2.")
    String server;

    @Option(names = "--all", description = "Every server of the topology (a local run's default).")
    boolean all;
  }

  @ArgGroup(exclusive = true, multiplicity = "1")
  Which which;

  @Option(names = "--listen-host", paramLabel = "HOST",
      description = "Listen here (e.g. 0.0.0.0) instead of on the topology addresses, which "
          + "a machine behind NAT (a cloud public IP) cannot bind.")
  String listenHost;

  @Option(names = "--stats-out", paramLabel = "FILE",
      description = "On shutdown, write every server's protocol counters here as JSON.")
  java.nio.file.Path statsOut;

  @Option(names = "--metrics-log", paramLabel = "FILE",
      description = "Write the servers' measurements (replication lag per datacenter pair) here as an "
          + "HdrHistogram interval log, one interval per second.")
  java.nio.file.Path metricsLog;

  @Option(names = "--clients-dir", paramLabel = "DIR",
      description = "Also run YCSB clients in this process, one per DIR/<name>.args file (local runs: "
          + "their messages to the servers stay in process).")
  java.nio.file.Path clientsDir;

  @Override
  public Integer call() throws InterruptedException {
    RunSpec run = RunSpec.read(specFile);
    org.k2bench.core.testing.Mutants.select(run); // before any system code runs
    StoreSystem sys = Systems.byName(specFile + ": system.name", run.system().name());
    Topology t = TopologyLoader.load(run.resolve(run.files().topology()));
    ServerOptions options = run.serverOptions(sys); // checked (the system's own options too) before anything starts
    IntPredicate servers = select(t);
    CountDownLatch stopped = new CountDownLatch(1);
    if (metricsLog != null) {
      try {
        org.k2bench.core.metrics.ProcessMetrics.open(metricsLog, 1000);
      } catch (java.io.IOException e) {
        throw new ConfigException("--metrics-log", "cannot write " + metricsLog + ": " + e.getMessage());
      }
    }
    LocalCluster cluster = LocalCluster.start(sys, t, options, servers, listenHost);
    ColocatedClients colocated = null;
    if (clientsDir != null) {
      org.k2bench.core.transport.Transport.hostClients(cluster.transport());
      try {
        colocated = new ColocatedClients(clientsDir);
      } catch (java.io.IOException e) {
        cluster.close();
        throw new ConfigException("--clients-dir", "cannot use " + clientsDir + ": " + e.getMessage());
      }
    }
    ColocatedClients clients = colocated;
    Thread hook = new Thread(() -> {
      if (clients != null) {
        clients.close(); // no client starts while the servers close
      }
      writeStats(t, cluster);
      cluster.close();
      org.k2bench.core.metrics.ProcessMetrics.close();
      stopped.countDown();
    }, "k2bench-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    List<Integer> ids = cluster.serverIds();
    StringBuilder where = new StringBuilder();
    for (int id : ids) {
      where.append(' ').append(t.dcName(t.dcOfServer(id))).append(':').append(t.shardOfServer(id))
          .append('@').append(t.address(id));
    }
    spec.commandLine().getOut().println("ready: " + sys.name() + where);
    spec.commandLine().getOut().flush();
    stopped.await();
    return 0;
  }

  /** server name (DC:shard) -> counters, written atomically. */
  private void writeStats(Topology t, LocalCluster cluster) {
    if (statsOut == null) {
      return;
    }
    java.util.Map<String, Object> all = new java.util.LinkedHashMap<>();
    for (int id : cluster.serverIds()) {
      all.put(t.dcName(t.dcOfServer(id)) + ":" + t.shardOfServer(id), new java.util.TreeMap<>(cluster.server(id).stats()));
    }
    try {
      EmulationBench.writeAtomically(statsOut, os ->
          new com.fasterxml.jackson.databind.ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(os, all));
    } catch (java.io.IOException e) {
      System.err.println("k2bench-server: cannot write --stats-out " + statsOut + ": " + e.getMessage());
    }
  }

  private IntPredicate select(Topology t) {
    if (which.all) {
      return id -> true;
    }
    if (which.dc != null) {
      int dc = t.dcIndex("--dc", which.dc);
      return id -> t.dcOfServer(id) == dc;
    }
    String[] parts = which.server.split(":");
    if (parts.length != 2) {
      throw new ConfigException("--server", "'" + which.server + "' is not DC:SHARD (e.g. VA:2)");
    }
    int dc = t.dcIndex("--server", parts[0]);
    int shard;
    try {
      shard = Integer.parseInt(parts[1]);
    } catch (NumberFormatException e) {
      throw new ConfigException("--server", "shard '" + parts[1] + "' is not a number");
    }
    if (shard < 0 || shard >= t.serversPerDc()) {
      throw new ConfigException("--server", "shard " + shard + " is outside 0.." + (t.serversPerDc() - 1));
    }
    int id = t.serverId(dc, shard);
    return x -> x == id;
  }
}
