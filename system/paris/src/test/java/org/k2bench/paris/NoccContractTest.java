package org.k2bench.paris;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.SystemContractTest;
import org.k2bench.core.testing.TestOptions;

/**
 * NoCC, the PaRiS paper's negative control (§V), under the guarantee every causally consistent
 * system keeps: no write loses to a value it follows. It passes SystemContractTest's three
 * scenarios here: they set the older value's writer's clock ahead by keeping a session busy,
 * which moves a Lamport clock (K2, RAD, PaRiS*) but not a hybrid one by more than a fraction
 * of a ms (256 events per ms), and every server of this JVM reads one wall clock, so a later
 * write gets a later version anyway. With one datacenter's clocks ahead, as NTP allows, NoCC
 * loses the write, because its cohorts propose "just their clock value + 1" with no
 * adjustment for what the writer read (§V (v)); PaRiS, whose proposals exceed the snapshot
 * and the session's last commit (Alg. 3 line 10), keeps it.
 */
class NoccContractTest extends SystemContractTest {
  /**
   * NoCC loses the write only while "first"'s version, TYO's clock when it wrote, stays above
   * SG's clock when "second" is written; a hybrid clock pushed ahead stalls there until wall
   * time catches up, so the skew must outlast the first write and its replication even on a
   * loaded CI machine (1 s did not). PaRiS waits until its UST passes the skew, so it gets 1 s.
   */
  static final long NOCC_AHEAD_MS = 60_000;
  static final long PARIS_AHEAD_MS = 1_000;

  @Override
  protected StoreSystem system() {
    return new NoccSystem();
  }

  /**
   * A writer in CA writes k (replicated at TYO and SG) at TYO, whose clocks run aheadMs ahead; a
   * session in VA reads that value and writes k at SG (VA's preferred replica of k, the one CA
   * does not prepare at). What VA's session, and SG's, read afterwards.
   */
  static List<String> readAfterOverwrite(StoreSystem system, long aheadMs) {
    try (LocalCluster c = Clusters.start(system, TestOptions.defaults())) {
      String k = Cast.farPreferring(c.placement(), "k", CA, TYO, new java.util.ArrayList<>());
      long ahead = LamportClock.hybridCounter(System.currentTimeMillis() + aheadMs);
      for (int shard = 0; shard < c.topology().serversPerDc(); shard++) {
        c.server(TYO, shard).endpoint().clock().observeCounter(ahead);
      }
      c.client(CA).write(k, row("first"));
      KvClient follower = c.client(VA);
      Clusters.awaitValue(follower, k, "first", 10_000); // PaRiS: once the UST reaches TYO's clock
      follower.write(k, row("second")); // causally after "first"
      // Until both see "second", for at most 3 s: replication takes a 68 ms round trip, and
      // PaRiS's snapshot (UST) lags it by its gossip rounds, longer on a loaded machine. A
      // write NoCC lost stays lost (TYO's clock is a minute ahead), so "first" all along.
      KvClient sg = c.client(Clusters.SG);
      long end = System.currentTimeMillis() + 3_000;
      List<String> seen;
      do {
        Clusters.sleep(50);
        seen = List.of(str(follower.readTxn(List.of(k)).rows().get(k)), str(sg.readTxn(List.of(k)).rows().get(k)));
      } while (!seen.equals(List.of("second", "second")) && System.currentTimeMillis() < end);
      System.out.println(system.name() + " after first (TYO " + aheadMs + " ms ahead) then second: " + seen);
      return seen;
    }
  }

  @Test
  void withOneDatacentersClocksAheadNoccLosesAWriteThatFollowsTheValueItOverwrites() {
    assertEquals(List.of("first", "first"), readAfterOverwrite(new NoccSystem(), NOCC_AHEAD_MS),
        "the acknowledged write got a lower version than the value it read, and last-writer-wins drops it");
    assertEquals(List.of("second", "second"), readAfterOverwrite(new ParisSystem(), PARIS_AHEAD_MS), "PaRiS keeps it");
  }
}
