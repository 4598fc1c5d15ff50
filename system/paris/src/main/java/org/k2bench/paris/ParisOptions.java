package org.k2bench.paris;

import org.k2bench.core.api.SystemOption;

/** The options the three systems declare (server.options.<system>.<name>). */
final class ParisOptions {
  private ParisOptions() {}

  /**
   * Δ_R: how often a server applies its committed transactions, replicates them and sends a
   * heartbeat (Alg. 4 line 5). The paper gives no value; 5 ms, its stabilization period.
   */
  static final SystemOption REPLICATION_MS = SystemOption.integer("replication_interval_ms", 5, 1, 10_000,
      "how often a server applies, replicates and heartbeats (the paper's Δ_R; it gives no value), ms");

  /**
   * Where a client's transactions are coordinated: false, always the server it is co-located
   * with (the paper's evaluation, §V); true, the next server of its datacenter for each
   * transaction (§IV-B has the client pick a coordinator at random per transaction; taking
   * the next one makes two consecutive transactions never share one).
   */
  static final SystemOption ROTATE_COORDINATOR = SystemOption.flag("rotate_coordinator", false,
      "coordinate each transaction at the next server of the client's datacenter (the paper's §IV-B picks one "
          + "at random) instead of always the co-located one (its evaluation)");

  /**
   * Which remote replica of a partition a datacenter reads from and prepares at first: false,
   * its preferred one, assigned round-robin over the datacenters to balance load (the paper's
   * evaluation, §V); true, the nearest by round-trip time (as PaRiS* and K2 pick it). For
   * measuring what the paper's choice costs in latency against the nearest replica.
   */
  static final SystemOption NEAREST_REPLICA = SystemOption.flag("nearest_replica", false,
      "read from and prepare at a partition's nearest remote replica instead of the datacenter's preferred "
          + "one, assigned round-robin (the paper's evaluation)");

  /** Δ_G and Δ_U: how often the UST protocol runs (§V: "every 5 milliseconds"). */
  static final SystemOption UST_MS = SystemOption.integer("ust_interval_ms", 5, 1, 10_000,
      "how often the UST is gathered and announced (the paper's Δ_G and Δ_U: 5), ms");

  /**
   * How BPR blocks a read (§V: "a partition blocks a read operation ... until it has applied
   * all local and remote transactions with timestamp up to t"): thread, as its authors' code
   * does (each blocked read holds a thread that looks at the version vector every 500 µs; the
   * paper puts BPR's lower peak down to this "overhead to block/unblock read requests", §V-B);
   * queue, an entry the server thread answers when the snapshot advances (no thread held).
   */
  static final SystemOption BPR_BLOCKING = SystemOption.choice("blocking", "thread", java.util.List.of("thread",
      "queue"), "how a blocked read waits: thread (a polling thread per read, as the paper's authors ran it) or "
      + "queue (answered by the server thread when the snapshot advances)");
}
