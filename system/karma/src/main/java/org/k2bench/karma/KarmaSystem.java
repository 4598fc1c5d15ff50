package org.k2bench.karma;

/** Karma (Mahmood et al., Purdue ECE technical report 475, 2016). */
public final class KarmaSystem extends KarmaFamily {
  public KarmaSystem() {
    super(Mode.KARMA);
  }

  @Override
  public String description() {
    return "Karma: rings of datacenters, dynamic ring restrictions, datacenter caches of stable values";
  }
}
