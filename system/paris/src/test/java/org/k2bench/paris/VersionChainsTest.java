package org.k2bench.paris;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.data.Row;
import org.k2bench.core.testing.Clusters;

/** Snapshot reads over a key's versions, and garbage collection below S_old. */
class VersionChainsTest {
  static long v(long commitTime, int coordinator) {
    return LamportClock.timestamp(commitTime, coordinator);
  }

  static String at(VersionChains c, long snapshot) {
    VersionChains.Read r = c.at("k", snapshot, 0);
    return r == null ? null : Clusters.str(r.version().value());
  }

  @Test
  void aSnapshotReadsTheNewestVersionAtOrBelowItInCommitTimeThenCoordinatorOrder() {
    VersionChains c = new VersionChains();
    c.install("k", v(10, 2), Clusters.row("a"), 0, 0);
    c.install("k", v(20, 1), Clusters.row("c"), 0, 0);
    c.install("k", v(20, 0), Clusters.row("b"), 0, 0); // arrives late, same commit time: ordered by coordinator
    assertFalse(c.install("k", v(20, 0), Clusters.row("b"), 0, 0), "a duplicate delivery");
    assertEquals("", at(c, 9), "before any write: the initial row");
    assertEquals("a", at(c, 19));
    assertEquals("c", at(c, 20), "the newest of commit time 20");
    assertEquals("c", Clusters.str(c.latest("k").version().value()));
  }

  @Test
  void collectionKeepsTheNewestVersionAtSOldAndRefusesOlderSnapshots() {
    VersionChains c = new VersionChains();
    for (int t = 1; t <= 5; t++) {
      c.install("k", v(10 * t, 0), Clusters.row("v" + t), 0, 0);
    }
    c.install("k", v(60, 0), Clusters.row("v6"), 0, 35); // S_old 35: v1 and v2 go, v3 (30) stays
    assertEquals(2, c.removed());
    assertEquals(4, c.kept());
    assertEquals("v3", at(c, 35), "what a snapshot at S_old reads is still there");
    assertEquals("v3", at(c, 30));
    assertNull(at(c, 25), "below what was collected: no wrong value, an error");
    assertEquals("v6", at(c, 100));
  }
}
