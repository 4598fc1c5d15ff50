package org.k2bench.paris;

import java.util.List;
import org.k2bench.core.testing.Mutant;

/** NoCC: PaRiS's transactions without causal consistency (latest versions, no start, no UST) (PaRiS paper, ICDCS 2019). */
public final class NoccSystem extends ParisFamily {
  public NoccSystem() {
    super(Mode.NOCC);
  }

  @Override
  public String description() {
    return "NoCC: PaRiS's transactions without causal consistency (latest versions, no start, no UST)";
  }

  @Override
  public String label() {
    return "NoCC";
  }

  @Override
  public String colour() {
    return "#7f7f7f";
  }

  @Override
  public int order() {
    return 6;
  }

  /** The PaRiS paper's non-causal baseline (§V): it reads the latest versions, a negative control for the checker. */
  @Override
  public boolean causal() {
    return false;
  }

  /**
   * 2PC and applying, which it shares with PaRiS. Its cohorts propose their clock alone
   * (no ht), and nothing of it waits on heartbeats, a UST or S_old.
   */
  @Override
  public List<Mutant> mutants() {
    return List.of(ParisMutants.PARIS_APPLY_PAST_PREPARED, ParisMutants.PARIS_COMMIT_MIN_PROPOSAL);
  }
}
