package org.k2bench.core.topology;

/**
 * A per-key placement from a table ({@code placement: table}; {@link PlacementTable}), e.g.
 * the latency-aware placements {@code k2bench place} computes (BA and N-1C). Each distinct
 * replica set of the table is split over the servers of a datacenter by shard, as with groups:
 * partition {@code set * S + shard}, where a key's shard is the same hash as with groups and the
 * partition's server in every datacenter (replica or home) is that shard's server. A server thus
 * holds the keys of every set that includes its datacenter, on its shard.
 */
public final class TablePlacement implements Placement {
  private static final int SHARD_SEED = 0x9747b28c; // GroupPlacement's: the same shard per key

  private final Topology topology;
  private final PlacementTable table;
  private final int s;

  TablePlacement(Topology topology) {
    this.topology = topology;
    this.table = topology.placementTable();
    this.s = topology.serversPerDc();
  }

  @Override
  public Topology topology() {
    return topology;
  }

  public PlacementTable table() {
    return table;
  }

  @Override
  public int numPartitions() {
    return table.numSets() * s;
  }

  @Override
  public int partitionOf(String key) {
    return table.setOf(key) * s + shardOf(key);
  }

  private int shardOf(String key) {
    return Math.floorMod(Murmur3.hash32(key, SHARD_SEED), s);
  }

  @Override
  public int[] partitionDcs(int partition) {
    return table.set(partition / s);
  }

  @Override
  public int serverOf(int dc, int partition) {
    return topology.serverId(dc, partition % s);
  }

  @Override
  public int serverFor(int dc, String key) {
    return topology.serverId(dc, shardOf(key));
  }

  /** A server holds the keys of several sets (all those including its datacenter), like rings. */
  @Override
  public int partitionOfServer(int serverId) {
    throw new UnsupportedOperationException("with placement: table a server holds the keys of several replica sets");
  }
}
