package org.k2bench.core.testing;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.k2bench.core.api.RunSpec;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.Systems;
import org.k2bench.core.topology.ConfigException;

/**
 * Deliberately broken protocol variants, for showing that the consistency checker catches
 * real bugs. Test-only: selected by a run's spec ({@code testing.mutant}, from the
 * experiment's; {@link #select}); nothing is broken unless a run asks for it, and every
 * process that runs a mutant says so on stderr.
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

  /** Set by tests in this JVM ({@link #runWith}); wins over the run's selection. */
  private static volatile String override;
  /** The run's mutant ({@link #select}: its spec's {@code testing.mutant}), or null. */
  private static volatile String selected;

  private Mutants() {}

  /** {@link #select(String)} with a run's spec: an unknown mutant is a one-line error naming the spec's field. */
  public static void select(RunSpec spec) {
    try {
      select(spec.testing() == null ? null : spec.testing().mutant());
    } catch (IllegalArgumentException | IllegalStateException e) {
      throw new ConfigException(spec.file() + ": testing.mutant", e.getMessage());
    }
  }

  /**
   * Switches on the mutant a run's spec names ({@code testing.mutant}; null or empty: none),
   * before any system code runs: servers and clients call it with the spec they read. Every
   * process that runs one says so on stderr. Selecting the same mutant again is a no-op (a
   * server JVM's in-process clients read the same spec); another one is an error.
   *
   * @throws IllegalArgumentException naming the known mutants, if {@code name} is none of them
   */
  public static synchronized void select(String name) {
    String m = name == null || name.isEmpty() ? null : name;
    if (java.util.Objects.equals(m, selected)) {
      return;
    }
    if (selected != null) {
      throw new IllegalStateException("this process already runs '" + selected + "', not '" + m + "'");
    }
    Map<String, Mutant> all = all();
    if (!all.containsKey(m)) {
      throw new IllegalArgumentException("unknown mutant '" + m + "'; known: " + all.keySet());
    }
    System.err.println("k2bench: WARNING: running the deliberately broken mutant '" + m + "' (test only)");
    selected = m;
  }

  /** Forgets the run's selection: this package's tests only. */
  static synchronized void clearSelection() {
    selected = null;
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
    return name.equals(o != null ? o : selected);
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
