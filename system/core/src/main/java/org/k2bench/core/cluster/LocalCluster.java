package org.k2bench.core.cluster;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntPredicate;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerNode;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Transport;

/**
 * The servers of some datacenters of a topology, running in this process over the real
 * transport (emulated WAN; gRPC on the topology's addresses to other processes, in-process
 * delivery between its own servers). The launcher uses it for the servers of one JVM
 * (every server of a local run, or one datacenter's); tests for a whole six-DC cluster.
 */
public final class LocalCluster implements AutoCloseable {
  private final StoreSystem system;
  private final Topology topology;
  private final Placement placement;
  private final ServerOptions options;
  private final Transport transport;
  private final ServerNode[] servers;
  private final List<KvClient> clients = new ArrayList<>();
  private final AtomicInteger nextClientId;

  private LocalCluster(StoreSystem system, Topology topology, ServerOptions options,
      IntPredicate serverIds, int firstClientId, String listenHost) {
    system.requirePlacement(topology);
    this.system = system;
    this.topology = topology;
    this.placement = Placement.of(topology);
    this.options = options;
    this.transport = new Transport(topology, new org.k2bench.core.transport.LinkConditions(topology),
        dispatchers(topology, serverIds), listenHost);
    transport.useClock(system.clock());
    this.servers = new ServerNode[topology.numServers()];
    this.nextClientId = new AtomicInteger(firstClientId);
    try {
      for (int id = 0; id < topology.numServers(); id++) {
        if (serverIds.test(id)) {
          servers[id] = system.startServer(transport, id, options);
        }
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  /**
   * WAN dispatcher threads of the process: {@code -Dk2bench.dispatchers}, else one per
   * datacenter whose servers it runs, at least two. They release every delayed message of
   * the process, and, with a machine's servers in one process, every message between its
   * nodes: with client sessions in the process at 4,400 ops/s (K2, bench-throughput's
   * workload), two dispatchers for six datacenters held local messages up to 8.9 ms late
   * (p99), six 3.2 ms, twelve 2.4 ms.
   */
  static int dispatchers(Topology topology, IntPredicate serverIds) {
    java.util.Set<Integer> dcs = new java.util.HashSet<>();
    for (int id = 0; id < topology.numServers(); id++) {
      if (serverIds.test(id)) {
        dcs.add(topology.dcOfServer(id));
      }
    }
    String given = System.getProperty("k2bench.dispatchers");
    if (given == null) {
      return Math.max(2, dcs.size());
    }
    try {
      int n = Integer.parseInt(given.trim());
      if (n >= 1) {
        return n;
      }
    } catch (NumberFormatException e) {
      // below
    }
    throw new org.k2bench.core.topology.ConfigException("-Dk2bench.dispatchers",
        "'" + given + "' is not a number of threads; give a whole number of at least 1");
  }

  /** Starts every server of the topology. */
  public static LocalCluster start(StoreSystem system, Topology topology, ServerOptions options) {
    return new LocalCluster(system, topology, options, id -> true, Topology.firstClientId(), null);
  }

  /** Starts the servers whose node ids {@code serverIds} accepts (e.g. all of one datacenter). */
  public static LocalCluster start(StoreSystem system, Topology topology, ServerOptions options,
      IntPredicate serverIds) {
    return start(system, topology, options, serverIds, null);
  }

  /** As above, listening on {@code listenHost} (null: the topology addresses) instead. */
  public static LocalCluster start(StoreSystem system, Topology topology, ServerOptions options,
      IntPredicate serverIds, String listenHost) {
    return new LocalCluster(system, topology, options, serverIds, Topology.firstClientId(), listenHost);
  }

  /** The ids of the servers this process runs. */
  public java.util.List<Integer> serverIds() {
    java.util.List<Integer> ids = new ArrayList<>();
    for (int id = 0; id < servers.length; id++) {
      if (servers[id] != null) {
        ids.add(id);
      }
    }
    return ids;
  }

  public Topology topology() {
    return topology;
  }

  public Placement placement() {
    return placement;
  }

  public Transport transport() {
    return transport;
  }

  public StoreSystem system() {
    return system;
  }

  public ServerNode server(int serverId) {
    return servers[serverId];
  }

  public ServerNode server(int dc, int shard) {
    return servers[topology.serverId(dc, shard)];
  }

  /** A new client session located in datacenter {@code dc}; closed with the cluster. */
  public KvClient client(int dc) {
    return client(dc, options);
  }

  /** A new client session in datacenter {@code dc} with options of its own (a system option of its client library). */
  public synchronized KvClient client(int dc, ServerOptions clientOptions) {
    KvClient c = system.newClient(transport, nextClientId.getAndIncrement(), dc, clientOptions);
    clients.add(c);
    return c;
  }

  /** Sum of one counter over all servers of a datacenter (or all, with dc = -1). */
  public long stat(int dc, String name) {
    long sum = 0;
    for (int id = 0; id < servers.length; id++) {
      if (servers[id] != null && (dc < 0 || topology.dcOfServer(id) == dc)) {
        sum += servers[id].stats().getOrDefault(name, 0L);
      }
    }
    return sum;
  }

  @Override
  public synchronized void close() {
    for (KvClient c : clients) {
      c.close();
    }
    for (ServerNode s : servers) {
      if (s != null) {
        s.close();
      }
    }
    transport.close();
  }
}
