package org.k2bench.ycsb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.RejectionInversionZipfSampler;
import org.k2bench.core.topology.Placement;

/**
 * The PaRiS paper's choice of keys (§V): a transaction involves {@code partitionsPerOp}
 * partitions, all of them replicated in the client's datacenter ("local-DC") with probability
 * {@code localFraction}, else drawn from all partitions ("multi-DC"); its keys are spread
 * evenly over them, each drawn within its partition by an exact Zipf distribution ("transactions
 * access keys within a partition according to a zipfian distribution"). Partitions are those of
 * the run's placement, and a partition's keys are the keyspace's keys that hash to it.
 */
final class PartitionedKeys {
  private final long[][] idsOf;
  private final KeySpace[] rankings;
  private final int[] all;
  private final int[] local;
  private final int partitionsPerOp;
  private final double localFraction;

  PartitionedKeys(Placement placement, int localDc, long n, double zipf, int partitionsPerOp, double localFraction) {
    int parts = placement.numPartitions();
    List<List<Long>> lists = new ArrayList<>();
    for (int p = 0; p < parts; p++) {
      lists.add(new ArrayList<>());
    }
    for (long id = 0; id < n; id++) {
      lists.get(placement.partitionOf(KeySpace.key(id))).add(id);
    }
    this.idsOf = new long[parts][];
    this.rankings = new KeySpace[parts];
    List<Integer> mine = new ArrayList<>();
    for (int p = 0; p < parts; p++) {
      idsOf[p] = lists.get(p).stream().mapToLong(Long::longValue).toArray();
      rankings[p] = idsOf[p].length == 0 ? null : new KeySpace(idsOf[p].length, zipf);
      for (int d : placement.partitionDcs(p)) {
        if (d == localDc && idsOf[p].length > 0) {
          mine.add(p);
        }
      }
    }
    this.all = java.util.stream.IntStream.range(0, parts).filter(p -> idsOf[p].length > 0).toArray();
    this.local = mine.stream().mapToInt(Integer::intValue).toArray();
    this.partitionsPerOp = partitionsPerOp;
    this.localFraction = localFraction;
  }

  /** Per session: a Zipf sampler per partition it has drawn from. */
  static final class Samplers {
    private final Map<Integer, RejectionInversionZipfSampler> byPartition = new HashMap<>();
  }

  /** {@code count} distinct keys of one transaction. */
  List<String> choose(UniformRandomProvider rng, Samplers samplers, int count) {
    int[] pool = local.length > 0 && rng.nextDouble() < localFraction ? local : all;
    int k = Math.min(partitionsPerOp, pool.length);
    int[] chosen = new int[k];
    int[] copy = pool.clone();
    for (int i = 0; i < k; i++) { // a partial Fisher-Yates shuffle: k distinct partitions
      int j = i + rng.nextInt(copy.length - i);
      int t = copy[i];
      copy[i] = copy[j];
      copy[j] = t;
      chosen[i] = copy[i];
    }
    Set<String> out = new LinkedHashSet<>();
    int attempts = 0;
    for (int i = 0; out.size() < count; i++) {
      int p = chosen[i % k];
      if (++attempts > 100 * count) {
        // The chosen partitions hold fewer distinct keys than asked (a tiny keyspace): take any.
        p = all[rng.nextInt(all.length)];
      }
      RejectionInversionZipfSampler ranks = samplers.byPartition.computeIfAbsent(p, q -> rankings[q].ranks(rng));
      out.add(KeySpace.key(idsOf[p][(int) rankings[p].idOfRank(ranks.sample())]));
    }
    return new ArrayList<>(out);
  }

  /** Partitions replicated in the client's datacenter (tests). */
  int localPartitions() {
    return local.length;
  }
}
