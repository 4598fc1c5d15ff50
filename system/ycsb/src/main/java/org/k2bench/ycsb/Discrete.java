package org.k2bench.ycsb;

import java.util.ArrayList;
import java.util.List;
import org.apache.commons.rng.UniformRandomProvider;
import site.ycsb.WorkloadException;

/**
 * An integer that is either fixed or drawn from a discrete distribution, written
 * {@code 5} or {@code 1:0.515,2:0.1,4:0.12,...} (value:probability, probabilities summing to
 * 1). Used for keys per operation, columns per row and bytes per column, so a workload can
 * follow measured distributions such as the TAO ones of Eiger's evaluation.
 */
final class Discrete {
  private final int[] values;
  private final double[] cdf;

  private Discrete(int[] values, double[] cdf) {
    this.values = values;
    this.cdf = cdf;
  }

  static Discrete parse(String field, String text, int min) throws WorkloadException {
    String t = text.trim();
    try {
      if (!t.contains(":")) {
        int v = Integer.parseInt(t);
        if (v < min) {
          throw new WorkloadException(field + ": must be at least " + min + ", got " + v);
        }
        return new Discrete(new int[] {v}, new double[] {1.0});
      }
      List<Integer> vs = new ArrayList<>();
      List<Double> cum = new ArrayList<>();
      double total = 0;
      for (String part : t.split(",")) {
        String[] kv = part.trim().split(":");
        if (kv.length != 2) {
          throw new WorkloadException(field + ": '" + part + "' is not value:probability");
        }
        int v = Integer.parseInt(kv[0].trim());
        double p = Double.parseDouble(kv[1].trim());
        if (v < min || !(p >= 0)) {
          throw new WorkloadException(field + ": '" + part + "' needs value >= " + min + " and probability >= 0");
        }
        total += p;
        vs.add(v);
        cum.add(total);
      }
      if (Math.abs(total - 1.0) > 1e-3) {
        throw new WorkloadException(field + ": probabilities sum to " + total + ", not 1");
      }
      int[] values = vs.stream().mapToInt(Integer::intValue).toArray();
      double[] cdf = cum.stream().mapToDouble(d -> d / cum.get(cum.size() - 1)).toArray();
      return new Discrete(values, cdf);
    } catch (NumberFormatException e) {
      throw new WorkloadException(field + ": '" + text + "' is neither an integer nor value:probability pairs");
    }
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

  /** The smallest value it can take (a value of probability 0 included). */
  int min() {
    int m = values[0];
    for (int v : values) {
      m = Math.min(m, v);
    }
    return m;
  }

  int max() {
    int m = values[0];
    for (int v : values) {
      m = Math.max(m, v);
    }
    return m;
  }
}
