package org.k2bench.ycsb;

import java.math.BigInteger;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.RejectionInversionZipfSampler;

/**
 * The keyspace: keys {@code user<i>} for i in [0, N), drawn by rank from an
 * exact Zipf distribution (rejection-inversion sampling, Commons RNG; YCSB's own
 * ZipfianGenerator only supports constants below 1) and mapped to key ids through a fixed
 * permutation, so the hottest keys are not the first ones and spread, through placement's
 * hash, over shards and datacenters.
 */
public final class KeySpace {
  /** A large prime: the permutation is rank -> (rank * MULTIPLIER + OFFSET) mod N. */
  private static final long MULTIPLIER = 2_654_435_761L;
  private static final long OFFSET = 40_503L;

  private final long n;
  private final long multiplier;
  private final double zipf;

  /**
   * @param n number of keys
   * @param zipf Zipf constant (exponent) > 0, e.g. 0.9, 1.2, 1.4
   */
  public KeySpace(long n, double zipf) {
    if (n < 1) {
      throw new IllegalArgumentException("the keyspace needs at least one key, got " + n);
    }
    if (!(zipf > 0)) {
      throw new IllegalArgumentException("the Zipf constant must be > 0, got " + zipf);
    }
    this.n = n;
    this.zipf = zipf;
    long m = n == 1 ? 1 : MULTIPLIER % n;
    while (n > 1 && (m == 0 || !BigInteger.valueOf(m).gcd(BigInteger.valueOf(n)).equals(BigInteger.ONE))) {
      m = (m + 1) % n; // coprime with n, so the map is a bijection
    }
    this.multiplier = m;
  }

  public long size() {
    return n;
  }

  /** A sampler of ranks in [1, N] (1 = most popular) for one thread. */
  public RejectionInversionZipfSampler ranks(UniformRandomProvider rng) {
    return new RejectionInversionZipfSampler(rng, (int) Math.min(n, Integer.MAX_VALUE), zipf);
  }

  /** The key id at a popularity rank in [1, N]. */
  public long idOfRank(long rank) {
    // (rank - 1) < n and multiplier < n, so the product fits in a long for n < 3e9.
    return Math.floorMod((rank - 1) * multiplier + OFFSET, n);
  }

  public static String key(long id) {
    return "user" + id;
  }
}
