package org.k2bench.karma;

import java.util.List;
import org.k2bench.core.testing.Mutant;
import org.k2bench.core.testing.Mutants;

/** Karma (Mahmood et al., Purdue ECE technical report 475, 2016). */
public final class KarmaSystem extends KarmaFamily {
  public KarmaSystem() {
    super(Mode.KARMA);
  }

  @Override
  public String description() {
    return "Karma: rings of datacenters, dynamic ring restrictions, datacenter caches of stable values";
  }

  @Override
  public String label() {
    return "Karma";
  }

  @Override
  public String colour() {
    return "#ff7f0e";
  }

  @Override
  public int order() {
    return 7;
  }

  /**
   * Its restrictions and caches, what it shares with COPS-PR (get-transactions, the write
   * buffer, versions) and core's dependency checks, which its rings run on each put.
   */
  @Override
  public List<Mutant> mutants() {
    return List.of(KarmaMutants.KARMA_NO_RESTRICTIONS, KarmaMutants.KARMA_NO_INVALIDATION,
        KarmaMutants.KARMA_FILL_IGNORES_INVALIDATION, KarmaMutants.KARMA_SKIP_SECOND_ROUND,
        KarmaMutants.KARMA_OWN_WRITE_ALWAYS, KarmaMutants.KARMA_LAMPORT_VERSIONS, Mutants.SKIP_DEPENDENCY_CHECKS,
        Mutants.DEP_CHECK_GC_WATERMARK);
  }
}
