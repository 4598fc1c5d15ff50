package org.k2bench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;
import org.junit.jupiter.api.Test;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;

/** The PaRiS paper's key choice: n partitions per transaction, local-DC or multi-DC, Zipf within a partition. */
class PartitionedKeysTest {
  /** Five datacenters, ten partitions on two consecutive ones each: four per datacenter. */
  static Placement fiveDcs() {
    double[][] rtt = new double[5][5];
    for (int a = 0; a < 5; a++) {
      for (int b = 0; b < 5; b++) {
        rtt[a][b] = a == b ? 0 : 100;
      }
    }
    return Placement.of(new Topology(List.of("OR", "NV", "IR", "MU", "SY"), rtt, 4, 2,
        Topology.localAddresses(5, 4, "127.0.0.1", 7000), 0, 0, true, Placement.Scheme.PARTITIONS, 10));
  }

  @Test
  void aTransactionSpreadsOverItsPartitionsLocalOrNot() {
    Placement p = fiveDcs();
    PartitionedKeys keys = new PartitionedKeys(p, 0, 20_000, 0.99, 4, 0.95);
    assertEquals(4, keys.localPartitions(), "OR holds 4 of the 10 partitions");
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(7L);
    PartitionedKeys.Samplers samplers = new PartitionedKeys.Samplers();
    int n = 4_000;
    int local = 0;
    Map<String, Integer> hits = new HashMap<>();
    for (int i = 0; i < n; i++) {
      List<String> txn = keys.choose(rng, samplers, 20);
      assertEquals(20, new HashSet<>(txn).size(), "20 distinct keys");
      Set<Integer> parts = new HashSet<>();
      boolean allLocal = true;
      for (String k : txn) {
        parts.add(p.partitionOf(k));
        allLocal &= p.isReplica(0, k);
        hits.merge(k, 1, Integer::sum);
      }
      assertEquals(4, parts.size(), "exactly 4 partitions: " + parts);
      local += allLocal ? 1 : 0;
    }
    // 95% local-DC transactions, plus the multi-DC ones that happen to draw only local partitions.
    double share = local / (double) n;
    assertTrue(share > 0.94 && share < 0.97, "local-DC share " + share);
    int hottest = hits.values().stream().mapToInt(Integer::intValue).max().orElse(0);
    assertTrue(hottest > 20.0 * n * 20 / 20_000, "Zipf 0.99 within a partition: the hottest key is far above the mean ("
        + hottest + ")");
  }
}
