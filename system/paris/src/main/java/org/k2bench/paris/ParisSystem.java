package org.k2bench.paris;

import java.util.List;
import org.k2bench.core.testing.Mutant;

/** PaRiS: non-blocking reads from the UST snapshot and a private cache, 2PC, partial replication (PaRiS paper, ICDCS 2019). */
public final class ParisSystem extends ParisFamily {
  public ParisSystem() {
    super(Mode.PARIS);
  }

  @Override
  public String description() {
    return "PaRiS: non-blocking reads from the UST snapshot and a private cache, 2PC, partial replication";
  }

  @Override
  public String label() {
    return "PaRiS";
  }

  @Override
  public String colour() {
    return "#9467bd";
  }

  @Override
  public int order() {
    return 4;
  }

  /** Every mutant of the module but BPR's blocking, whose UST, hwt and private cache only PaRiS has. */
  @Override
  public List<Mutant> mutants() {
    return List.of(ParisMutants.PARIS_ABOVE_UST, ParisMutants.PARIS_NO_HWT, ParisMutants.PARIS_APPLY_PAST_PREPARED,
        ParisMutants.PARIS_GC_IGNORES_RUNNING, ParisMutants.PARIS_SLOW_GOSSIP, ParisMutants.PARIS_SLOW_HEARTBEATS,
        ParisMutants.PARIS_COMMIT_MIN_PROPOSAL);
  }
}
