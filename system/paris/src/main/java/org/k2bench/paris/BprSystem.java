package org.k2bench.paris;

/** BPR: PaRiS's transactions with reads that block until the freshest snapshot is installed (PaRiS paper, ICDCS 2019). */
public final class BprSystem extends ParisFamily {
  public BprSystem() {
    super(Mode.BPR);
  }

  @Override
  public String description() {
    return "BPR: PaRiS's transactions with reads that block until the freshest snapshot is installed";
  }
}
