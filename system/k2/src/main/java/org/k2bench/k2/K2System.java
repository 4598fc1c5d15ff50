package org.k2bench.k2;

import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerNode;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.transport.Transport;

/** K2 as a bundled system (registered for {@link java.util.ServiceLoader}). */
public final class K2System implements StoreSystem {
  @Override
  public String name() {
    return "k2";
  }

  @Override
  public String description() {
    return "K2: metadata everywhere, data at f replicas, DC cache, at most one non-blocking wide-area round";
  }

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
  public int maxWanRounds() {
    return 1; // paper §V: at most one round of non-blocking cross-datacenter reads
  }

  @Override
  public String label() {
    return "K2";
  }

  @Override
  public String colour() {
    return "#1f77b4";
  }

  @Override
  public int order() {
    return 1;
  }

  @Override
  public String paper() {
    return "k2";
  }

  @Override
  public boolean runByDefault() {
    return true;
  }

  @Override
  public boolean dcCache() {
    return true; // §III-A: each datacenter caches the values of non-replica keys it fetched or wrote
  }

  @Override
  public boolean clientSecondRound() {
    return true; // §V-C, Fig. 5: the client asks its datacenter's servers again for the keys without a value
  }

  @Override
  public java.util.List<org.k2bench.core.testing.Mutant> mutants() {
    return K2Mutants.ofK2Servers(K2Mutants.CACHE_COUNTS_VERSIONS, K2Mutants.CACHE_NEVER_EVICTS);
  }

  @Override
  public ServerNode startServer(Transport transport, int serverId, ServerOptions options) {
    return K2Server.start(transport, serverId, options, true);
  }

  @Override
  public KvClient newClient(Transport transport, int clientId, int dc, ServerOptions options) {
    return new K2Client(transport, clientId, dc, options, SessionCache.NONE);
  }
}
