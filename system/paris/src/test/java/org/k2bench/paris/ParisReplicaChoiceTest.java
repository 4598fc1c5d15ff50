package org.k2bench.paris;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.SystemOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.TestOptions;

/**
 * Which remote replica a datacenter reads a partition from and prepares at: by default the
 * datacenter's preferred one, round-robin over datacenters (the PaRiS paper's evaluation,
 * §V), even when the other replica is nearer; with nearest_replica, the nearest. From VA, of
 * a partition at TYO (162 ms) and SG (243 ms), keys whose preferred replica from VA is SG.
 */
class ParisReplicaChoiceTest {
  static final int READS = 10;

  /**
   * The slices TYO and SG served for VA's reads of keys whose preferred replica from VA is SG,
   * then the commits of VA's writes to them at TYO and at SG as cohorts.
   */
  static List<Long> served(boolean nearest) {
    ParisSystem system = new ParisSystem();
    ServerOptions options = TestOptions.defaults().withSystemOptions(
        SystemOptions.parse(system, Map.of("nearest_replica", Boolean.toString(nearest)), "server.options.paris."));
    try (LocalCluster c = Clusters.start(system, options)) {
      List<String> used = new ArrayList<>();
      List<String> keys = new ArrayList<>();
      for (int i = 0; i < READS; i++) {
        keys.add(Cast.farPreferring(c.placement(), "sgFirst" + i, VA, SG, used));
      }
      KvClient reader = c.client(VA);
      long tyo = c.stat(TYO, "slices_read");
      long sg = c.stat(SG, "slices_read");
      for (String k : keys) {
        assertEquals(1, reader.readTxn(List.of(k)).rows().size());
      }
      long tyoCommits = c.stat(TYO, "cohort_commits");
      long sgCommits = c.stat(SG, "cohort_commits");
      for (String k : keys) {
        reader.writeTxn(Map.of(k, Clusters.row("w")));
      }
      long deadline = System.currentTimeMillis() + 5_000; // the last commit decision is one-way
      while (c.stat(TYO, "cohort_commits") - tyoCommits + c.stat(SG, "cohort_commits") - sgCommits < READS
          && System.currentTimeMillis() < deadline) {
        Clusters.sleep(20);
      }
      return List.of(c.stat(TYO, "slices_read") - tyo, c.stat(SG, "slices_read") - sg,
          c.stat(TYO, "cohort_commits") - tyoCommits, c.stat(SG, "cohort_commits") - sgCommits);
    }
  }

  @Test
  void readsAndPreparesGoToThePreferredReplicaEvenWhenTheOtherIsNearer() {
    assertEquals(List.of(0L, (long) READS, 0L, (long) READS), served(false));
  }

  @Test
  void withNearestReplicaReadsAndPreparesGoToTheNearestOne() {
    assertEquals(List.of((long) READS, 0L, (long) READS, 0L), served(true));
  }
}
