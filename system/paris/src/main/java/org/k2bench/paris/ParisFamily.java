package org.k2bench.paris;

import java.util.List;
import java.util.Set;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerNode;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.SystemOption;
import org.k2bench.core.clock.ClockKind;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.transport.Transport;

/**
 * What PaRiS, BPR and NoCC share as systems: hybrid logical clocks, interactive read-write
 * transactions, either placement (the PaRiS paper's partitions, or the K2 paper's groups, on
 * which each server also holds one partition), and one wide-area round at most for a
 * transaction's reads (they go to one replica of each partition, in parallel).
 */
abstract class ParisFamily implements StoreSystem {
  private final Mode mode;

  ParisFamily(Mode mode) {
    this.mode = mode;
  }

  @Override
  public String name() {
    return mode.systemName;
  }

  @Override
  public String paper() {
    return "paris";
  }

  @Override
  public int maxWanRounds() {
    return 1;
  }

  @Override
  public boolean readWriteTransactions() {
    return true;
  }

  /**
   * No: replication and heartbeats raise a replica's version clock past whatever came before
   * them, and a cohort holds a prepared transaction until the coordinator's decision arrives
   * (the PaRiS paper assumes reliable FIFO channels, §II-C); a lost Replicate would let the
   * UST pass a version never installed, a lost decision would stop the partition applying.
   */
  @Override
  public boolean toleratesMessageLoss() {
    return false;
  }

  @Override
  public ClockKind clock() {
    return ClockKind.HYBRID;
  }

  @Override
  public Set<Placement.Scheme> placements() {
    return Set.of(Placement.Scheme.GROUPS, Placement.Scheme.PARTITIONS);
  }

  @Override
  public List<SystemOption> options() {
    return switch (mode) {
      case PARIS -> List.of(ParisOptions.REPLICATION_MS, ParisOptions.UST_MS, ParisOptions.ROTATE_COORDINATOR,
          ParisOptions.NEAREST_REPLICA);
      case BPR -> List.of(ParisOptions.REPLICATION_MS, ParisOptions.ROTATE_COORDINATOR, ParisOptions.NEAREST_REPLICA,
          ParisOptions.BPR_BLOCKING);
      case NOCC -> List.of(ParisOptions.REPLICATION_MS, ParisOptions.ROTATE_COORDINATOR, ParisOptions.NEAREST_REPLICA);
    };
  }

  @Override
  public ServerNode startServer(Transport transport, int serverId, ServerOptions options) {
    return new ParisServer(mode, transport, serverId, options);
  }

  @Override
  public KvClient newClient(Transport transport, int clientId, int dc, ServerOptions options) {
    return new ParisClient(mode, transport, clientId, dc, options);
  }
}
