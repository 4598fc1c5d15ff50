package org.k2bench.rad;

import org.k2bench.core.testing.Mutant;

/** The mutants of RAD's own code ({@link org.k2bench.core.testing.Mutants}). */
public final class RadMutants {
  /** RAD: Eiger's read-only transaction keeps its first-round versions (no second round). */
  public static final Mutant RAD_SKIP_SECOND_ROUND = new Mutant("rad-skip-second-round",
      "RAD: Eiger's read-only transaction keeps its first-round versions (no second round).");

  private RadMutants() {}
}
