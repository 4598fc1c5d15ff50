package org.k2bench.karma;

/** The two systems of the Karma paper that share this module. */
enum Mode {
  /** Karma: dynamic ring restrictions, datacenter caches (§3-4). */
  KARMA("karma"),
  /** COPS-PR: every client statically bound to its datacenter's ring, no caches (§1, §5 "Schemes"). */
  COPS_PR("cops-pr");

  final String systemName;

  Mode(String systemName) {
    this.systemName = systemName;
  }
}
