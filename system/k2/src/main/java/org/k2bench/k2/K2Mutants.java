package org.k2bench.k2;

import java.util.List;
import org.k2bench.core.testing.Mutant;
import org.k2bench.core.testing.Mutants;

/** The mutants of K2's servers and DC cache ({@link Mutants}), which PaRiS* runs too. */
public final class K2Mutants {
  /** K2: replicated data in IncomingWrites becomes visible to local reads on arrival. */
  public static final Mutant INCOMING_WRITES_VISIBLE = new Mutant("incoming-writes-visible",
      "K2: replicated data in IncomingWrites becomes visible to local reads on arrival.");
  /** K2: the second replication phase waits for every replica datacenter, however long. */
  public static final Mutant REPLICATION_WAITS_EVERY_REPLICA = new Mutant("replication-waits-every-replica",
      "K2: the second replication phase waits for every replica datacenter, however long.");
  /** K2: replicas never finish the replication of an origin datacenter that died mid-way. */
  public static final Mutant REPLICATION_NOT_CARRIED_ON = new Mutant("replication-not-carried-on",
      "K2: replicas never finish the replication of an origin datacenter that died mid-way.");
  /** K2: the DC cache counts (key, version) entries and every first-round offer refreshes one. */
  public static final Mutant CACHE_COUNTS_VERSIONS = new Mutant("cache-counts-versions",
      "K2: the DC cache counts (key, version) entries and every first-round offer refreshes one.");
  /** K2: the DC cache never evicts: no key for capacity, no superseded version of a key. */
  public static final Mutant CACHE_NEVER_EVICTS = new Mutant("cache-never-evicts",
      "K2: the DC cache never evicts: no key for capacity, no superseded version of a key.");
  /**
   * PaRiS*: a local write held for replication is served to every session of the datacenter.
   * Here because the private pins are {@link DcCache}'s, with no DC cache.
   */
  public static final Mutant PARIS_SHARED_PINS = new Mutant("paris-shared-pins",
      "PaRiS*: a local write held for replication is served to every session of the datacenter.");

  /**
   * What every system on K2's servers and client honours: their replication, and core's
   * code they run (write-only transactions with dependency checks, first rounds from the
   * store, one-hop dependencies, the retransmitter). Only K2's DC cache mutants and PaRiS*'s
   * private pins depend on the system.
   */
  private static final List<Mutant> K2_SERVERS = List.of(Mutants.SKIP_DEPENDENCY_CHECKS, Mutants.READ_PENDING,
      Mutants.DEP_CHECK_GC_WATERMARK, Mutants.DEPS_MAX_PER_KEY, Mutants.NO_RETRANSMISSION,
      INCOMING_WRITES_VISIBLE, REPLICATION_WAITS_EVERY_REPLICA, REPLICATION_NOT_CARRIED_ON);

  private K2Mutants() {}

  /** {@link #K2_SERVERS} and {@code more}, for a system built on K2's servers. */
  public static List<Mutant> ofK2Servers(Mutant... more) {
    List<Mutant> out = new java.util.ArrayList<>(K2_SERVERS);
    out.addAll(List.of(more));
    return List.copyOf(out);
  }
}
