package org.k2bench.core.topology;

import java.nio.charset.StandardCharsets;

/**
 * Replica placement as pure functions of (key, topology), identical for every
 * system so they are compared on the same data layout.
 *
 * <p>The D datacenters form f replica groups by index modulo f (f = 2 on the paper's list:
 * {VA, SP, TYO} and {CA, LDN, SG}). A key hashes to one position in [0, D/f); its replica
 * datacenters are the datacenters at that position in every group, so each key has exactly
 * f replicas, one per group, and datacenters at the same position ("equivalent
 * datacenters", RAD) hold the same keys. Within a datacenter a key lives on shard
 * {@code hash mod S}; the server of that shard in another datacenter is its equivalent
 * server.
 */
public final class Placement {
  private final Topology topology;
  private final int groupSize;
  private final int[][] groups;

  public Placement(Topology topology) {
    this.topology = topology;
    int f = topology.replicationFactor();
    this.groupSize = topology.numDcs() / f;
    this.groups = new int[f][groupSize];
    for (int dc = 0; dc < topology.numDcs(); dc++) {
      groups[dc % f][dc / f] = dc;
    }
  }

  public Topology topology() {
    return topology;
  }

  /** Shard of a key, the same in every datacenter. */
  public int shardOf(String key) {
    return Math.floorMod(hash(key, 0x9747b28c), topology.serversPerDc());
  }

  /** The server holding {@code key} in datacenter {@code dc}. */
  public int serverFor(int dc, String key) {
    return topology.serverId(dc, shardOf(key));
  }

  /** Position of the key's replica inside each replica group. */
  public int groupPosition(String key) {
    return Math.floorMod(hash(key, 0x5bd1e995), groupSize);
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
  public int[] replicaDcs(String key) {
    int pos = groupPosition(key);
    int[] out = new int[groups.length];
    for (int g = 0; g < groups.length; g++) {
      out[g] = groups[g][pos];
    }
    return out;
  }

  public boolean isReplica(int dc, String key) {
    return dc / topology.replicationFactor() == groupPosition(key);
  }

  /** The replica datacenter of {@code key} that is nearest to {@code fromDc} by RTT (itself if a replica). */
  public int nearestReplica(int fromDc, String key) {
    return replicasByDistance(fromDc, key)[0];
  }

  /** The replica datacenters of {@code key}, nearest to {@code fromDc} first (fail-over order). */
  public int[] replicasByDistance(int fromDc, String key) {
    int pos = groupPosition(key);
    int[] out = new int[topology.replicationFactor()];
    int n = 0;
    for (int dc : topology.dcsByDistanceFrom(fromDc)) {
      if (dc / topology.replicationFactor() == pos) {
        out[n++] = dc;
      }
    }
    if (n != out.length) {
      throw new IllegalStateException("key " + key + " has " + n + " replicas, not " + out.length);
    }
    return out;
  }

  /** The datacenter of {@code fromDc}'s own replica group that holds {@code key} (RAD). */
  public int replicaInGroupOf(int fromDc, String key) {
    return groups[groupOf(fromDc)][groupPosition(key)];
  }

  /** MurmurHash3 x86_32 of the key's UTF-8 bytes; fixed so placement is stable across runs and JVMs. */
  static int hash(String key, int seed) {
    byte[] data = key.getBytes(StandardCharsets.UTF_8);
    int h = seed;
    int n = data.length / 4;
    for (int i = 0; i < n; i++) {
      int k = (data[4 * i] & 0xff) | (data[4 * i + 1] & 0xff) << 8
          | (data[4 * i + 2] & 0xff) << 16 | (data[4 * i + 3] & 0xff) << 24;
      k *= 0xcc9e2d51;
      k = Integer.rotateLeft(k, 15);
      k *= 0x1b873593;
      h ^= k;
      h = Integer.rotateLeft(h, 13);
      h = h * 5 + 0xe6546b64;
    }
    int tail = n * 4;
    int rest = data.length & 3;
    if (rest > 0) {
      int k = 0;
      for (int i = rest - 1; i >= 0; i--) {
        k = (k << 8) | (data[tail + i] & 0xff);
      }
      k *= 0xcc9e2d51;
      k = Integer.rotateLeft(k, 15);
      k *= 0x1b873593;
      h ^= k;
    }
    h ^= data.length;
    h ^= h >>> 16;
    h *= 0x85ebca6b;
    h ^= h >>> 13;
    h *= 0xc2b2ae35;
    h ^= h >>> 16;
    return h;
  }
}
