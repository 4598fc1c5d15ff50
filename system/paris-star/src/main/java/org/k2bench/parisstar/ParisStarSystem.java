package org.k2bench.parisstar;

import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerNode;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.SystemOption;
import org.k2bench.core.transport.Transport;
import org.k2bench.k2.K2Client;
import org.k2bench.k2.K2Mutants;
import org.k2bench.k2.K2Server;

/**
 * PaRiS* (K2 §VII-A): K2's servers, replication and transactions with no DC
 * cache, and a private cache per client holding the client's own writes for 5 s. A
 * read-only transaction is local only when every non-replica key it reads is in that
 * cache; otherwise it takes exactly one round of non-blocking remote reads to the nearest
 * replica datacenter, as K2's second round does.
 *
 * <p>K2's servers still keep a local write of a non-replica key until its replicas have
 * acknowledged the data (so no remote read waits for it); that is replication state, not
 * a cache, and it lasts one replication round trip.
 */
public final class ParisStarSystem implements StoreSystem {
  public static final long PRIVATE_CACHE_TTL_MS = 5_000;

  /**
   * How long a client's private cache keeps its own writes (K2 §VII-A: 5 s). Shorter than
   * the time a write takes to reach every replica datacenter, a session can miss its own
   * write (the consistency checker reports it); longer keeps more reads local.
   */
  public static final SystemOption PRIVATE_CACHE_TTL = SystemOption.integer("private_cache_ttl_ms",
      PRIVATE_CACHE_TTL_MS, 1, 3_600_000, "how long a client's private cache keeps its own writes, ms (K2 paper: 5000)");

  /**
   * The K2 paper's replica groups, or any per-key table (latency-aware placement): the
   * protocol only asks the placement for a key's replicas and its server in each datacenter.
   */
  @Override
  public java.util.Set<org.k2bench.core.topology.Placement.Scheme> placements() {
    return java.util.Set.of(org.k2bench.core.topology.Placement.Scheme.GROUPS,
        org.k2bench.core.topology.Placement.Scheme.TABLE);
  }

  @Override
  public java.util.List<SystemOption> options() {
    return java.util.List.of(PRIVATE_CACHE_TTL);
  }

  @Override
  public String name() {
    return "paris-star";
  }

  @Override
  public String description() {
    return "PaRiS*: K2 without the DC cache, a private per-client cache of own writes (5 s)";
  }

  @Override
  public int maxWanRounds() {
    return 1; // one round of non-blocking remote reads, or none (§VII-A)
  }

  /**
   * PaRiS commits a transaction's writes of keys not replicated in the client's datacenter
   * at their remote replicas (two-phase commit across datacenters; "PaRiS: Causally
   * Consistent Transactions with Non-blocking Reads and Partial Replication", ICDCS 2019). PaRiS*
   * keeps K2's local commit, so its write latencies are K2's, not PaRiS's.
   */
  public static final String WRITES_NOT_PARIS = "K2's local commit, not PaRiS's: PaRiS commits writes of "
      + "non-local keys at their remote replicas";

  @Override
  public java.util.Map<String, String> notOwnMeasurements() {
    return java.util.Map.of("wot", WRITES_NOT_PARIS, "write", WRITES_NOT_PARIS);
  }

  @Override
  public String label() {
    return "PaRiS*";
  }

  @Override
  public String colour() {
    return "#2ca02c";
  }

  @Override
  public int order() {
    return 2;
  }

  @Override
  public String paper() {
    return "k2"; // the K2 paper's baseline (§VII-A)
  }

  @Override
  public boolean runByDefault() {
    return true;
  }

  /** K2's client: the same second round through its datacenter's servers (K2 §V-C). */
  @Override
  public boolean clientSecondRound() {
    return true;
  }

  /**
   * K2's servers' mutants, and its private pins, which live in K2's {@code DcCache}; not
   * the DC cache's own, since PaRiS* has no DC cache (its pinned writes are all it keeps).
   */
  @Override
  public java.util.List<org.k2bench.core.testing.Mutant> mutants() {
    return K2Mutants.ofK2Servers(K2Mutants.PARIS_SHARED_PINS);
  }

  @Override
  public ServerNode startServer(Transport transport, int serverId, ServerOptions options) {
    return K2Server.start(transport, serverId, options, false);
  }

  @Override
  public KvClient newClient(Transport transport, int clientId, int dc, ServerOptions options) {
    return new K2Client(transport, clientId, dc, options,
        new PrivateCache(options.system().integer(PRIVATE_CACHE_TTL), System::currentTimeMillis));
  }
}
