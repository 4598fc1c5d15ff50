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
 * {@code localFraction}, else some remote ("multi-DC"); its keys are spread evenly over them,
 * each drawn within its partition by an exact Zipf distribution ("transactions access keys
 * within a partition according to a zipfian distribution"). Partitions are those of the run's
 * placement, and a partition's keys are the keyspace's keys that hash to it.
 *
 * <p>The paper says only "A transaction can target only partitions in the local DC, or can
 * touch random partitions in remote DCs" (§V-A). Its authors' generator (epfl-labos/paris,
 * experiment7) makes a multi-DC transaction alternate local and remote partitions, starting
 * with a local one, for its reads and, separately, for its writes: a transaction with one
 * write writes locally. {@link MultiDc#ALTERNATE} does that (the default); {@link
 * MultiDc#UNIFORM} draws a multi-DC transaction's partitions from all of them and spreads its
 * keys, writes included, over them in turn, so its write is remote most of the time.
 */
final class PartitionedKeys {
  /** How a multi-DC transaction picks its partitions ({@code k2bench.multi_dc_partitions}). */
  enum MultiDc {
    ALTERNATE, UNIFORM;

    static MultiDc parse(String field, String value) {
      for (MultiDc m : values()) {
        if (m.name().toLowerCase(java.util.Locale.ROOT).equals(value.trim())) { // as the experiment file's
          return m;
        }
      }
      throw new IllegalArgumentException(field + ": must be alternate or uniform, got '" + value + "'");
    }
  }

  private final long[][] idsOf;
  private final KeySpace[] rankings;
  private final int[] all;
  private final int[] local;
  private final int[] remote;
  private final int partitionsPerOp;
  private final double localFraction;
  private final MultiDc multiDc;

  PartitionedKeys(Placement placement, int localDc, long n, double zipf, int partitionsPerOp, double localFraction) {
    this(placement, localDc, n, zipf, partitionsPerOp, localFraction, MultiDc.ALTERNATE);
  }

  PartitionedKeys(Placement placement, int localDc, long n, double zipf, int partitionsPerOp, double localFraction,
      MultiDc multiDc) {
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
    this.remote = java.util.Arrays.stream(all).filter(p -> !mine.contains(p)).toArray();
    this.partitionsPerOp = partitionsPerOp;
    this.localFraction = localFraction;
    this.multiDc = multiDc;
  }

  /** Per session: a Zipf sampler per partition it has drawn from. */
  static final class Samplers {
    private final Map<Integer, RejectionInversionZipfSampler> byPartition = new HashMap<>();
  }

  /** {@code count} distinct keys of one transaction; none of them written. */
  List<String> choose(UniformRandomProvider rng, Samplers samplers, int count) {
    return choose(rng, samplers, count, 0);
  }

  /**
   * {@code count} distinct keys of one transaction, the last {@code writes} of them the ones it
   * writes: the reads spread over its partitions in turn from the first, and (with {@link
   * MultiDc#ALTERNATE}) the writes again from the first, a local one.
   */
  List<String> choose(UniformRandomProvider rng, Samplers samplers, int count, int writes) {
    boolean localDc = local.length > 0 && rng.nextDouble() < localFraction;
    int[] chosen;
    if (localDc || remote.length == 0) {
      chosen = draw(rng, local.length > 0 ? local : all, Math.min(partitionsPerOp, local.length > 0 ? local.length
          : all.length));
    } else if (multiDc == MultiDc.UNIFORM || local.length == 0) {
      chosen = draw(rng, all, Math.min(partitionsPerOp, all.length));
    } else {
      chosen = alternate(rng, Math.min(partitionsPerOp, all.length));
    }
    Set<String> out = new LinkedHashSet<>();
    if (multiDc == MultiDc.UNIFORM) {
      fill(rng, samplers, chosen, out, count, false);
    } else {
      fill(rng, samplers, chosen, out, count - writes, true);
      fill(rng, samplers, chosen, out, count, true);
    }
    return new ArrayList<>(out);
  }

  /** {@code k} distinct partitions of {@code pool}, by a partial Fisher-Yates shuffle. */
  private static int[] draw(UniformRandomProvider rng, int[] pool, int k) {
    int[] copy = pool.clone();
    for (int i = 0; i < k; i++) {
      int j = i + rng.nextInt(copy.length - i);
      int t = copy[i];
      copy[i] = copy[j];
      copy[j] = t;
    }
    return java.util.Arrays.copyOf(copy, k);
  }

  /** {@code k} distinct partitions, local and remote in turn from a local one (the other kind once one runs out). */
  private int[] alternate(UniformRandomProvider rng, int k) {
    int[] l = draw(rng, local, Math.min(k, local.length));
    int[] r = draw(rng, remote, Math.min(k, remote.length));
    int[] out = new int[k];
    int li = 0;
    int ri = 0;
    for (int i = 0; i < k; i++) {
      boolean wantLocal = i % 2 == 0;
      out[i] = (wantLocal && li < l.length) || ri >= r.length ? l[li++] : r[ri++];
    }
    return out;
  }

  /**
   * Adds keys to {@code out} until it holds {@code upTo}: with {@code byKey}, the n-th new key
   * from {@code chosen[n % k]} (a draw that repeats a key is drawn again there); else the i-th
   * draw from {@code chosen[i % k]} (the uniform choice's stream, as before it had options).
   */
  private void fill(UniformRandomProvider rng, Samplers samplers, int[] chosen, Set<String> out, int upTo,
      boolean byKey) {
    int k = chosen.length;
    int attempts = 0;
    int start = out.size();
    for (int i = 0; out.size() < upTo; i++) {
      int p = chosen[(byKey ? out.size() - start : i) % k];
      if (++attempts > 100 * upTo) {
        // The chosen partitions hold fewer distinct keys than asked (a tiny keyspace): take any.
        p = all[rng.nextInt(all.length)];
      }
      RejectionInversionZipfSampler ranks = samplers.byPartition.computeIfAbsent(p, q -> rankings[q].ranks(rng));
      out.add(KeySpace.key(idsOf[p][(int) rankings[p].idOfRank(ranks.sample())]));
    }
  }

  /** Partitions replicated in the client's datacenter (tests). */
  int localPartitions() {
    return local.length;
  }
}
