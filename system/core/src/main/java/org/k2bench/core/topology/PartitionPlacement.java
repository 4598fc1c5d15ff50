package org.k2bench.core.topology;

/**
 * The PaRiS paper's placement ({@code placement: partitions}; its §V-A and system model): the
 * keys hash into N partitions, each replicated at f of the D datacenters, one server per
 * partition replica, so every datacenter holds N·f/D partitions ({@code servers_per_dc}).
 *
 * <p>The paper says which partitions a datacenter holds only through its deployment. Here
 * the N·f replicas are dealt round-robin over the datacenters in topology order: replica
 * {@code i} of partition {@code p} is at datacenter {@code (p·f + i) mod D}, so a partition's
 * replicas are f consecutive datacenters of the list and every datacenter holds the same
 * number of partitions. Within a datacenter the servers hold its partitions in ascending
 * order. A partition's home in a datacenter without a replica of it is the server
 * {@code p mod servers_per_dc}.
 */
public final class PartitionPlacement implements Placement {
  private static final int SEED = 0x9747b28c;

  private final Topology topology;
  private final int partitions;
  /** [partition][dc]: the partition's server there (its replica or its home). */
  private final int[][] servers;
  /** [partition]: its replica datacenters in replica order. */
  private final int[][] replicas;
  /** [server id]: the partition whose replica it holds. */
  private final int[] partitionOfServer;

  PartitionPlacement(Topology topology) {
    this.topology = topology;
    this.partitions = topology.partitions();
    int d = topology.numDcs();
    int f = topology.replicationFactor();
    int s = topology.serversPerDc();
    this.servers = new int[partitions][d];
    this.replicas = new int[partitions][f];
    this.partitionOfServer = new int[topology.numServers()];
    int[] next = new int[d];
    for (int p = 0; p < partitions; p++) {
      for (int dc = 0; dc < d; dc++) {
        servers[p][dc] = topology.serverId(dc, p % s);
      }
      for (int i = 0; i < f; i++) {
        int dc = (p * f + i) % d;
        replicas[p][i] = dc;
        servers[p][dc] = topology.serverId(dc, next[dc]++);
        partitionOfServer[servers[p][dc]] = p;
      }
    }
    for (int dc = 0; dc < d; dc++) {
      if (next[dc] != s) { // Topology.validate() makes this impossible
        throw new IllegalStateException(topology.dcName(dc) + " holds " + next[dc] + " partitions, not " + s);
      }
    }
  }

  @Override
  public Topology topology() {
    return topology;
  }

  @Override
  public int numPartitions() {
    return partitions;
  }

  @Override
  public int partitionOf(String key) {
    return Math.floorMod(Murmur3.hash32(key, SEED), partitions);
  }

  @Override
  public int[] partitionDcs(int partition) {
    return replicas[partition].clone();
  }

  @Override
  public int serverOf(int dc, int partition) {
    return servers[partition][dc];
  }

  @Override
  public int partitionOfServer(int serverId) {
    return partitionOfServer[serverId];
  }

  @Override
  public boolean isReplica(int dc, String key) {
    return contains(replicas[partitionOf(key)], dc);
  }

  private static boolean contains(int[] a, int v) {
    for (int x : a) {
      if (x == v) {
        return true;
      }
    }
    return false;
  }
}
