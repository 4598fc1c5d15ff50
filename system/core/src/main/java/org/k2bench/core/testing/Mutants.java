package org.k2bench.core.testing;

import java.util.Set;

/**
 * Deliberately broken protocol variants, for showing that the consistency checker catches
 * real bugs (issue 7). Test-only: selected with {@code -Dk2bench.mutant=<name>} (the
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

  public static final Set<String> ALL = Set.of(SKIP_DEPENDENCY_CHECKS, INCOMING_WRITES_VISIBLE,
      RAD_SKIP_SECOND_ROUND, READ_PENDING);

  private static final String ACTIVE = load();

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
    return name.equals(ACTIVE);
  }
}
