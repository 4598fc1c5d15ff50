package org.k2bench.core.api;

import java.util.Set;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Transport;

/**
 * A bundled system: a server-side protocol plus its client library, found by the launcher
 * through {@link java.util.ServiceLoader}. Adding a system means adding a module with one
 * implementation of this interface; no other system changes.
 */
public interface StoreSystem {
  /** The name used on the command line and in experiment files, e.g. {@code k2}. */
  String name();

  String description();

  /**
   * The most wide-area rounds a read-only transaction takes by design while no fault is in
   * force, which the consistency checker holds the system to ({@link Integer#MAX_VALUE}:
   * no such claim).
   */
  default int maxWanRounds() {
    return Integer.MAX_VALUE;
  }

  /**
   * Measurements of this implementation that do not stand for the system it is named
   * after (operation tag, e.g. {@code wot}, -> why), shown next to them in summaries and
   * reports. Empty when every measurement is the system's own.
   */
  default java.util.Map<String, String> notOwnMeasurements() {
    return java.util.Map.of();
  }

  /**
   * The parameters of this system's protocol that experiments may set
   * ({@code server.options.<system>}), beyond the shared {@link ServerOptions}.
   */
  default java.util.List<SystemOption> options() {
    return java.util.List.of();
  }

  /**
   * Whether its clients run write-only transactions ({@link KvClient#writeTxn}); false for a
   * system whose paper leaves them out (Karma, §4.5), whose {@code writeTxn} then throws.
   * Experiments with write-only transactions refuse to run it.
   */
  default boolean writeOnlyTransactions() {
    return true;
  }

  /**
   * Whether its clients run interactive read-write transactions ({@link KvClient#begin()}).
   * Read-only transactions and single writes every system has.
   */
  default boolean readWriteTransactions() {
    return false;
  }

  /**
   * Whether experiments may drop this system's messages (a partition fault in {@code drop}
   * mode). False where a lost message would break consistency silently rather than fail or
   * stall operations, which a run reports: experiments that drop messages refuse to run it.
   */
  default boolean toleratesMessageLoss() {
    return true;
  }

  /** The clock this system's nodes keep and stamp messages with. */
  default org.k2bench.core.clock.ClockKind clock() {
    return org.k2bench.core.clock.ClockKind.LAMPORT;
  }

  /** The placement schemes this system's protocol is built for. */
  default Set<Placement.Scheme> placements() {
    return Set.of(Placement.Scheme.GROUPS);
  }

  /** A {@link ConfigException} on {@code placement} unless this system runs on the topology's placement. */
  default void requirePlacement(Topology topology) {
    if (!placements().contains(topology.placementScheme())) {
      throw new ConfigException("placement", name() + " does not run on placement: "
          + topology.placementScheme().fileName() + " (it runs on " + placements().stream()
              .map(Placement.Scheme::fileName).sorted().collect(java.util.stream.Collectors.joining(", "))
          + "); choose another system or placement");
    }
  }

  /** The name tables and figures show for it, e.g. {@code K2}. */
  default String label() {
    return name();
  }

  /** Its colour in figures, {@code #rrggbb}; null: the harness picks one from its default cycle. */
  default String colour() {
    return null;
  }

  /** Its position in tables and figures, smaller first (ties by name). */
  default int order() {
    return 1000;
  }

  /** The paper whose evaluation and claims it belongs to ({@code k2}, {@code paris}, {@code karma}); null: none. */
  default String paper() {
    return null;
  }

  /** Whether an experiment file that names no systems runs it. */
  default boolean runByDefault() {
    return false;
  }

  /**
   * Whether a datacenter cache serves reads of keys the datacenter does not replicate
   * (K2 §III-A), which placement (its cache term) and placement reports then account for.
   */
  default boolean dcCache() {
    return false;
  }

  /**
   * Whether the client runs a read-only transaction's second round itself, through its
   * datacenter's servers, which fetch the keys without a value remotely (K2 §V-C, Fig. 5):
   * placement reports charge a client redirected to another datacenter that hop twice.
   */
  default boolean clientSecondRound() {
    return false;
  }

  /** Whether it claims causal consistency, so the checker's violations are its bugs (false: a negative control). */
  default boolean causal() {
    return true;
  }

  /**
   * Its own threads for the CPU accounting ({@code k2bench/cpu.py}): category label ->
   * regular expression searched in thread names as {@code /proc} shows them (cut to 15
   * characters). The harness matches with Python's {@code re}: keep to syntax both share.
   */
  default java.util.Map<String, String> threadCategories() {
    return java.util.Map.of();
  }

  /**
   * The deliberately broken variants it honours (a run spec's {@code testing.mutant}): every one whose
   * broken code path it runs, core's ({@link org.k2bench.core.testing.Mutants#SHARED})
   * included. The harness learns the mutant names, and which system each breaks, from these.
   */
  default java.util.List<org.k2bench.core.testing.Mutant> mutants() {
    return java.util.List.of();
  }

  ServerNode startServer(Transport transport, int serverId, ServerOptions options);

  KvClient newClient(Transport transport, int clientId, int dc, ServerOptions options);
}
