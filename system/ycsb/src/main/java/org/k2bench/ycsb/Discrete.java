package org.k2bench.ycsb;

import java.util.Map;
import org.apache.commons.rng.UniformRandomProvider;
import org.k2bench.core.api.RunSpec;

/**
 * An integer that is either fixed or drawn from a discrete distribution (a spec's
 * {@link RunSpec.Dist}: 5, or {"1": 0.515, "2": 0.1, ...}). Used for keys per operation,
 * columns per row and bytes per column, so a workload can follow measured distributions
 * such as the TAO ones of Eiger's evaluation.
 */
final class Discrete {
  private final int[] values;
  private final double[] cdf;

  private Discrete(int[] values, double[] cdf) {
    this.values = values;
    this.cdf = cdf;
  }

  /**
   * {@code d}'s values in ascending order, as the spec lists them (the harness checked them:
   * probabilities >= 0 summing to 1 within 1e-3, so the last is scaled to exactly 1).
   */
  static Discrete of(RunSpec.Dist d) {
    int[] values = new int[d.probabilities().size()];
    double[] cum = new double[values.length];
    double total = 0;
    int i = 0;
    for (Map.Entry<Integer, Double> e : d.probabilities().entrySet()) {
      total += e.getValue();
      values[i] = e.getKey();
      cum[i++] = total;
    }
    double[] cdf = new double[values.length];
    for (int j = 0; j < cdf.length; j++) {
      cdf[j] = cum[j] / total;
    }
    return new Discrete(values, cdf);
  }

  int sample(UniformRandomProvider rng) {
    if (values.length == 1) {
      return values[0];
    }
    double u = rng.nextDouble();
    for (int i = 0; i < cdf.length; i++) {
      if (u < cdf[i]) {
        return values[i];
      }
    }
    return values[values.length - 1];
  }
}
