package org.k2bench.core.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.k2bench.core.store.MultiVersionStore.Applied;
import org.k2bench.core.store.MultiVersionStore.VersionView;

class MultiVersionStoreTest {
  final AtomicLong ms = new AtomicLong(1_000_000);
  final AtomicBoolean replica = new AtomicBoolean(true);

  MultiVersionStore<String> store() {
    return new MultiVersionStore<>("", k -> replica.get(), ms::get, 5_000, 15_000, 5_000);
  }

  static List<Long> versions(List<VersionView<String>> views) {
    return views.stream().map(VersionView::version).toList();
  }

  @Test
  void newerVersionsFormAChainWithLvtBeforeTheSuccessorsEvt() {
    MultiVersionStore<String> s = store();
    assertEquals(Applied.VISIBLE, s.commit("k", 1, 100, 110, "a"));
    assertEquals(Applied.VISIBLE, s.commit("k", 2, 200, 210, "b"));
    List<VersionView<String>> v = s.versionsFrom("k", 0, 500);
    assertEquals(List.of(100L, 200L), versions(v), "the initial version, superseded and as old as time, is not offered");
    assertEquals(209, v.get(0).lvt());
    assertEquals(500, v.get(1).lvt(), "the newest is valid until the server's current time");
    assertEquals(List.of(100L, 200L), versions(s.versionsFrom("k", 150, 500)), "valid at or after read_ts");
    assertEquals("a", s.versionAt("k", 209, 500).value());
    assertEquals("b", s.versionAt("k", 210, 500).value());
  }

  /**
   * A hot key's long chain, with versions hidden on the way: every committed version is
   * found (the lookups search the chain, increasing in version), one never committed is
   * not, and the first round from any read_ts offers exactly the versions whose LVT
   * reaches it (it starts its walk part-way through the chain).
   */
  @Test
  void lookupsAndTheFirstRoundAgreeWithTheWholeChainOnALongOne() {
    MultiVersionStore<String> s = store();
    List<Long> committed = new ArrayList<>();
    for (int i = 1; i <= 60; i++) {
      long version = i % 7 == 0 ? 10L * i - 15 : 10L * i; // every 7th is older than its predecessor
      Applied a = s.commit("k", i, version, 10L * i + 5, "v" + version);
      assertEquals(i % 7 == 0 ? Applied.HIDDEN : Applied.VISIBLE, a, "version " + version);
      committed.add(version);
    }
    for (long v : committed) {
      assertTrue(s.isCommitted("k", v), v + " committed");
      assertEquals("v" + v, s.find("k", v).value());
    }
    for (long v : List.of(5L, 11L, 599L, 601L, 10_000L)) {
      assertFalse(s.isCommitted("k", v), v + " never committed");
      assertNull(s.find("k", v));
    }
    List<VersionView<String>> all = s.versionsFrom("k", 0, 1_000);
    assertEquals(52, all.size(), "every visible version is young: all offered from read_ts 0");
    for (long readTs = 0; readTs <= 1_001; readTs++) {
      long from = readTs;
      assertEquals(versions(all.stream().filter(v -> v.lvt() >= from).toList()),
          versions(s.versionsFrom("k", readTs, 1_000)), "read_ts " + readTs);
    }
  }

  @Test
  void anOlderVersionArrivingLateIsHiddenButKeptForRemoteReads() {
    MultiVersionStore<String> s = store();
    s.commit("k", 2, 200, 210, "new");
    assertEquals(Applied.HIDDEN, s.commit("k", 1, 100, 300, "old"));
    assertEquals(List.of(200L), versions(s.versionsFrom("k", 0, 400)));
    assertEquals("old", s.find("k", 100).value(), "replica keeps the value for remote reads");
    assertTrue(s.isCommitted("k", 100));
    assertEquals(Applied.DUPLICATE, s.commit("k", 1, 100, 300, "old"));
  }

  @Test
  void concurrentPendingCommitsWithInvertedEvtsConvergeOnTheLargestVersion() {
    // T2 (version 200) prepared first, T1 (version 100)... committed with EVTs in the opposite order.
    MultiVersionStore<String> s = store();
    s.prepare("k", 2, 50);
    s.prepare("k", 1, 60);
    s.commit("k", 1, 100, 120, "t1");
    s.commit("k", 2, 200, 110, "t2");
    assertEquals(List.of(200L), versions(s.versionsFrom("k", 0, 400)),
        "t1 has a smaller version than t2 which is visible before it: hidden");
    assertEquals("t2", s.latest("k").value());
  }

  @Test
  void concurrentPendingCommitsInsertedInEvtOrderStayAtomic() {
    MultiVersionStore<String> s = store();
    s.prepare("k", 2, 50);
    s.prepare("k", 1, 60);
    s.commit("k", 1, 120, 120, "t1");
    s.commit("k", 2, 110, 110, "t2");
    List<VersionView<String>> v = s.versionsFrom("k", 0, 400);
    assertEquals(List.of(110L, 120L), versions(v), "t2 is visible from its EVT, before t1");
    assertEquals("t2", s.versionAt("k", 115, 400).value());
  }

  @Test
  void pendingTransactionsWithholdValuesTheyMayChange() {
    MultiVersionStore<String> s = store();
    s.commit("k", 1, 100, 100, "a");
    s.commit("k", 2, 200, 200, "b");
    s.prepare("k", 3, 250);
    List<VersionView<String>> v = s.versionsFrom("k", 0, 300);
    assertEquals("a", v.get(0).value(), "valid only before the prepare time: certain");
    assertNull(v.get(1).value(), "newest version may be superseded at EVT > 250");
    assertTrue(v.get(1).withheld());
    assertTrue(s.hasPendingBelow("k", 251));
    assertFalse(s.hasPendingBelow("k", 250), "EVT > prepare time, so reads at <= 250 need not wait");
    AtomicBoolean woke = new AtomicBoolean();
    s.awaitKey("k", () -> !s.hasPendingBelow("k", 300), () -> woke.set(true));
    assertFalse(woke.get());
    s.commit("k", 3, 300, 260, "c");
    assertTrue(woke.get(), "commit wakes waiters");
    assertEquals("c", s.versionAt("k", 280, 400).value());
  }

  @Test
  void dependencyChecksAreExact() {
    MultiVersionStore<String> s = store();
    s.commit("k", 2, 300, 300, "newer, concurrent");
    assertFalse(s.isCommitted("k", 200), "a newer version does not satisfy a dependency on 200");
    s.commit("k", 1, 200, 310, "dep");
    assertTrue(s.isCommitted("k", 200));
    assertTrue(s.isCommitted("never-written", 0), "the initial version is everywhere");
  }

  @Test
  void collectingANewerVersionDoesNotSatisfyAnOlderDependencyStillOnItsWay() {
    // A partition holds back version 200 (from one datacenter) longer than the GC window,
    // while versions 300 and 400 (from others) arrive and 300 is collected.
    replica.set(false);
    MultiVersionStore<String> s = store();
    s.commit("k", 3, 300, 300, "c");
    s.commit("k", 4, 400, 400, "d");
    ms.addAndGet(6_000);
    s.commit("k", 5, 500, 500, "e");
    assertTrue(s.wasCollected("k", 300), "300 was superseded 6 s ago: collected");
    assertTrue(s.isCommitted("k", 300), "a collected version still counts as committed");
    assertFalse(s.isCommitted("k", 200), "200 never arrived: its dependents must keep waiting");
    assertTrue(org.k2bench.core.testing.Mutants.runWith(org.k2bench.core.testing.Mutants.DEP_CHECK_GC_WATERMARK,
        () -> s.isCommitted("k", 200)), "the watermark shortcut passes it: the bug this test catches");
    AtomicBoolean satisfied = new AtomicBoolean();
    s.awaitKey("k", () -> s.isCommitted("k", 200), () -> satisfied.set(true));
    s.commit("k", 2, 200, 600, "late");
    assertTrue(satisfied.get(), "the held-back version arrives (hidden) and satisfies the dependency");
  }

  @Test
  void gcKeepsTheVersionAPendingTransactionWillBeComparedWith() {
    // A cold key's old version 500; two transactions pend on it. The one with the larger
    // version commits first (EVT 600); the other, version 400, commits later at EVT 550.
    // The apply rule hides 400 behind 500 only if 500 is still there to compare with.
    replica.set(false);
    MultiVersionStore<String> s = store();
    s.commit("k", 1, 500, 500, "v500");
    ms.addAndGet(6_000); // 500 is older than the window and nobody read it
    s.prepare("k", 7, 510);
    s.prepare("k", 8, 520);
    s.commit("k", 8, 900, 600, "v900");
    assertEquals(Applied.HIDDEN, s.commit("k", 7, 400, 550, "v400"), "older than 500, which EVT 550 follows");
    assertFalse(versions(s.versionsFrom("k", 0, 700)).contains(400L), "400 is never visible");
    assertEquals(900, s.versionAt("k", 650, 700).version());
  }

  @Test
  void waitsWithADeadlineExpireAndOthersKeepWaiting() {
    MultiVersionStore<String> s = store();
    s.prepare("k", 9, 50);
    AtomicBoolean ran = new AtomicBoolean();
    AtomicBoolean expired = new AtomicBoolean();
    AtomicBoolean patient = new AtomicBoolean();
    s.awaitKey("k", () -> !s.hasPendingBelow("k", 100), () -> ran.set(true), ms.get() + 1_000,
        () -> expired.set(true));
    s.awaitKey("k", () -> !s.hasPendingBelow("k", 100), () -> patient.set(true));
    assertEquals(2, s.waiterCount());
    s.commit("k", 1, 10, 10, "unrelated commit re-evaluates, still pending");
    assertEquals(2, s.waiterCount());
    assertEquals(0, s.expireWaiters(ms.get() + 999));
    assertEquals(1, s.expireWaiters(ms.get() + 1_000));
    assertTrue(expired.get());
    assertFalse(ran.get(), "an expired wait never runs its action");
    assertEquals(1, s.waiterCount());
    s.commit("k", 9, 90, 90, "the pending one commits");
    assertTrue(patient.get());
    assertFalse(ran.get());
    assertEquals(0, s.waiterCount());
  }

  /** An expiry answers its asker, who may read the counters at once: they are counted first. */
  @Test
  void expiriesAreCountedBeforeAnyOnExpireRuns() {
    MultiVersionStore<String> s = store();
    s.prepare("k", 9, 50);
    AtomicInteger counted = new AtomicInteger();
    List<Integer> seenByExpiries = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      s.awaitKey("k", () -> !s.hasPendingBelow("k", 100), () -> { }, ms.get() + 1_000,
          () -> seenByExpiries.add(counted.get()));
    }
    assertEquals(2, s.expireWaiters(ms.get() + 1_000, counted::addAndGet));
    assertEquals(List.of(2, 2), seenByExpiries, "each expiry ran after both were counted");
  }

  @Test
  void gcRemovesOldSupersededVersionsButKeepsTheNewest() {
    replica.set(false);
    MultiVersionStore<String> s = store();
    s.commit("k", 1, 100, 100, "a");
    s.commit("k", 2, 200, 200, "b");
    ms.addAndGet(4_000);
    s.commit("k", 3, 300, 300, "c");
    assertEquals(3, s.visibleCount("k"), "100 and 200 are younger than the window; the initial version is not");
    ms.addAndGet(6_000);
    s.commit("k", 4, 400, 400, "d");
    assertEquals(List.of(400L), versions(s.versionsFrom("k", 0, 500)),
        "300 was written 6 s ago: older than the window, though superseded only now (§IV-A: age)");
    assertTrue(s.isCommitted("k", 100), "collected versions still count as committed");
  }

  @Test
  void aFirstRoundReadProtectsTheVersionAndItsSuccessorsForTheTimeout() {
    replica.set(false);
    MultiVersionStore<String> s = store();
    s.commit("k", 1, 100, 100, "a");
    s.commit("k", 2, 200, 200, "b");
    ms.addAndGet(4_000);
    assertEquals(List.of(100L, 200L), versions(s.versionsFrom("k", 150, 250)), "round one reads 100 and 200");
    ms.addAndGet(3_000); // 7 s after being superseded, 3 s after the read
    s.commit("k", 3, 300, 300, "c");
    assertNotNull(s.versionAt("k", 150, 400), "an in-flight transaction may still ask for time 150");
    assertEquals("a", s.versionAt("k", 150, 400).value());
    ms.addAndGet(2_500); // the read's protection lapsed
    s.commit("k", 4, 400, 400, "d");
    assertNull(s.versionAt("k", 150, 500));
  }

  @Test
  void roundOneOffersNoVersionSupersededLongerThanTheWindow() {
    replica.set(false);
    MultiVersionStore<String> s = store();
    s.commit("k", 1, 100, 100, "a");
    s.commit("k", 2, 200, 200, "b");
    ms.addAndGet(4_000);
    s.versionsFrom("k", 0, 250); // protects 0 and 100
    ms.addAndGet(2_000);
    assertEquals(List.of(200L), versions(s.versionsFrom("k", 0, 250)),
        "expired versions are not offered even while protected, so readers move forward");
  }

  @Test
  void replicaServersKeepSupersededVersionsLongerForRemoteReads() {
    MultiVersionStore<String> s = store();
    s.commit("k", 1, 100, 100, "a");
    s.commit("k", 2, 200, 200, "b");
    ms.addAndGet(10_000);
    s.commit("k", 3, 300, 300, "c");
    assertEquals("a", s.find("k", 100).value(), "within replica retention");
    ms.addAndGet(25_000);
    s.commit("k", 4, 400, 400, "d");
    assertNull(s.find("k", 100));
  }

  @Test
  void stalenessIsTimeSinceANewerVersionWasWrittenHere() {
    MultiVersionStore<String> s = store();
    s.commit("k", 1, 100, 100, "a");
    ms.addAndGet(1_000);
    s.commit("k", 2, 200, 200, "b");
    ms.addAndGet(250);
    List<VersionView<String>> v = s.versionsFrom("k", 150, 300);
    assertEquals(250.0, v.get(0).stalenessMs());
    assertEquals(0.0, v.get(1).stalenessMs());
  }
}
