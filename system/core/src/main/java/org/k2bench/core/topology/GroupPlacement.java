package org.k2bench.core.topology;

/**
 * The K2 paper's placement ({@code placement: groups}, the default). The D datacenters form
 * f replica groups by index modulo f (f = 2 on the paper's list: {VA, SP, TYO} and
 * {CA, LDN, SG}). A key hashes to one position in [0, D/f); its replica
 * datacenters are the datacenters at that position in every group, so each key has exactly
 * f replicas, one per group, and datacenters at the same position ("equivalent
 * datacenters", RAD) hold the same keys. Within a datacenter a key lives on shard
 * {@code hash mod S}; the server of that shard in another datacenter is its equivalent
 * server.
 */
public final class GroupPlacement implements Placement {
  private final Topology topology;
  private final int groupSize;
  private final int[][] groups;

  /**
   * The replica groups of a topology whose placement is groups; a {@link ConfigException} on
   * {@code placement} otherwise, for protocols built on equivalent datacenters (RAD).
   */
  public static GroupPlacement of(Topology topology, String who) {
    if (topology.placementScheme() != Scheme.GROUPS) {
      throw new ConfigException("placement", who + " needs replica groups (placement: groups), but the topology's "
          + "placement is " + topology.placementScheme().fileName() + "; use placement: groups");
    }
    return new GroupPlacement(topology);
  }

  GroupPlacement(Topology topology) {
    this.topology = topology;
    int f = topology.replicationFactor();
    this.groupSize = topology.numDcs() / f;
    this.groups = new int[f][groupSize];
    for (int dc = 0; dc < topology.numDcs(); dc++) {
      groups[dc % f][dc / f] = dc;
    }
  }

  @Override
  public Topology topology() {
    return topology;
  }

  /**
   * A partition is the keys of one group position on one shard: {@code position * S + shard},
   * replicated at the datacenters of that position in every group, on that shard's server.
   */
  @Override
  public int numPartitions() {
    return groupSize * topology.serversPerDc();
  }

  @Override
  public int partitionOf(String key) {
    return groupPosition(key) * topology.serversPerDc() + shardOf(key);
  }

  @Override
  public int[] partitionDcs(int partition) {
    int pos = partition / topology.serversPerDc();
    int[] out = new int[groups.length];
    for (int g = 0; g < groups.length; g++) {
      out[g] = groups[g][pos];
    }
    return out;
  }

  @Override
  public int partitionOfServer(int serverId) {
    int dc = topology.dcOfServer(serverId);
    return (dc / topology.replicationFactor()) * topology.serversPerDc() + topology.shardOfServer(serverId);
  }

  /** A partition's shard is its server in every datacenter, replica or not. */
  @Override
  public int serverOf(int dc, int partition) {
    return topology.serverId(dc, partition % topology.serversPerDc());
  }

  /** Shard of a key, the same in every datacenter. */
  public int shardOf(String key) {
    return Math.floorMod(Murmur3.hash32(key, 0x9747b28c), topology.serversPerDc());
  }

  @Override
  public int serverFor(int dc, String key) {
    return topology.serverId(dc, shardOf(key));
  }

  /** Position of the key's replica inside each replica group. */
  public int groupPosition(String key) {
    return Math.floorMod(Murmur3.hash32(key, 0x5bd1e995), groupSize);
  }

  /** Replica group of a datacenter (its index modulo f). */
  public int groupOf(int dc) {
    return dc % topology.replicationFactor();
  }

  /** The datacenters of one replica group, in topology order. */
  public int[] group(int g) {
    return groups[g].clone();
  }

  /** The key's f replica datacenters, one per group, in group order. */
  @Override
  public int[] replicaDcs(String key) {
    return partitionDcs(groupPosition(key) * topology.serversPerDc());
  }

  @Override
  public boolean isReplica(int dc, String key) {
    return dc / topology.replicationFactor() == groupPosition(key);
  }

  /** The datacenter of {@code fromDc}'s own replica group that holds {@code key} (RAD). */
  public int replicaInGroupOf(int fromDc, String key) {
    return groups[groupOf(fromDc)][groupPosition(key)];
  }
}
