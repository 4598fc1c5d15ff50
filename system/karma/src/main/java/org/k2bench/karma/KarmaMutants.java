package org.k2bench.karma;

import org.k2bench.core.testing.Mutant;

/** The mutants of Karma's and COPS-PR's code ({@link org.k2bench.core.testing.Mutants}). */
public final class KarmaMutants {
  /** Karma: no version is ever reported in flight, so no read restricts its client to a ring (§4.2). */
  public static final Mutant KARMA_NO_RESTRICTIONS = new Mutant("karma-no-restrictions",
      "Karma: no version is ever reported in flight, so no read restricts its client to a ring (§4.2).");

  /** Karma: a ring replica completes a put without invalidating the caches that may hold the key (§4.3). */
  public static final Mutant KARMA_NO_INVALIDATION = new Mutant("karma-no-invalidation",
      "Karma: a ring replica completes a put without invalidating the caches that may hold the key (§4.3).");

  /** COPS-PR: puts carry no put-after dependencies, so a ring may apply one before what its writer read. */
  public static final Mutant COPS_PR_NO_PUT_AFTER = new Mutant("cops-pr-no-put-after",
      "COPS-PR: puts carry no put-after dependencies, so a ring may apply one before what its writer read.");

  /** Karma: a get-transaction keeps its first-round values, never reading again at the effective time (§4.5). */
  public static final Mutant KARMA_SKIP_SECOND_ROUND = new Mutant("karma-skip-second-round",
      "Karma: a get-transaction keeps its first-round values, never reading again at the effective time (§4.5).");

  /** Karma: a cache keeps a fill that was outstanding when an invalidation of its key arrived (§4.3). */
  public static final Mutant KARMA_FILL_IGNORES_INVALIDATION = new Mutant("karma-fill-ignores-invalidation",
      "Karma: a cache keeps a fill that was outstanding when an invalidation of its key arrived (§4.3).");

  /** Karma: a single-key get serves the session's buffered write even after reading a newer one elsewhere. */
  public static final Mutant KARMA_OWN_WRITE_ALWAYS = new Mutant("karma-own-write-always",
      "Karma: a single-key get serves the session's buffered write even after reading a newer one elsewhere.");

  /**
   * Karma and COPS-PR: a put's version from the session's Lamport clock alone, which may
   * rank it below the key's value.
   */
  public static final Mutant KARMA_LAMPORT_VERSIONS = new Mutant("karma-lamport-versions",
      "Karma and COPS-PR: a put's version from the session's Lamport clock alone, which may rank it below the key's "
          + "value.");

  private KarmaMutants() {}
}
