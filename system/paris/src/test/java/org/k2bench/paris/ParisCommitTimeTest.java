package org.k2bench.paris;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.testing.TestOptions;

/**
 * A transaction commits at the largest of its cohorts' proposals (PaRiS paper Alg. 2 line
 * 26): every cohort may already have applied, and told its replicas it applied, everything
 * up to its own proposal less one (Alg. 4 lines 6-7, 18-21), so a commit time below one
 * cohort's proposal lands in a past that replica already vouched for, and the UST can pass
 * it before the write is there (Proposition 4, atomic writes).
 *
 * <p>TYO's clocks run 3 s ahead. A writer in CA commits {a1, b1}: a at VA and CA (cohort CA,
 * proposing about now), b at TYO and SG (cohort TYO, proposing about now + 3 s). TYO's
 * servers have heartbeated their clocks to SG, which counts them as installed up to about
 * now + 3 s; then TYO's link to SG (that direction only) is slowed by 600 ms, so b1 reaches
 * SG that late. A reader in VA reads a locally and b at SG (VA's preferred replica of b:
 * never the one CA prepares at, ParisServer#targets). Committed at TYO's proposal, the
 * transaction is visible once the UST reaches it, 3 s on, with b1 at SG by then; committed
 * at CA's, the UST passes it within tens of ms, and SG serves b0 beside a1 for 600 ms.
 */
class ParisCommitTimeTest {
  static final long AHEAD_MS = 3_000; // "about now" and "ahead" apart by more than a loaded machine stalls
  static final long SLOW_MS = 600;

  /** What the reader saw: reads, those with a1 but b0 or b1 but a0, and whether it saw both new values. */
  record Seen(int reads, int mixed, boolean bothNew, long commitAheadMs) {}

  static Seen scenario() {
    try (LocalCluster c = Clusters.start(new ParisSystem(), TestOptions.defaults())) {
      List<String> used = new ArrayList<>();
      String b = Cast.farPreferring(c.placement(), "b", CA, TYO, used);
      String a = Clusters.key(c.placement(), "a", -1, new int[] {VA, CA}, used);
      KvClient writer = c.client(CA);
      KvClient reader = c.client(VA);
      writer.writeTxn(Map.of(a, row("a0"), b, row("b0")));
      Clusters.awaitValue(reader, a, "a0", 10_000);
      Clusters.awaitValue(reader, b, "b0", 10_000);
      long ahead = LamportClock.hybridCounter(System.currentTimeMillis() + AHEAD_MS);
      for (int shard = 0; shard < c.topology().serversPerDc(); shard++) {
        c.server(TYO, shard).endpoint().clock().observeCounter(ahead);
      }
      Clusters.sleep(50); // TYO's heartbeats (3.4 ms one way) tell SG it installed up to now + 3 s
      c.transport().links().setExtraDelayMs(TYO, SG, SLOW_MS);
      long version = writer.writeTxn(Map.of(a, row("a1"), b, row("b1"))).version();
      long aheadMs = LamportClock.wallMsOf(version) - System.currentTimeMillis();
      int reads = 0;
      int mixed = 0;
      boolean both = false;
      long deadline = System.currentTimeMillis() + 2 * AHEAD_MS + SLOW_MS;
      while (!both && System.currentTimeMillis() < deadline) {
        ReadResult r = reader.readTxn(List.of(a, b));
        boolean newA = str(r.rows().get(a)).equals("a1");
        boolean newB = str(r.rows().get(b)).equals("b1");
        reads++;
        mixed += newA != newB ? 1 : 0;
        both = newA && newB;
        Clusters.sleep(5);
      }
      Seen seen = new Seen(reads, mixed, both, aheadMs);
      System.out.println((Mutants.active(ParisMutants.PARIS_COMMIT_MIN_PROPOSAL) ? "paris-commit-min-proposal: " : "")
          + seen);
      return seen;
    }
  }

  @Test
  void theLargestProposalKeepsATransactionAtomicWhenItsCohortsClocksDisagree() {
    Seen s = scenario();
    assertTrue(s.commitAheadMs() > AHEAD_MS / 2, "committed at TYO's proposal, about 3 s ahead: " + s);
    assertEquals(0, s.mixed(), "never a1 without b1: " + s);
    assertTrue(s.bothNew(), "and the transaction becomes visible once the UST reaches it: " + s);
  }

  @Test
  void committingAtTheSmallestProposalIsCaught() {
    Seen s = Mutants.runWith(ParisMutants.PARIS_COMMIT_MIN_PROPOSAL, ParisCommitTimeTest::scenario);
    assertTrue(s.commitAheadMs() < AHEAD_MS / 2, "committed at CA's proposal, about now: " + s);
    assertTrue(s.mixed() > 0, "the UST passed the commit time while SG had not b1: a1 with b0 " + s);
  }
}
