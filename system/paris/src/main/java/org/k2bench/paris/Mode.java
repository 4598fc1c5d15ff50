package org.k2bench.paris;

/** Which of the PaRiS paper's three systems a server or client runs (its §IV and §V). */
enum Mode {
  /** Non-blocking reads from the snapshot of the UST, plus the client's private cache (§IV). */
  PARIS("paris"),
  /** Blocking Partial Replication: reads at the freshest snapshot, blocking until it is installed (§V). */
  BPR("bpr"),
  /** No causal consistency: latest versions, no start phase, no stabilization (§V). */
  NOCC("nocc");

  final String systemName;

  Mode(String systemName) {
    this.systemName = systemName;
  }
}
