package org.k2bench.core.topology;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

/**
 * The datacenters, their RTT matrix, how many servers each holds, the replication factor,
 * the placement scheme ({@link Placement}) and where every server listens. Immutable and validated on construction, so a
 * Topology that exists is consistent.
 *
 * <p>Node ids: server (dc, shard) is {@code dc * serversPerDc + shard}. Clients take ids at
 * or above {@link #firstClientId()}. Ids fit in {@link org.k2bench.core.clock.LamportClock#NODE_BITS}.
 */
public final class Topology {
  private final List<String> dcs;
  private final double[][] rttMs;
  private final int serversPerDc;
  private final int replicationFactor;
  private final List<List<HostPort>> servers;
  private final double intraDcDelayMs;
  private final double jitterMs;
  private final boolean wanEmulation;
  private final Placement.Scheme placement;
  private final int partitions;
  /** With {@link Placement.Scheme#RINGS}: each ring's datacenters, in ring order; else null. */
  private final int[][] rings;
  /** With {@link Placement.Scheme#TABLE}: the table; else null. */
  private final PlacementTable placementTable;
  private final int[][] nearestFirst;

  public Topology(
      List<String> dcs,
      double[][] rttMs,
      int serversPerDc,
      int replicationFactor,
      List<List<HostPort>> servers,
      double intraDcDelayMs,
      double jitterMs) {
    this(dcs, rttMs, serversPerDc, replicationFactor, servers, intraDcDelayMs, jitterMs, true,
        Placement.Scheme.GROUPS, 0);
  }

  /**
   * @param wanEmulation whether the transport delays messages by the matrix (the
   *     embedded emulation); false where the network itself has the latency (real regions,
   *     or tc/netem on a cluster) and the matrix only ranks datacenters by distance
   * @param placement how keys are placed ({@link Placement})
   * @param partitions with {@link Placement.Scheme#PARTITIONS}, their number N (servers_per_dc
   *     must then be N·f/D); 0 with groups
   */
  public Topology(
      List<String> dcs,
      double[][] rttMs,
      int serversPerDc,
      int replicationFactor,
      List<List<HostPort>> servers,
      double intraDcDelayMs,
      double jitterMs,
      boolean wanEmulation,
      Placement.Scheme placement,
      int partitions) {
    this(dcs, rttMs, serversPerDc, replicationFactor, servers, intraDcDelayMs, jitterMs, wanEmulation, placement,
        partitions, null);
  }

  /**
   * @param rings with {@link Placement.Scheme#RINGS}, the datacenters of each ring (indexes,
   *     every datacenter in exactly one ring; f must be the number of rings); null otherwise
   */
  public Topology(
      List<String> dcs,
      double[][] rttMs,
      int serversPerDc,
      int replicationFactor,
      List<List<HostPort>> servers,
      double intraDcDelayMs,
      double jitterMs,
      boolean wanEmulation,
      Placement.Scheme placement,
      int partitions,
      int[][] rings) {
    this(dcs, rttMs, serversPerDc, replicationFactor, servers, intraDcDelayMs, jitterMs, wanEmulation, placement,
        partitions, rings, null);
  }

  /** @param placementTable with {@link Placement.Scheme#TABLE}, the keys' replica sets; null otherwise */
  public Topology(
      List<String> dcs,
      double[][] rttMs,
      int serversPerDc,
      int replicationFactor,
      List<List<HostPort>> servers,
      double intraDcDelayMs,
      double jitterMs,
      boolean wanEmulation,
      Placement.Scheme placement,
      int partitions,
      int[][] rings,
      PlacementTable placementTable) {
    this.placementTable = placementTable;
    this.rings = rings == null ? null : java.util.Arrays.stream(rings).map(int[]::clone).toArray(int[][]::new);
    this.wanEmulation = wanEmulation;
    this.placement = java.util.Objects.requireNonNull(placement, "placement");
    this.partitions = partitions;
    this.dcs = List.copyOf(dcs);
    this.rttMs = new double[dcs.size()][];
    for (int i = 0; i < dcs.size(); i++) {
      this.rttMs[i] = rttMs[i].clone();
    }
    this.serversPerDc = serversPerDc;
    this.replicationFactor = replicationFactor;
    List<List<HostPort>> copy = new ArrayList<>();
    for (List<HostPort> dc : servers) {
      copy.add(List.copyOf(dc));
    }
    this.servers = Collections.unmodifiableList(copy);
    this.intraDcDelayMs = intraDcDelayMs;
    this.jitterMs = jitterMs;
    validate();
    this.nearestFirst = new int[dcs.size()][];
    for (int d = 0; d < dcs.size(); d++) {
      final int from = d;
      this.nearestFirst[d] =
          java.util.stream.IntStream.range(0, dcs.size())
              .boxed()
              .sorted(Comparator.<Integer>comparingDouble(to -> this.rttMs[from][to])
                  .thenComparingInt(to -> to))
              .mapToInt(Integer::intValue)
              .toArray();
    }
  }

  private void validate() {
    int d = dcs.size();
    if (d == 0) {
      throw new ConfigException("datacenters", "empty; list at least one datacenter name");
    }
    if (new java.util.HashSet<>(dcs).size() != d) {
      throw new ConfigException("datacenters", "names must be unique: " + dcs);
    }
    if (serversPerDc < 1) {
      throw new ConfigException("servers_per_dc", "must be at least 1, got " + serversPerDc);
    }
    if (replicationFactor < 1 || replicationFactor > d) {
      throw new ConfigException(
          "replication_factor", "must be between 1 and the number of datacenters (" + d + "), got "
              + replicationFactor);
    }
    validateRings(d);
    if (placement == Placement.Scheme.TABLE && placementTable == null) {
      throw new ConfigException("placement_table", "missing; placement: table needs a table file (k2bench place "
          + "writes one)");
    }
    if (placementTable != null && placementTable.numSets() > 0 && placementTable.set(0).length != replicationFactor) {
      throw new ConfigException("placement_table", placementTable.file() + " places " + placementTable.set(0).length
          + " replicas per key, the replication_factor is " + replicationFactor);
    }
    if (placement != Placement.Scheme.TABLE && placementTable != null) {
      throw new ConfigException("placement_table", "applies only to placement: table; remove it or set placement: "
          + "table");
    }
    if (placement == Placement.Scheme.GROUPS && d % replicationFactor != 0) {
      throw new ConfigException(
          "replication_factor",
          replicationFactor + " does not divide the " + d
              + " datacenters; replica groups need D/f datacenters each (or use placement: partitions)");
    }
    if (placement == Placement.Scheme.PARTITIONS) {
      if (partitions < 1) {
        throw new ConfigException("partitions", "must be at least 1 with placement: partitions, got " + partitions);
      }
      if ((long) partitions * replicationFactor % d != 0) {
        throw new ConfigException("partitions", partitions + " partitions x replication_factor " + replicationFactor
            + " replicas do not spread evenly over " + d + " datacenters; make partitions x replication_factor a "
            + "multiple of " + d);
      }
      long each = (long) partitions * replicationFactor / d;
      if (serversPerDc != each) {
        throw new ConfigException("servers_per_dc", "must be " + each + " with placement: partitions ("
            + partitions + " partitions x " + replicationFactor + " replicas / " + d
            + " datacenters: one server per partition replica), got " + serversPerDc);
      }
    } else if (partitions != 0) {
      throw new ConfigException("partitions", "applies only to placement: partitions; remove it or set placement");
    }
    long nodes = (long) d * serversPerDc;
    if (nodes >= firstClientId()) {
      throw new ConfigException("servers_per_dc", "too many servers (" + nodes + "); at most "
          + (firstClientId() - 1));
    }
    for (int a = 0; a < d; a++) {
      for (int b = 0; b < d; b++) {
        double v = rttMs[a][b];
        String field = "rtt_ms." + dcs.get(a) + "." + dcs.get(b);
        if (Double.isNaN(v)) {
          throw new ConfigException(field, "missing; give the round-trip time between "
              + dcs.get(a) + " and " + dcs.get(b) + " in ms");
        }
        if (v < 0 || Double.isInfinite(v)) {
          throw new ConfigException(field, "must be a finite number of ms >= 0, got " + v);
        }
        if (a == b && v != 0) {
          throw new ConfigException(field, "a datacenter's RTT to itself must be 0 "
              + "(use intra_dc_delay_ms for delay inside a datacenter)");
        }
        if (rttMs[b][a] != v) {
          throw new ConfigException(field, "asymmetric: " + v + " but rtt_ms." + dcs.get(b) + "."
              + dcs.get(a) + " is " + rttMs[b][a] + "; the matrix must be symmetric");
        }
      }
    }
    if (servers.size() != d) {
      throw new ConfigException("servers", "has " + servers.size() + " datacenters, expected " + d);
    }
    java.util.Map<HostPort, String> seen = new java.util.HashMap<>();
    for (int a = 0; a < d; a++) {
      if (servers.get(a).size() != serversPerDc) {
        throw new ConfigException("servers." + dcs.get(a), "lists " + servers.get(a).size()
            + " addresses but servers_per_dc is " + serversPerDc);
      }
      for (int s = 0; s < serversPerDc; s++) {
        String field = "servers." + dcs.get(a) + "[" + s + "]";
        String prev = seen.put(servers.get(a).get(s), field);
        if (prev != null) {
          throw new ConfigException(field, "address " + servers.get(a).get(s)
              + " is already used by " + prev);
        }
      }
    }
    if (intraDcDelayMs < 0) {
      throw new ConfigException("intra_dc_delay_ms", "must be >= 0, got " + intraDcDelayMs);
    }
    if (jitterMs < 0) {
      throw new ConfigException("jitter_ms", "must be >= 0, got " + jitterMs);
    }
  }

  private void validateRings(int d) {
    if (placement != Placement.Scheme.RINGS) {
      if (rings != null) {
        throw new ConfigException("rings", "applies only to placement: rings; remove it or set placement: rings");
      }
      return;
    }
    if (rings == null || rings.length == 0) {
      throw new ConfigException("rings", "missing; placement: rings needs the rings, e.g. rings: [[VA, CA, LDN], "
          + "[TYO, SG], [SP]]");
    }
    int[] ringOf = new int[d];
    java.util.Arrays.fill(ringOf, -1);
    for (int r = 0; r < rings.length; r++) {
      if (rings[r].length == 0) {
        throw new ConfigException("rings[" + r + "]", "empty; a ring needs at least one datacenter");
      }
      for (int dc : rings[r]) {
        if (ringOf[dc] >= 0) {
          throw new ConfigException("rings[" + r + "]", dcs.get(dc) + " is already in rings[" + ringOf[dc]
              + "]; every datacenter belongs to exactly one ring");
        }
        ringOf[dc] = r;
      }
    }
    for (int dc = 0; dc < d; dc++) {
      if (ringOf[dc] < 0) {
        throw new ConfigException("rings", dcs.get(dc) + " is in no ring; every datacenter belongs to exactly one");
      }
    }
    if (replicationFactor != rings.length) {
      throw new ConfigException("replication_factor", "must be the number of rings (" + rings.length
          + ": one full replica per ring) with placement: rings, got " + replicationFactor);
    }
  }

  public List<String> dcs() {
    return dcs;
  }

  public int numDcs() {
    return dcs.size();
  }

  public String dcName(int dc) {
    return dcs.get(dc);
  }

  /** Index of a datacenter by name; a {@link ConfigException} on {@code field} if unknown. */
  public int dcIndex(String field, String name) {
    int i = dcs.indexOf(name);
    if (i < 0) {
      throw new ConfigException(field, "unknown datacenter '" + name + "'; known: " + dcs);
    }
    return i;
  }

  public double rttMs(int a, int b) {
    return rttMs[a][b];
  }

  /** A copy of the RTT matrix in ms. */
  public double[][] rttMatrixMs() {
    double[][] m = new double[rttMs.length][];
    for (int i = 0; i < m.length; i++) {
      m[i] = rttMs[i].clone();
    }
    return m;
  }

  /** Datacenters ordered by RTT from {@code dc}, itself first. */
  public int[] dcsByDistanceFrom(int dc) {
    return nearestFirst[dc].clone();
  }

  public int serversPerDc() {
    return serversPerDc;
  }

  public int replicationFactor() {
    return replicationFactor;
  }

  /** The placement scheme ({@link Placement#of} builds it). */
  public Placement.Scheme placementScheme() {
    return placement;
  }

  /** With placement: rings, each ring's datacenters (a copy); null with another placement. */
  public int[][] rings() {
    return rings == null ? null : java.util.Arrays.stream(rings).map(int[]::clone).toArray(int[][]::new);
  }

  /** The number of partitions with placement: partitions; 0 with groups (their count follows from D, f and S). */
  public int partitions() {
    return partitions;
  }

  /** With {@link Placement.Scheme#TABLE}: the keys' replica sets; else null. */
  public PlacementTable placementTable() {
    return placementTable;
  }

  public double intraDcDelayMs() {
    return intraDcDelayMs;
  }

  public double jitterMs() {
    return jitterMs;
  }

  /** Whether the transport emulates the WAN (see the constructor). */
  public boolean wanEmulation() {
    return wanEmulation;
  }

  public int numServers() {
    return dcs.size() * serversPerDc;
  }

  public int serverId(int dc, int shard) {
    return dc * serversPerDc + shard;
  }

  public boolean isServer(int nodeId) {
    return nodeId >= 0 && nodeId < numServers();
  }

  public int dcOfServer(int nodeId) {
    return nodeId / serversPerDc;
  }

  public int shardOfServer(int nodeId) {
    return nodeId % serversPerDc;
  }

  public HostPort address(int serverId) {
    return servers.get(dcOfServer(serverId)).get(shardOfServer(serverId));
  }

  /** Every server's address, per datacenter. */
  public List<List<HostPort>> servers() {
    return servers;
  }

  /** Field path of a server's address in the topology file, for error messages. */
  public String addressField(int serverId) {
    return "servers." + dcName(dcOfServer(serverId)) + "[" + shardOfServer(serverId) + "]";
  }

  /** The lowest node id a client may use; all client ids lie in [firstClientId, 2^16). */
  public static int firstClientId() {
    return 4096;
  }

  /** The same topology with every RTT multiplied by {@code factor} (tests scale the paper's matrix down). */
  public Topology withRttScale(double factor) {
    double[][] m = rttMatrixMs();
    for (double[] row : m) {
      for (int i = 0; i < row.length; i++) {
        row[i] *= factor;
      }
    }
    return new Topology(dcs, m, serversPerDc, replicationFactor, servers, intraDcDelayMs, jitterMs, wanEmulation,
        placement, partitions, rings, placementTable);
  }

  /** The same topology with servers on {@code host} at consecutive ports from {@code basePort}. */
  public Topology withLocalPorts(String host, int basePort) {
    return withServers(localAddresses(dcs.size(), serversPerDc, host, basePort));
  }

  public Topology withJitterMs(double jitter) {
    return new Topology(dcs, rttMs, serversPerDc, replicationFactor, servers, intraDcDelayMs, jitter, wanEmulation,
        placement, partitions, rings, placementTable);
  }

  /** The same topology with servers at these addresses. */
  public Topology withServers(List<List<HostPort>> addresses) {
    return new Topology(dcs, rttMs, serversPerDc, replicationFactor, addresses, intraDcDelayMs, jitterMs,
        wanEmulation, placement, partitions, rings, placementTable);
  }

  public Topology withWanEmulation(boolean on) {
    return new Topology(dcs, rttMs, serversPerDc, replicationFactor, servers, intraDcDelayMs, jitterMs, on,
        placement, partitions, rings, placementTable);
  }

  /**
   * The same datacenters with {@code partitions} hash partitions, each on f of them
   * ({@link PartitionPlacement}), one server per partition replica: servers_per_dc becomes
   * partitions x f / D, on consecutive local ports from {@code basePort} of {@code host}.
   */
  public Topology withPartitions(int partitions, String host, int basePort) {
    int each = (int) Math.max(1, (long) partitions * replicationFactor / dcs.size());
    return new Topology(dcs, rttMs, each, replicationFactor, localAddresses(dcs.size(), each, host, basePort),
        intraDcDelayMs, jitterMs, wanEmulation, Placement.Scheme.PARTITIONS, partitions);
  }

  public static List<List<HostPort>> localAddresses(int numDcs, int serversPerDc, String host, int basePort) {
    List<List<HostPort>> out = new ArrayList<>();
    for (int d = 0; d < numDcs; d++) {
      List<HostPort> dc = new ArrayList<>();
      for (int s = 0; s < serversPerDc; s++) {
        dc.add(new HostPort(host, basePort + d * serversPerDc + s));
      }
      out.add(dc);
    }
    return out;
  }

  @Override
  public String toString() {
    return "Topology{dcs=" + dcs + ", S=" + serversPerDc + ", f=" + replicationFactor
        + (placement == Placement.Scheme.PARTITIONS ? ", partitions=" + partitions : "")
        + (rings != null ? ", rings=" + Arrays.deepToString(rings) : "")
        + ", rtt=" + Arrays.deepToString(rttMs) + (wanEmulation ? "" : ", no WAN emulation") + "}";
  }
}
