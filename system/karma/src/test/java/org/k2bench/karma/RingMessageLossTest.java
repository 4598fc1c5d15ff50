package org.k2bench.karma;

import java.util.List;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.MessageLossContractTest;

/**
 * Karma or COPS-PR on the three rings under a drop partition: the client coordinator's puts
 * are sent until acknowledged already, so every put reaches every ring once healed.
 */
abstract class RingMessageLossTest extends MessageLossContractTest {
  @Override
  protected LocalCluster startCluster(ServerOptions options) {
    return LocalCluster.start(system(), Clusters.ringTopology(2), options.withNumKeys(10_000));
  }

  @Override
  protected boolean drain(KvClient writer, long ms) {
    return ((KarmaClient) writer).drain(ms);
  }

  @Override
  protected List<String> pendingGauges() {
    return List.of("waiting", "dep_waiters", "invalidating_keys", "in_flight_keys");
  }
}
