package org.k2bench.paris;

import java.util.List;
import java.util.Map;
import org.k2bench.core.testing.Mutant;

/** BPR: PaRiS's transactions with reads that block until the freshest snapshot is installed (PaRiS paper, ICDCS 2019). */
public final class BprSystem extends ParisFamily {
  public BprSystem() {
    super(Mode.BPR);
  }

  @Override
  public String description() {
    return "BPR: PaRiS's transactions with reads that block until the freshest snapshot is installed";
  }

  @Override
  public String label() {
    return "BPR";
  }

  @Override
  public String colour() {
    return "#8c564b";
  }

  @Override
  public int order() {
    return 5;
  }

  /**
   * Its blocking, and what it shares with PaRiS: 2PC, applying and heartbeats (whose
   * version vectors its blocked reads wait on). It has no UST or S_old, and its start
   * already takes hwt in (paris-no-hwt would change nothing).
   */
  @Override
  public List<Mutant> mutants() {
    return List.of(ParisMutants.BPR_OVER_WAIT, ParisMutants.PARIS_APPLY_PAST_PREPARED,
        ParisMutants.PARIS_SLOW_HEARTBEATS, ParisMutants.PARIS_COMMIT_MIN_PROPOSAL);
  }

  /** The threads a blocked read waits in, with {@code bpr_blocking: thread} ({@code ParisServer}). */
  @Override
  public Map<String, String> threadCategories() {
    return Map.of("BPR blocked-read threads", "^k2b-bpr-wait");
  }
}
