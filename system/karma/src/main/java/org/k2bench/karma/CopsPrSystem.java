package org.k2bench.karma;

import java.util.List;
import org.k2bench.core.testing.Mutant;
import org.k2bench.core.testing.Mutants;

/** COPS-PR, the Karma paper's baseline: COPS on rings, each client bound to its datacenter's ring. */
public final class CopsPrSystem extends KarmaFamily {
  public CopsPrSystem() {
    super(Mode.COPS_PR);
  }

  @Override
  public String description() {
    return "COPS-PR: COPS on rings of datacenters, each client statically bound to its own ring, no caches";
  }

  @Override
  public String label() {
    return "COPS-PR";
  }

  @Override
  public String colour() {
    return "#17becf";
  }

  @Override
  public int order() {
    return 8;
  }

  /**
   * Its put-after dependencies, what it shares with Karma (get-transactions, the write
   * buffer, versions) and core's dependency checks; not Karma's restrictions or caches,
   * which it has none of.
   */
  @Override
  public List<Mutant> mutants() {
    return List.of(KarmaMutants.COPS_PR_NO_PUT_AFTER, KarmaMutants.KARMA_SKIP_SECOND_ROUND,
        KarmaMutants.KARMA_OWN_WRITE_ALWAYS, KarmaMutants.KARMA_LAMPORT_VERSIONS, Mutants.SKIP_DEPENDENCY_CHECKS,
        Mutants.DEP_CHECK_GC_WATERMARK);
  }
}
