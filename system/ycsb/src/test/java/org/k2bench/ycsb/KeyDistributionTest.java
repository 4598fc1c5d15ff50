package org.k2bench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Properties;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.simple.RandomSource;
import org.junit.jupiter.api.Test;
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

  static Properties props(String distribution, double zipf) {
    Properties p = new Properties();
    p.setProperty("recordcount", Integer.toString(KEYS));
    p.setProperty("k2bench.zipf", Double.toString(zipf));
    if (distribution != null) {
      p.setProperty("k2bench.key_distribution", distribution);
    }
    return p;
  }

  /** The hottest key's share of DRAWS single-key draws through chooseKeys; every id in [0, KEYS). */
  static double hottestShare(String distribution) throws WorkloadException {
    TxnWorkload w = TxnWorkloadTest.workload(props(distribution, 0.99));
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(1L);
    // The session's sampler as initThread builds it (the workload's keyspace: 20,000 keys, 0.99).
    TxnWorkload.Session s = new TxnWorkload.Session(new TxnWorkloadTest.FakeClient(), rng,
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
    assertEquals(share, hottestShare("zipf"), 1e-12, "zipf is the default: the same seeded draws");
  }

  @Test
  void keyDistributionIsCheckedAndCombinationsItCannotServeAreRefused() {
    WorkloadException e = assertThrows(WorkloadException.class,
        () -> new TxnWorkload().init(props("ycsb", 0.99)));
    assertEquals("k2bench.key_distribution: must be zipf or ycsb_scrambled, got 'ycsb'", e.getMessage());
    e = assertThrows(WorkloadException.class, () -> new TxnWorkload().init(props("ycsb_scrambled", 1.2)));
    assertEquals("k2bench.key_distribution: ycsb_scrambled is YCSB's generator at its constant 0.99; set "
        + "k2bench.zipf=0.99 or use zipf (got 1.2)", e.getMessage());
    Properties local = props("ycsb_scrambled", 0.99);
    local.setProperty("k2bench.locality", "0.5");
    e = assertThrows(WorkloadException.class, () -> new TxnWorkload().init(local));
    assertEquals("k2bench.key_distribution: ycsb_scrambled has no per-datacenter hot sets; set k2bench.locality=0 "
        + "or use zipf", e.getMessage());
    Properties paris = props("ycsb_scrambled", 0.99);
    paris.setProperty("k2bench.partitions_per_op", "2");
    e = assertThrows(WorkloadException.class, () -> new TxnWorkload().init(paris));
    assertTrue(e.getMessage().startsWith("k2bench.key_distribution: ycsb_scrambled draws over the whole key space"),
        e.getMessage());
  }
}
