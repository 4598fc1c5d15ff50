package org.k2bench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.k2bench.core.testing.SpecFixtures;
import site.ycsb.WorkloadException;

/**
 * workload.key_distribution: YCSB's scrambled Zipfian (the Karma paper's generator) against
 * the exact Zipf, at the constant 0.99 over 20,000 keys. YCSB draws ranks over 10^10 items and
 * hashes them onto the keys, so its hottest key gets ~1/zeta(10^10, 0.99) = 3.8% whatever the
 * key count; the exact Zipf gives its rank 1 ~1/H(20000, 0.99), about 9.5%.
 */
class KeyDistributionTest {
  static final int KEYS = 20_000;
  static final int DRAWS = 1_000_000;

  @TempDir
  Path dir;

  /** A client's properties: the fixture's spec over KEYS keys at Zipf 0.99, with {@code distribution}. */
  Properties props(String distribution) throws IOException {
    Map<String, Object> fields = new HashMap<>(Map.of("workload.keys", KEYS, "workload.zipf", 0.99));
    if (distribution != null) {
      fields.put("workload.key_distribution", distribution);
    }
    Properties p = new Properties();
    p.setProperty("k2bench.spec", SpecFixtures.write(dir, fields).toString());
    return p;
  }

  /** The hottest key's share of DRAWS single-key draws through chooseKeys; every id in [0, KEYS). */
  double hottestShare(String distribution) throws IOException, WorkloadException {
    TxnWorkload w = TxnWorkloadTest.workload(props(distribution));
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(1L);
    // The session's sampler as initThread builds it (the workload's keyspace: 20,000 keys, 0.99).
    Session s = new Session(new TxnWorkloadTest.FakeClient(), rng,
        new KeySpace(KEYS, 0.99).ranks(RandomSource.XO_RO_SHI_RO_128_PP.create(2L)), 0);
    int[] counts = new int[KEYS];
    for (int i = 0; i < DRAWS; i++) {
      String key = w.chooseKeys(s, 1, 0).get(0);
      long id = Long.parseLong(key.substring(4));
      assertTrue(id >= 0 && id < KEYS, "id in range: " + key);
      counts[(int) id]++;
    }
    w.cleanup();
    int max = 0;
    for (int c : counts) {
      max = Math.max(max, c);
    }
    double share = max / (double) DRAWS;
    System.out.printf("key_distribution %s: hottest key's share %.4f%n",
        distribution == null ? "(default)" : distribution, share);
    return share;
  }

  @Test
  void ycsbScrambledGivesTheHottestKeyAboutFourPercent() throws Exception {
    double share = hottestShare("ycsb_scrambled");
    assertTrue(share >= 0.030 && share <= 0.045, "ycsb_scrambled's hottest key: " + share);
  }

  @Test
  void theDefaultExactZipfGivesItMoreThanTwiceThat() throws Exception {
    double share = hottestShare(null);
    assertTrue(share > 0.08, "exact Zipf(0.99)'s hottest key: " + share);
    assertEquals(share, hottestShare("zipf"), 1e-12, "the fixture's zipf: the same seeded draws");
  }

  /** The harness checks the field (k2bench/spec); a value it would not write is refused in one line. */
  @Test
  void anUnknownKeyDistributionIsRefusedInOneLine() throws Exception {
    WorkloadException e = assertThrows(WorkloadException.class, () -> new TxnWorkload().init(props("ycsb")));
    assertEquals(dir.resolve("spec.json") + ": workload.key_distribution: must be zipf or ycsb_scrambled, got "
        + "'ycsb'; regenerate it with this launcher's harness", e.getMessage());
  }
}
