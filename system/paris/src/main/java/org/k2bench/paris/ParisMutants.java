package org.k2bench.paris;

import org.k2bench.core.testing.Mutant;

/** The mutants of PaRiS's, BPR's and NoCC's code ({@link org.k2bench.core.testing.Mutants}). */
public final class ParisMutants {
  /** PaRiS: transactions read at the coordinator's clock instead of the UST, and clients keep no private cache. */
  public static final Mutant PARIS_ABOVE_UST = new Mutant("paris-above-ust",
      "PaRiS: transactions read at the coordinator's clock instead of the UST, and clients keep no private cache.");

  /** PaRiS: the coordinator leaves the client's hwt out of ht (prepares only above the snapshot). */
  public static final Mutant PARIS_NO_HWT = new Mutant("paris-no-hwt",
      "PaRiS: the coordinator leaves the client's hwt out of ht (prepares only above the snapshot).");

  /** PaRiS: a partition applies committed transactions and raises its version clock past a prepared one. */
  public static final Mutant PARIS_APPLY_PAST_PREPARED = new Mutant("paris-apply-past-prepared",
      "PaRiS: a partition applies committed transactions and raises its version clock past a prepared one.");

  /** PaRiS: S_old leaves out the snapshots of running transactions (garbage collection follows the UST alone). */
  public static final Mutant PARIS_GC_IGNORES_RUNNING = new Mutant("paris-gc-ignores-running",
      "PaRiS: S_old leaves out the snapshots of running transactions (garbage collection follows the UST alone).");

  /**
   * PaRiS: the UST gossip runs ten times slower than configured: each server reports its
   * version vector's minimum to its root (and the roots exchange and announce) every 10 Δ_G.
   */
  public static final Mutant PARIS_SLOW_GOSSIP = new Mutant("paris-slow-gossip",
      "PaRiS: the UST gossip runs ten times slower than configured: each server reports its version vector's "
          + "minimum to its root (and the roots exchange and announce) every 10 Δ_G.");

  /**
   * PaRiS, BPR: an idle partition heartbeats its version clock to its other replicas only
   * every twentieth Δ_R (Alg. 4 lines 19-21), so their version vectors, the UST and BPR's
   * blocked reads wait for it.
   */
  public static final Mutant PARIS_SLOW_HEARTBEATS = new Mutant("paris-slow-heartbeats",
      "PaRiS, BPR: an idle partition heartbeats its version clock to its other replicas only every twentieth Δ_R "
          + "(Alg. 4 lines 19-21), so their version vectors, the UST and BPR's blocked reads wait for it.");

  /** BPR: a blocked read waits until its partition has installed five apply intervals (Δ_R) past its snapshot. */
  public static final Mutant BPR_OVER_WAIT = new Mutant("bpr-over-wait",
      "BPR: a blocked read waits until its partition has installed five apply intervals (Δ_R) past its snapshot.");

  /** PaRiS: the coordinator commits at the smallest cohort proposal instead of the largest (Alg. 2 line 26). */
  public static final Mutant PARIS_COMMIT_MIN_PROPOSAL = new Mutant("paris-commit-min-proposal",
      "PaRiS: the coordinator commits at the smallest cohort proposal instead of the largest (Alg. 2 line 26).");

  private ParisMutants() {}
}
