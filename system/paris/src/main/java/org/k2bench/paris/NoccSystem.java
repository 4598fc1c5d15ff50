package org.k2bench.paris;

/** NoCC: PaRiS's transactions without causal consistency (latest versions, no start, no UST) (PaRiS paper, ICDCS 2019). */
public final class NoccSystem extends ParisFamily {
  public NoccSystem() {
    super(Mode.NOCC);
  }

  @Override
  public String description() {
    return "NoCC: PaRiS's transactions without causal consistency (latest versions, no start, no UST)";
  }
}
