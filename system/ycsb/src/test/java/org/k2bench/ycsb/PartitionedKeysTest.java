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

  /** Where a multi-DC transaction's keys land: its partitions in order, and whether its last key (the write) is local. */
  record Shape(int localPartitions, int remotePartitions, boolean writeLocal) {}

  static Shape shape(Placement p, List<String> txn) {
    Set<Integer> localParts = new HashSet<>();
    Set<Integer> remoteParts = new HashSet<>();
    for (String k : txn) {
      (p.isReplica(0, k) ? localParts : remoteParts).add(p.partitionOf(k));
    }
    return new Shape(localParts.size(), remoteParts.size(), p.isReplica(0, txn.get(txn.size() - 1)));
  }

  /**
   * The authors' generator: a multi-DC transaction reads from local and remote partitions in
   * turn, from a local one, and writes from a local one again, so a one-write transaction
   * writes locally; uniform (the option that keeps the old choice) writes remotely about 60%
   * of the time (6 of OR's 10 partitions are remote).
   */
  @Test
  void aMultiDcTransactionAlternatesLocalAndRemoteAndWritesLocallyFirst() {
    Placement p = fiveDcs();
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(11L);
    PartitionedKeys alternate = new PartitionedKeys(p, 0, 20_000, 0.99, 4, 0.0, PartitionedKeys.MultiDc.ALTERNATE);
    PartitionedKeys uniform = new PartitionedKeys(p, 0, 20_000, 0.99, 4, 0.0, PartitionedKeys.MultiDc.UNIFORM);
    int n = 2_000;
    int uniformRemoteWrites = 0;
    for (int i = 0; i < n; i++) {
      Shape a = shape(p, alternate.choose(rng, new PartitionedKeys.Samplers(), 20, 1));
      assertEquals(new Shape(2, 2, true), a, "two local, two remote partitions, the write local");
      List<String> ten = alternate.choose(rng, new PartitionedKeys.Samplers(), 20, 10);
      assertEquals(20, new HashSet<>(ten).size());
      Shape w = shape(p, ten.subList(10, 20));
      assertEquals(2, w.localPartitions(), "ten writes over the same four partitions, from a local one");
      assertEquals(2, w.remotePartitions());
      Shape u = shape(p, uniform.choose(rng, new PartitionedKeys.Samplers(), 20, 1));
      assertEquals(4, u.localPartitions() + u.remotePartitions());
      uniformRemoteWrites += u.writeLocal() ? 0 : 1;
    }
    double share = uniformRemoteWrites / (double) n;
    assertTrue(share > 0.55 && share < 0.65, "uniform: the write is remote 6 times in 10, got " + share);
  }

  @Test
  void anUnknownMultiDcChoiceIsRefusedByName() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> PartitionedKeys.MultiDc.parse("k2bench.multi_dc_partitions", "random"));
    assertTrue(e.getMessage().startsWith("k2bench.multi_dc_partitions: must be alternate or uniform"), e.getMessage());
  }
}
