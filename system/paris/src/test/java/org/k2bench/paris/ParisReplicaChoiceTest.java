package org.k2bench.paris;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.SystemOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;

/**
 * Which remote replica a datacenter reads a partition from: by default the datacenter's
 * preferred one, round-robin over datacenters (the PaRiS paper's evaluation, §V), even when
 * the other replica is nearer; with nearest_replica, the nearest. From VA, of a partition at
 * TYO (162 ms) and SG (243 ms), keys whose preferred replica from VA is SG.
 */
class ParisReplicaChoiceTest {
  static final int READS = 10;

  /** The slices TYO and SG served for VA's reads of keys whose preferred replica from VA is SG. */
  static long[] slicesServed(boolean nearest) {
    ParisSystem system = new ParisSystem();
    ServerOptions options = ServerOptions.defaults().withSystemOptions(
        SystemOptions.parse(system, Map.of("nearest_replica", Boolean.toString(nearest)), "server.options.paris."));
    try (LocalCluster c = Clusters.start(system, options)) {
      List<String> used = new ArrayList<>();
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < READS; i++) {
        keys.add(Clusters.key("sgFirst" + i, k -> {
          int[] dcs = c.placement().replicaDcs(k);
          return Arrays.equals(dcs, new int[] {TYO, SG})
              && dcs[Math.floorMod(VA + c.placement().partitionOf(k), dcs.length)] == SG;
        }, used));
      }
      KvClient reader = c.client(VA);
      long tyo = c.stat(TYO, "slices_read");
      long sg = c.stat(SG, "slices_read");
      for (String k : keys) {
        assertEquals(1, reader.readTxn(List.of(k)).rows().size());
      }
      return new long[] {c.stat(TYO, "slices_read") - tyo, c.stat(SG, "slices_read") - sg};
    }
  }

  @Test
  void readsGoToThePreferredReplicaEvenWhenTheOtherIsNearer() {
    assertEquals(List.of(0L, (long) READS), Arrays.stream(slicesServed(false)).boxed().toList());
  }

  @Test
  void withNearestReplicaReadsGoToTheNearestOne() {
    assertEquals(List.of((long) READS, 0L), Arrays.stream(slicesServed(true)).boxed().toList());
  }
}
