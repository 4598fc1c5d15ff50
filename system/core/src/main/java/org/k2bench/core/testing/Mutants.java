package org.k2bench.core.testing;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.Systems;

/**
 * Deliberately broken protocol variants, for showing that the consistency checker catches
 * real bugs. Test-only: selected with {@code -Dk2bench.mutant=<name>} (the
 * orchestrator sets it from an experiment's {@code testing.mutant}); nothing is broken
 * unless a run asks for it, and every process that runs a mutant says so on stderr.
 *
 * <p>A mutant is declared by the module whose code it breaks and listed by each system
 * that runs that code ({@link StoreSystem#mutants()}). Declared here are only those whose
 * broken code is core's, shared by several systems.
 */
public final class Mutants {
  /** Replicated write-only transactions commit without their one-hop dependency checks. */
  public static final Mutant SKIP_DEPENDENCY_CHECKS = new Mutant("skip-dependency-checks",
      "Replicated write-only transactions commit without their one-hop dependency checks.");
  /** K2: first rounds offer values a pending write-only transaction may still supersede. */
  public static final Mutant READ_PENDING = new Mutant("read-pending",
      "K2: first rounds offer values a pending write-only transaction may still supersede.");
  /**
   * Dependency checks pass for any version at or below the newest one GC removed, whether
   * or not the dependency itself arrived (the watermark shortcut).
   */
  public static final Mutant DEP_CHECK_GC_WATERMARK = new Mutant("dep-check-gc-watermark",
      "Dependency checks pass for any version at or below the newest one GC removed, whether or not the "
          + "dependency itself arrived (the watermark shortcut).");
  /** Clients keep one dependency per key, the largest version read (drops a real one). */
  public static final Mutant DEPS_MAX_PER_KEY = new Mutant("deps-max-per-key",
      "Clients keep one dependency per key, the largest version read (drops a real one).");
  /**
   * Servers send each replication and commit message to another datacenter once, as before
   * {@link org.k2bench.core.server.Retransmitter}: a message lost on a dropping link is lost for good.
   */
  public static final Mutant NO_RETRANSMISSION = new Mutant("no-retransmission",
      "Servers send each replication and commit message to another datacenter once, as before the "
          + "Retransmitter: a message lost on a dropping link is lost for good.");

  /** The mutants of core's code: each system that runs the code lists the mutant too. */
  public static final List<Mutant> SHARED = List.of(SKIP_DEPENDENCY_CHECKS, READ_PENDING, DEP_CHECK_GC_WATERMARK,
      DEPS_MAX_PER_KEY, NO_RETRANSMISSION);

  /** Set by tests in this JVM ({@link #runWith}); wins over the system property. */
  private static volatile String override;

  private Mutants() {}

  /**
   * The system property, read on first use: only then are the systems asked for their
   * mutants, so a process that runs none never loads them for this.
   */
  private static final class Selected {
    static final String NAME = load();
  }

  private static String load() {
    String m = System.getProperty("k2bench.mutant");
    if (m == null || m.isEmpty()) {
      return null;
    }
    Map<String, Mutant> all = all();
    if (!all.containsKey(m)) {
      throw new IllegalArgumentException("k2bench.mutant: unknown mutant '" + m + "'; known: " + all.keySet());
    }
    System.err.println("k2bench: WARNING: running the deliberately broken mutant '" + m + "' (test only)");
    return m;
  }

  /**
   * Every known mutant by name: core's shared ones and those of every system on the class
   * path ({@link Systems#available()}). A name declared twice with different descriptions
   * is an error.
   */
  public static Map<String, Mutant> all() {
    Map<String, Mutant> out = new TreeMap<>();
    SHARED.forEach(m -> out.put(m.name(), m));
    for (StoreSystem s : Systems.available().values()) {
      for (Mutant m : s.mutants()) {
        Mutant had = out.putIfAbsent(m.name(), m);
        if (had != null && !had.equals(m)) {
          throw new IllegalStateException("mutant '" + m.name() + "' declared twice: " + had + " and, by "
              + s.name() + ", " + m);
        }
      }
    }
    return out;
  }

  public static boolean active(String name) {
    String o = override;
    return name.equals(o != null ? o : Selected.NAME);
  }

  public static boolean active(Mutant mutant) {
    return active(mutant.name());
  }

  /**
   * Runs {@code body} with {@code mutant} active in this JVM (tests that show their
   * scenario catches the mutant). Only mutants read when they act, not those fixed at
   * class loading, can be switched this way. Not for concurrent tests. Not checked against
   * {@link #all()}: a module's tests may run a mutant of its code that only a system in
   * another module lists (k2's DcCache and PaRiS*'s {@code paris-shared-pins}).
   */
  public static <T> T runWith(Mutant mutant, java.util.function.Supplier<T> body) {
    override = mutant.name();
    try {
      return body.get();
    } finally {
      override = null;
    }
  }
}
