package org.k2bench.rad;

import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerNode;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.testing.Mutant;
import org.k2bench.core.testing.Mutants;
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
  public String label() {
    return "RAD";
  }

  @Override
  public String colour() {
    return "#d62728";
  }

  @Override
  public int order() {
    return 3;
  }

  @Override
  public String paper() {
    return "k2"; // the K2 paper's baseline (§VII-A)
  }

  @Override
  public boolean runByDefault() {
    return true;
  }

  /**
   * Its read-only transactions' second round, and core's code it runs: write-only
   * transactions with dependency checks, one-hop dependencies, the retransmitter.
   */
  @Override
  public java.util.List<Mutant> mutants() {
    return java.util.List.of(RadMutants.RAD_SKIP_SECOND_ROUND, Mutants.SKIP_DEPENDENCY_CHECKS,
        Mutants.DEP_CHECK_GC_WATERMARK, Mutants.DEPS_MAX_PER_KEY, Mutants.NO_RETRANSMISSION);
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
