package org.k2bench.karma;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.SystemOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.RingPlacement;
import org.k2bench.core.testing.TestOptions;

/** A Karma (or COPS-PR) cluster on the three rings {VA, CA, LDN}, {TYO, SG}, {SP} (matrix / 10), shared by a test class. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class KarmaClusterTest {
  protected LocalCluster cluster;
  protected RingPlacement rings;
  private final List<String> used = new ArrayList<>();

  /** The system under test: Karma unless overridden. */
  protected StoreSystem system() {
    return new KarmaSystem();
  }

  @BeforeAll
  void start() {
    cluster = LocalCluster.start(system(), Clusters.ringTopology(2), TestOptions.defaults().withNumKeys(10_000));
    rings = (RingPlacement) cluster.placement();
  }

  @AfterAll
  void stop() {
    cluster.close();
  }

  @AfterEach
  void heal() {
    cluster.transport().links().clearExtraDelays();
    LatencyMonitor.forget(cluster.transport()); // measured under this test's slowed links
  }

  /** A fresh key whose replicas in rings 0 and 1 are these datacenters. */
  protected String key(String prefix, int ring0, int ring1) {
    return Clusters.key(prefix, k -> rings.replicaInRing(0, k) == ring0 && rings.replicaInRing(1, k) == ring1, used);
  }

  /** A session in {@code dc} inserting a notify-after every {@code notifyAfterMs} while restricted. */
  protected KarmaClient client(int dc, long notifyAfterMs) {
    return (KarmaClient) cluster.client(dc, TestOptions.defaults().withSystemOptions(SystemOptions.parse(
        new KarmaSystem(), Map.of("notify_after_ms", Long.toString(notifyAfterMs)), "options")));
  }
}
