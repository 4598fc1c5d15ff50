package org.k2bench.paris;

/** PaRiS: non-blocking reads from the UST snapshot and a private cache, 2PC, partial replication (PaRiS paper, ICDCS 2019). */
public final class ParisSystem extends ParisFamily {
  public ParisSystem() {
    super(Mode.PARIS);
  }

  @Override
  public String description() {
    return "PaRiS: non-blocking reads from the UST snapshot and a private cache, 2PC, partial replication";
  }
}
