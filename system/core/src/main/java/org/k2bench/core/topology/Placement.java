package org.k2bench.core.topology;

import java.util.Locale;

/**
 * Where keys live: pure functions of (key, topology), the same for every system so that
 * systems are compared on the same data layout. The topology file chooses the scheme
 * ({@code placement}); {@link #of} builds it.
 *
 * <p>Every scheme splits the keys into {@link #numPartitions} partitions, each replicated at
 * {@code replication_factor} datacenters ({@link #partitionDcs}, replica order: the
 * first is the one that loads the partition). In a datacenter a partition has one server
 * ({@link #serverOf}); in a datacenter that holds no replica of it, that server is the
 * partition's <em>home</em> there, where a system may cache it or coordinate for it.
 */
public interface Placement {
  /** The placement schemes a topology file can name. */
  enum Scheme {
    /** Replica groups by datacenter index modulo f (the K2 paper; {@link GroupPlacement}). */
    GROUPS,
    /** N hash partitions, each on f datacenters (the PaRiS paper; {@link PartitionPlacement}). */
    PARTITIONS,
    /** Rings of nearby datacenters, each one full replica (the Karma paper; {@link RingPlacement}). */
    RINGS,
    /** Per-key replica sets from a file, e.g. latency-aware BA / N-1C ({@link TablePlacement}). */
    TABLE;

    /** The name in topology files and the manifest. */
    public String fileName() {
      return name().toLowerCase(Locale.ROOT);
    }

    /** The scheme named {@code name} in a topology file; a {@link ConfigException} on {@code field} if none. */
    public static Scheme parse(String field, String name) {
      for (Scheme s : values()) {
        if (s.fileName().equals(name)) {
          return s;
        }
      }
      throw new ConfigException(field, "must be groups, partitions, rings or table, got '" + name + "'");
    }
  }

  /** The placement a topology's {@code placement} field names. */
  static Placement of(Topology topology) {
    return switch (topology.placementScheme()) {
      case GROUPS -> new GroupPlacement(topology);
      case PARTITIONS -> new PartitionPlacement(topology);
      case RINGS -> new RingPlacement(topology);
      case TABLE -> new TablePlacement(topology);
    };
  }

  Topology topology();

  int numPartitions();

  /** The partition of a key, in [0, numPartitions). */
  int partitionOf(String key);

  /** The datacenters holding a partition's f replicas, in replica order (a fresh array). */
  int[] partitionDcs(int partition);

  /** The server of a partition in datacenter {@code dc}: its replica there, or its home. */
  int serverOf(int dc, int partition);

  /**
   * The partition whose replica server {@code serverId} holds: with groups and partitions every
   * server holds exactly one (groups: its datacenter's group position and its shard); with
   * rings and tables a server holds several, and this throws {@link UnsupportedOperationException}.
   */
  int partitionOfServer(int serverId);

  /** The server of {@code key} in datacenter {@code dc} (its replica there, or its home). */
  default int serverFor(int dc, String key) {
    return serverOf(dc, partitionOf(key));
  }

  /** The key's f replica datacenters, in replica order. */
  default int[] replicaDcs(String key) {
    return partitionDcs(partitionOf(key));
  }

  default boolean isReplica(int dc, String key) {
    for (int r : replicaDcs(key)) {
      if (r == dc) {
        return true;
      }
    }
    return false;
  }

  /** The replica datacenter of {@code key} that is nearest to {@code fromDc} by RTT (itself if a replica). */
  default int nearestReplica(int fromDc, String key) {
    return replicasByDistance(fromDc, key)[0];
  }

  /** The replica datacenters of {@code key}, nearest to {@code fromDc} first (fail-over order). */
  default int[] replicasByDistance(int fromDc, String key) {
    int[] replicas = replicaDcs(key);
    int[] out = new int[replicas.length];
    int n = 0;
    for (int dc : topology().dcsByDistanceFrom(fromDc)) {
      for (int r : replicas) {
        if (r == dc) {
          out[n++] = dc;
        }
      }
    }
    if (n != out.length) {
      throw new IllegalStateException("key " + key + " has " + n + " distinct replicas, not " + out.length);
    }
    return out;
  }

  /**
   * The datacenters that hold the first replica of some partition, in topology order: where
   * loaders run so that every key is loaded by a local write.
   */
  default int[] firstReplicaDcs() {
    boolean[] first = new boolean[topology().numDcs()];
    for (int p = 0; p < numPartitions(); p++) {
      first[partitionDcs(p)[0]] = true;
    }
    return java.util.stream.IntStream.range(0, first.length).filter(dc -> first[dc]).toArray();
  }
}
