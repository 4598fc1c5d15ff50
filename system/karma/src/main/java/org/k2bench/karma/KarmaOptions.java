package org.k2bench.karma;

import org.k2bench.core.api.SystemOption;

/** The options the two systems declare (server.options.<system>.<name>). */
final class KarmaOptions {
  private KarmaOptions() {}

  /**
   * Whether datacenters cache stable values (§4.3). False gives the paper's Karma-NC (§5
   * "Schemes": Karma without caches, with write buffering), which its congestion experiment
   * (§6.2) compares with COPS-PR.
   */
  static final SystemOption DC_CACHE = SystemOption.flag("dc_cache", true,
      "cache stable values in each datacenter (false: the paper's Karma-NC)");

  /**
   * How long a datacenter cache may serve a value it asked a replica for (from when it
   * asked); a replica counts an invalidation its cache does not acknowledge as done this long
   * after it last served that cache the key (KarmaServer). 0, the default, is the paper's
   * design: no leases, a put completes once every cache that may hold the key acknowledged
   * its invalidation (§4.3). Experiments with faults set one: without it a dead datacenter's
   * cache holds every put of a key it cached from completing (§4.4, "Cache node failure").
   */
  static final SystemOption CACHE_LEASE_MS = SystemOption.integer("cache_lease_ms", 0, 0, 3_600_000,
      "how long a datacenter cache serves a value, from when it asked for it; an unacknowledged invalidation "
          + "counts as done this long after the cache's last fill of the key, ms (0: no leases, the paper's design)");

  /**
   * How often a restricted client that has not written inserts a notify-after (§4.2, "write
   * insertion"); the paper leaves the period to tune. 100 ms, a fraction of its 300-400 ms
   * write-propagation window.
   */
  static final SystemOption NOTIFY_AFTER_MS = SystemOption.integer("notify_after_ms", 100, 1, 600_000,
      "how long a restricted client waits before inserting a notify-after to lift its ring restrictions, ms");

  /**
   * How often a client process measures its round trip to each datacenter, by which its
   * sessions pick the nearest ring in unrestricted mode (§6.2: "background processes
   * continually monitor the delays between DCs, and feed the information to the systems";
   * one monitor per process and datacenter, see LatencyMonitor).
   */
  static final SystemOption LATENCY_PROBE_MS = SystemOption.integer("latency_probe_ms", 500, 10, 600_000,
      "how often a client process measures its round trip to each datacenter to pick the nearest ring, ms");

  /**
   * The most writes of a session on their way to any one ring that is up (its write buffer's
   * size while no ring is down; see {@link #DEAD_RING_AFTER_TIMEOUTS}). A put returns at once while
   * there is room (§4.1.2: the client "is free to proceed"); a session
   * whose puts arrive faster than its propagators deliver them waits for room. The paper's
   * buffer is persistent and its size not given; without a bound a closed-loop client whose
   * reads are local writes faster than one put per ring round trip, and its buffer (and the
   * share of reads it serves) grows without end.
   */
  static final SystemOption WRITE_BUFFER_ENTRIES = SystemOption.integer("write_buffer_entries", 16, 1, 1_000_000,
      "the most puts of a session on their way to a ring that is up; a put waits for room beyond it");

  /**
   * How many RPC timeouts a ring may leave a session's puts unanswered before the session
   * takes it for down (§4.4: a ring with a dead or cut-off datacenter): its queue then no
   * longer counts against the write buffer's bound, and the session writes on, its puts
   * buffered until the ring takes them again (the paper's persistent WB: writes stay
   * available, their completion waits). In RPC timeouts, at least two: on this 2-core machine
   * a put can go unanswered for one RPC timeout at start-up or behind a slow dependency, and
   * taking a ring for down then made every session's buffer grow and most reads restricted
   * (measured, see docs/systems/karma.md).
   */
  static final SystemOption DEAD_RING_AFTER_TIMEOUTS = SystemOption.integer("dead_ring_after_timeouts", 3, 2, 1000,
      "how many RPC timeouts a ring leaves a session's puts unanswered before its queue stops holding up the "
          + "session's writes (they are buffered until it is back)");
}
