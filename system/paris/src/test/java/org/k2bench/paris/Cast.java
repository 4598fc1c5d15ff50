package org.k2bench.paris;

import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.Placement;

/**
 * Who takes part in the PaRiS tests, on the K2 paper's six datacenters: a key replicated at
 * TYO and SG ({@code far}: neither the writer nor the reader has a replica of it), a key
 * replicated at VA and CA ({@code near}: both have one), on different partitions, a writer in
 * CA and a reader in VA.
 */
record Cast(String far, String near, KvClient writer, KvClient reader) {
  static Cast of(LocalCluster c, String farName, String nearName) {
    List<String> used = new ArrayList<>();
    String far = Clusters.key(c.placement(), farName, -1, new int[] {TYO, SG}, used);
    String near = Clusters.key(c.placement(), nearName, -1, new int[] {VA, CA}, used);
    return new Cast(far, near, c.client(CA), c.client(VA));
  }

  /**
   * A key replicated at TYO and SG (a far one) whose preferred replica from {@code dc} is
   * {@code preferred} (ParisServer#targets: replica (dc + partition) mod f).
   */
  static String farPreferring(Placement placement, String name, int dc, int preferred, List<String> used) {
    return Clusters.key(name, k -> {
      int[] dcs = placement.replicaDcs(k);
      return Arrays.equals(dcs, new int[] {TYO, SG})
          && dcs[Math.floorMod(dc + placement.partitionOf(k), dcs.length)] == preferred;
    }, used);
  }

  /** The writer writes both keys in one transaction; returns once the reader sees both values. */
  Cast seeded(String farValue, String nearValue) {
    writer.writeTxn(Map.of(far, row(farValue), near, row(nearValue)));
    Clusters.awaitValue(reader, far, farValue, 10_000);
    Clusters.awaitValue(reader, near, nearValue, 10_000);
    return this;
  }
}
