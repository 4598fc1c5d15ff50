package org.k2bench.core.topology;

/**
 * The Karma paper's placement ({@code placement: rings}; its §1, §4.1.1 and §5 "Clustering
 * DCs into rings"): the datacenters are clustered into rings of nearby datacenters, possibly
 * of unequal sizes (the paper: US and Europe, Asia and Australia, Brazil), and each ring holds
 * one full replica of the keys, spread over its datacenters. So every key has one replica per
 * ring: f = the number of rings.
 *
 * <p>Inside a ring of k datacenters with S servers each, a key hashes to one of the ring's
 * k·S server slots (datacenter {@code slot / S} of the ring, shard {@code slot mod S}). The
 * paper places keys in a ring by consistent hashing; ring membership never changes during a
 * run here, so hashing to a fixed slot gives the same layout without virtual nodes. To say
 * "the same replicas" with one number, keys hash into N = S·lcm(ring sizes) partitions and
 * partition p sits at slot {@code p mod (k·S)} of each ring; every slot of a ring then holds
 * the same number of partitions, and a key's shard is {@code p mod S} in every datacenter
 * (its replica there, or its home where a datacenter caches it).
 */
public final class RingPlacement implements Placement {
  private static final int SEED = 0x5bd1e995;

  private final Topology topology;
  private final int[][] rings;
  private final int[] ringOfDc;
  private final int partitions;

  RingPlacement(Topology topology) {
    this.topology = topology;
    this.rings = topology.rings();
    if (rings == null) {
      throw new ConfigException("rings", "missing; placement: rings needs the rings");
    }
    this.ringOfDc = new int[topology.numDcs()];
    long lcm = 1;
    for (int r = 0; r < rings.length; r++) {
      for (int dc : rings[r]) {
        ringOfDc[dc] = r;
      }
      lcm = lcm / gcd(lcm, rings[r].length) * rings[r].length;
    }
    long n = lcm * topology.serversPerDc();
    if (n > Integer.MAX_VALUE) {
      throw new ConfigException("rings", "ring sizes whose least common multiple (" + lcm + ") is too large");
    }
    this.partitions = (int) n;
  }

  private static long gcd(long a, long b) {
    return b == 0 ? a : gcd(b, a % b);
  }

  /** The ring placement of a topology whose placement is rings; a {@link ConfigException} otherwise. */
  public static RingPlacement of(Topology topology, String who) {
    if (topology.placementScheme() != Scheme.RINGS) {
      throw new ConfigException("placement", who + " needs rings (placement: rings), but the topology's placement is "
          + topology.placementScheme().fileName() + "; use a topology with placement: rings");
    }
    return new RingPlacement(topology);
  }

  @Override
  public Topology topology() {
    return topology;
  }

  public int numRings() {
    return rings.length;
  }

  /** The ring {@code dc} belongs to. */
  public int ringOf(int dc) {
    return ringOfDc[dc];
  }

  /** The datacenters of ring {@code ring} (a copy). */
  public int[] ringDcs(int ring) {
    return rings[ring].clone();
  }

  /** The datacenter of ring {@code ring} holding {@code key}. */
  public int replicaInRing(int ring, String key) {
    return dcInRing(ring, partitionOf(key));
  }

  /** The server of ring {@code ring} holding {@code key}. */
  public int serverInRing(int ring, String key) {
    int p = partitionOf(key);
    return serverOf(dcInRing(ring, p), p);
  }

  private int dcInRing(int ring, int partition) {
    int[] dcs = rings[ring];
    int s = topology.serversPerDc();
    return dcs[(partition % (dcs.length * s)) / s];
  }

  @Override
  public int numPartitions() {
    return partitions;
  }

  @Override
  public int partitionOf(String key) {
    return Math.floorMod(Murmur3.hash32(key, SEED), partitions);
  }

  /** One datacenter per ring, in ring order. */
  @Override
  public int[] partitionDcs(int partition) {
    int[] out = new int[rings.length];
    for (int r = 0; r < rings.length; r++) {
      out[r] = dcInRing(r, partition);
    }
    return out;
  }

  @Override
  public int serverOf(int dc, int partition) {
    return topology.serverId(dc, partition % topology.serversPerDc());
  }

  @Override
  public int partitionOfServer(int serverId) {
    throw new UnsupportedOperationException("with placement: rings a server holds several partitions");
  }

  @Override
  public boolean isReplica(int dc, String key) {
    return replicaInRing(ringOfDc[dc], key) == dc;
  }
}
