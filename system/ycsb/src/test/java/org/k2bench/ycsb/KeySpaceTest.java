package org.k2bench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.BitSet;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.RejectionInversionZipfSampler;
import org.apache.commons.rng.simple.RandomSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class KeySpaceTest {
  static final int N = 1_000_000;
  static final int SAMPLES = 2_000_000;

  /** Max |empirical CDF - exact CDF| over all ranks, exact CDF(k) = H(k, s) / H(N, s). */
  @ParameterizedTest(name = "zipf {0}")
  @ValueSource(doubles = {0.9, 1.2, 1.4})
  void samplerMatchesTheExactZipfDistribution(double s) {
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(7L);
    RejectionInversionZipfSampler sampler = new KeySpace(N, s).ranks(rng);
    int[] counts = new int[N + 1];
    for (int i = 0; i < SAMPLES; i++) {
      int r = sampler.sample();
      assertTrue(r >= 1 && r <= N, "rank in [1, N]: " + r);
      counts[r]++;
    }
    double[] h = new double[N + 1];
    for (int k = 1; k <= N; k++) {
      h[k] = h[k - 1] + Math.pow(k, -s);
    }
    double maxErr = 0;
    long cum = 0;
    for (int k = 1; k <= N; k++) {
      cum += counts[k];
      maxErr = Math.max(maxErr, Math.abs(cum / (double) SAMPLES - h[k] / h[N]));
    }
    assertTrue(maxErr <= 0.005, "max CDF error " + maxErr + " for zipf " + s);
    // The head: rank 1 alone has probability 1 / H(N, s).
    assertEquals(1 / h[N], counts[1] / (double) SAMPLES, 0.005);
  }

  @Test
  void ranksMapToKeysThroughABijection() {
    for (long n : new long[] {1, 2, 10, 97, 1000, 100_000, 1_000_000}) {
      KeySpace ks = new KeySpace(n, 1.2);
      BitSet seen = new BitSet((int) n);
      for (long r = 1; r <= n; r++) {
        long id = ks.idOfRank(r);
        assertTrue(id >= 0 && id < n);
        assertTrue(!seen.get((int) id), "id " + id + " twice for n=" + n);
        seen.set((int) id);
      }
      assertEquals(n, seen.cardinality());
    }
    KeySpace ks = new KeySpace(1_000_000, 1.2);
    assertTrue(ks.idOfRank(1) != 0 && ks.idOfRank(2) != 1, "the hottest keys are not the first ids");
  }
}
