package org.k2bench.rad;

import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerNode;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.transport.Transport;

/** RAD, replicas across datacenters: Eiger on the partial-replication layout (K2 §VII-A). */
public final class RadSystem implements StoreSystem {
  @Override
  public String name() {
    return "rad";
  }

  @Override
  public String description() {
    return "RAD: Eiger with each replica split over a group of datacenters; up to three wide-area rounds";
  }

  /**
   * No: a client's sub-request lost for longer than its timeout leaves its keys prepared for
   * good (the coordinator waits for that cohort forever; RAD's paper has no abort rule).
   */
  @Override
  public boolean toleratesMessageLoss() {
    return false;
  }

  @Override
  public ServerNode startServer(Transport transport, int serverId, ServerOptions options) {
    return new RadServer(transport, serverId, options);
  }

  @Override
  public KvClient newClient(Transport transport, int clientId, int dc, ServerOptions options) {
    return new RadClient(transport, clientId, dc, options);
  }
}
