package org.k2bench.karma;

import java.util.List;
import java.util.Set;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerNode;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.SystemOption;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.transport.Transport;

/**
 * What Karma and COPS-PR share as systems: ring placement, puts buffered at the client and
 * propagated to every ring in causal order, Eiger's get-transactions inside one ring (§4.5:
 * two rounds at most, no write-only transactions to wait for), and no write-only
 * transactions (§4.5: "not worth the complexity").
 */
abstract class KarmaFamily implements StoreSystem {
  private final Mode mode;

  KarmaFamily(Mode mode) {
    this.mode = mode;
  }

  @Override
  public String name() {
    return mode.systemName;
  }

  @Override
  public String paper() {
    return "karma";
  }

  @Override
  public int maxWanRounds() {
    return 2;
  }

  @Override
  public boolean writeOnlyTransactions() {
    return false;
  }

  @Override
  public Set<Placement.Scheme> placements() {
    return Set.of(Placement.Scheme.RINGS);
  }

  @Override
  public List<SystemOption> options() {
    return mode == Mode.KARMA
        ? List.of(KarmaOptions.DC_CACHE, KarmaOptions.CACHE_LEASE_MS, KarmaOptions.NOTIFY_AFTER_MS,
            KarmaOptions.LATENCY_PROBE_MS, KarmaOptions.WRITE_BUFFER_ENTRIES, KarmaOptions.DEAD_RING_AFTER_TIMEOUTS)
        : List.of(KarmaOptions.WRITE_BUFFER_ENTRIES, KarmaOptions.DEAD_RING_AFTER_TIMEOUTS);
  }

  @Override
  public ServerNode startServer(Transport transport, int serverId, ServerOptions options) {
    return new KarmaServer(mode, transport, serverId, options);
  }

  @Override
  public KvClient newClient(Transport transport, int clientId, int dc, ServerOptions options) {
    return new KarmaClient(mode, transport, clientId, dc, options);
  }
}
