package org.k2bench.core.clock;

/** Which clock a system's nodes keep ({@link org.k2bench.core.api.StoreSystem#clock()}). */
public enum ClockKind {
  /** A Lamport clock (K2, RAD, PaRiS*). */
  LAMPORT,
  /** A hybrid logical clock: a Lamport clock that never falls behind wall time (PaRiS). */
  HYBRID;

  /** A clock of this kind for node {@code nodeId}. */
  public LamportClock create(int nodeId) {
    return this == HYBRID ? LamportClock.hybrid(nodeId, System::currentTimeMillis) : new LamportClock(nodeId);
  }
}
