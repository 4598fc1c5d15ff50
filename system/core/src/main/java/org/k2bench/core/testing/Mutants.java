package org.k2bench.core.testing;

import java.util.Set;

/**
 * Deliberately broken protocol variants, for showing that the consistency checker catches
 * real bugs. Test-only: selected with {@code -Dk2bench.mutant=<name>} (the
 * orchestrator sets it from an experiment's {@code testing.mutant}); nothing is broken
 * unless a run asks for it, and every process that runs a mutant says so on stderr.
 */
public final class Mutants {
  /** Replicated write-only transactions commit without their one-hop dependency checks. */
  public static final String SKIP_DEPENDENCY_CHECKS = "skip-dependency-checks";
  /** K2: replicated data in IncomingWrites becomes visible to local reads on arrival. */
  public static final String INCOMING_WRITES_VISIBLE = "incoming-writes-visible";
  /** RAD: Eiger's read-only transaction keeps its first-round versions (no second round). */
  public static final String RAD_SKIP_SECOND_ROUND = "rad-skip-second-round";
  /** K2: first rounds offer values a pending write-only transaction may still supersede. */
  public static final String READ_PENDING = "read-pending";
  /**
   * Dependency checks pass for any version at or below the newest one GC removed, whether
   * or not the dependency itself arrived (the watermark shortcut).
   */
  public static final String DEP_CHECK_GC_WATERMARK = "dep-check-gc-watermark";
  /** K2: the second replication phase waits for every replica datacenter, however long. */
  public static final String REPLICATION_WAITS_EVERY_REPLICA = "replication-waits-every-replica";
  /** PaRiS*: a local write held for replication is served to every session of the datacenter. */
  public static final String PARIS_SHARED_PINS = "paris-shared-pins";
  /** K2: the DC cache counts (key, version) entries and every first-round offer refreshes one. */
  public static final String CACHE_COUNTS_VERSIONS = "cache-counts-versions";
  /** K2: the DC cache never evicts: no key for capacity, no superseded version of a key. */
  public static final String CACHE_NEVER_EVICTS = "cache-never-evicts";

  /** Clients keep one dependency per key, the largest version read (drops a real one). */
  public static final String DEPS_MAX_PER_KEY = "deps-max-per-key";
  /** K2: replicas never finish the replication of an origin datacenter that died mid-way. */
  public static final String REPLICATION_NOT_CARRIED_ON = "replication-not-carried-on";

  /** PaRiS: transactions read at the coordinator's clock instead of the UST, and clients keep no private cache. */
  public static final String PARIS_ABOVE_UST = "paris-above-ust";

  /** PaRiS: the coordinator leaves the client's hwt out of ht (prepares only above the snapshot). */
  public static final String PARIS_NO_HWT = "paris-no-hwt";

  /** PaRiS: a partition applies committed transactions and raises its version clock past a prepared one. */
  public static final String PARIS_APPLY_PAST_PREPARED = "paris-apply-past-prepared";

  /** PaRiS: S_old leaves out the snapshots of running transactions (garbage collection follows the UST alone). */
  public static final String PARIS_GC_IGNORES_RUNNING = "paris-gc-ignores-running";

  /**
   * PaRiS: the UST gossip runs ten times slower than configured: each server reports its
   * version vector's minimum to its root (and the roots exchange and announce) every 10 Δ_G.
   */
  public static final String PARIS_SLOW_GOSSIP = "paris-slow-gossip";

  /**
   * PaRiS, BPR: an idle partition heartbeats its version clock to its other replicas only
   * every twentieth Δ_R (Alg. 4 lines 19-21), so their version vectors, the UST and BPR's
   * blocked reads wait for it.
   */
  public static final String PARIS_SLOW_HEARTBEATS = "paris-slow-heartbeats";

  /** BPR: a blocked read waits until its partition has installed five apply intervals (Δ_R) past its snapshot. */
  public static final String BPR_OVER_WAIT = "bpr-over-wait";

  /** PaRiS: the coordinator commits at the smallest cohort proposal instead of the largest (Alg. 2 line 26). */
  public static final String PARIS_COMMIT_MIN_PROPOSAL = "paris-commit-min-proposal";

  /** Karma: no version is ever reported in flight, so no read restricts its client to a ring (§4.2). */
  public static final String KARMA_NO_RESTRICTIONS = "karma-no-restrictions";

  /** Karma: a ring replica completes a put without invalidating the caches that may hold the key (§4.3). */
  public static final String KARMA_NO_INVALIDATION = "karma-no-invalidation";

  /** COPS-PR: puts carry no put-after dependencies, so a ring may apply one before what its writer read. */
  public static final String COPS_PR_NO_PUT_AFTER = "cops-pr-no-put-after";

  /** Karma: a get-transaction keeps its first-round values, never reading again at the effective time (§4.5). */
  public static final String KARMA_SKIP_SECOND_ROUND = "karma-skip-second-round";

  /** Karma: a cache keeps a fill that was outstanding when an invalidation of its key arrived (§4.3). */
  public static final String KARMA_FILL_IGNORES_INVALIDATION = "karma-fill-ignores-invalidation";

  /** Karma: a single-key get serves the session's buffered write even after reading a newer one elsewhere. */
  public static final String KARMA_OWN_WRITE_ALWAYS = "karma-own-write-always";

  /** Karma and COPS-PR: a put's version from the session's Lamport clock alone, which may rank it below the key's value. */
  public static final String KARMA_LAMPORT_VERSIONS = "karma-lamport-versions";

  /**
   * Servers send each replication and commit message to another datacenter once, as before
   * {@link org.k2bench.core.server.Retransmitter}: a message lost on a dropping link is lost for good.
   */
  public static final String NO_RETRANSMISSION = "no-retransmission";

  public static final Set<String> ALL = Set.of(NO_RETRANSMISSION, SKIP_DEPENDENCY_CHECKS, INCOMING_WRITES_VISIBLE,
      RAD_SKIP_SECOND_ROUND, READ_PENDING, DEP_CHECK_GC_WATERMARK, REPLICATION_WAITS_EVERY_REPLICA,
      PARIS_SHARED_PINS, CACHE_COUNTS_VERSIONS, CACHE_NEVER_EVICTS, DEPS_MAX_PER_KEY,
      REPLICATION_NOT_CARRIED_ON, PARIS_ABOVE_UST, PARIS_NO_HWT, PARIS_APPLY_PAST_PREPARED,
      PARIS_GC_IGNORES_RUNNING, PARIS_SLOW_GOSSIP, PARIS_SLOW_HEARTBEATS, BPR_OVER_WAIT, PARIS_COMMIT_MIN_PROPOSAL, KARMA_NO_RESTRICTIONS,
      KARMA_NO_INVALIDATION, COPS_PR_NO_PUT_AFTER, KARMA_SKIP_SECOND_ROUND, KARMA_FILL_IGNORES_INVALIDATION,
      KARMA_OWN_WRITE_ALWAYS, KARMA_LAMPORT_VERSIONS);

  private static final String ACTIVE = load();
  /** Set by tests in this JVM ({@link #runWith}); wins over the system property. */
  private static volatile String override;

  private Mutants() {}

  private static String load() {
    String m = System.getProperty("k2bench.mutant");
    if (m == null || m.isEmpty()) {
      return null;
    }
    if (!ALL.contains(m)) {
      throw new IllegalArgumentException("k2bench.mutant: unknown mutant '" + m + "'; known: " + ALL);
    }
    System.err.println("k2bench: WARNING: running the deliberately broken mutant '" + m + "' (test only)");
    return m;
  }

  public static boolean active(String name) {
    String o = override;
    return name.equals(o != null ? o : ACTIVE);
  }

  /**
   * Runs {@code body} with mutant {@code name} active in this JVM (tests that show their
   * scenario catches the mutant). Only mutants read when they act, not those fixed at
   * class loading, can be switched this way. Not for concurrent tests.
   */
  public static <T> T runWith(String name, java.util.function.Supplier<T> body) {
    if (!ALL.contains(name)) {
      throw new IllegalArgumentException("unknown mutant '" + name + "'");
    }
    override = name;
    try {
      return body.get();
    } finally {
      override = null;
    }
  }
}
