package org.k2bench.karma;

/** COPS-PR, the Karma paper's baseline: COPS on rings, each client bound to its datacenter's ring. */
public final class CopsPrSystem extends KarmaFamily {
  public CopsPrSystem() {
    super(Mode.COPS_PR);
  }

  @Override
  public String description() {
    return "COPS-PR: COPS on rings of datacenters, each client statically bound to its own ring, no caches";
  }
}
