package org.k2bench.launcher;

import java.nio.file.Path;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import picocli.CommandLine.Option;

/** Flags shared by commands that build a cluster from a topology file. */
final class ServerFlags {
  @Option(names = "--topology", required = true, paramLabel = "FILE",
      description = "Topology file (YAML): datacenters, rtt_ms, servers_per_dc, replication_factor, addresses.")
  Path topology;

  @Option(names = "--keys", defaultValue = "1000000", description = "Keyspace size (sizes the DC cache). Default ${DEFAULT-VALUE}.")
  long keys;

  @Option(names = "--cache-fraction", defaultValue = "0.05",
      description = "DC cache size as a fraction of all keys. Default ${DEFAULT-VALUE}.")
  double cacheFraction;

  @Option(names = "--gc-window-ms", defaultValue = "5000", description = "GC window. Default ${DEFAULT-VALUE}.")
  long gcWindowMs;

  @Option(names = "--replica-retention-ms", defaultValue = "15000",
      description = "How long replica servers keep superseded versions for remote reads. Default ${DEFAULT-VALUE}.")
  long replicaRetentionMs;

  @Option(names = "--txn-timeout-ms", defaultValue = "5000",
      description = "Read-only transaction timeout. Default ${DEFAULT-VALUE}.")
  long txnTimeoutMs;

  @Option(names = "--rpc-timeout-ms", defaultValue = "10000", description = "Default ${DEFAULT-VALUE}.")
  long rpcTimeoutMs;

  @Option(names = "--failover-timeout-ms", defaultValue = "2000",
      description = "How long a remote read waits for a replica datacenter before trying the next. "
          + "Default ${DEFAULT-VALUE}.")
  long failoverTimeoutMs;

  @Option(names = "--cache-versions-per-key", defaultValue = "" + ServerOptions.DEFAULT_CACHE_VERSIONS_PER_KEY,
      description = "How many versions of a key the DC cache keeps, newest first (0: every version the store "
          + "still offers). Default ${DEFAULT-VALUE}.")
  int cacheVersionsPerKey;

  @Option(names = "--option", paramLabel = "NAME=VALUE", mapFallbackValue = "",
      description = "An option of the system (repeatable); `systems --json` lists each system's options.")
  java.util.Map<String, String> systemOptions = new java.util.LinkedHashMap<>();

  Topology loadTopology() {
    return TopologyLoader.load(topology);
  }

  /** The options for {@code system}: the shared flags and its own ({@code --option}), checked. */
  ServerOptions options(org.k2bench.core.api.StoreSystem system) {
    if (keys < 1) {
      throw new ConfigException("--keys", "must be at least 1, got " + keys);
    }
    if (!(cacheFraction >= 0 && cacheFraction <= 1)) {
      throw new ConfigException("--cache-fraction", "must be between 0 and 1, got " + cacheFraction);
    }
    String[] names = {"--gc-window-ms", "--replica-retention-ms", "--txn-timeout-ms", "--rpc-timeout-ms",
        "--failover-timeout-ms"};
    long[] values = {gcWindowMs, replicaRetentionMs, txnTimeoutMs, rpcTimeoutMs, failoverTimeoutMs};
    for (int i = 0; i < names.length; i++) {
      if (values[i] < 1) {
        throw new ConfigException(names[i], "must be a positive number of milliseconds, got " + values[i]);
      }
    }
    if (cacheVersionsPerKey < 0) {
      throw new ConfigException("--cache-versions-per-key", "must be 0 (all) or more, got " + cacheVersionsPerKey);
    }
    return new ServerOptions(keys, cacheFraction, gcWindowMs, replicaRetentionMs, txnTimeoutMs, rpcTimeoutMs,
        failoverTimeoutMs, cacheVersionsPerKey,
        org.k2bench.core.api.SystemOptions.parse(system, systemOptions, "--option "));
  }
}
