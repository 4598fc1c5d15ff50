package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.k2bench.core.testing.Mutants;

/**
 * The DC cache's policy (K2 §III-A): capacity in keys, LRU on insertion and on values
 * returned to clients (not on offers), newest versions kept, pinned local writes. Each
 * scenario returns what it observed (null: as it should be), so that the same scenario
 * also shows it catches the version-counting, offer-refreshing mutant the cache replaced,
 * and a cache that never evicts.
 */
class DcCacheTest {
  static final int READER = 7;
  static final int WRITER = 8;

  /** Capacity 2 keys, 2 versions of each: 4 versions fit, a third key evicts one. */
  static String capacityScenario() {
    DcCache<String> c = new DcCache<>(2, 2, false);
    c.put("a", 1, "a1");
    c.put("a", 2, "a2");
    c.put("b", 1, "b1");
    c.put("b", 2, "b2");
    if (c.keys() != 2 || c.versions() != 4) {
      return "two keys with two versions each should fit, got " + c.keys() + " keys, " + c.versions() + " versions";
    }
    if (c.get("a", 1, READER) == null || c.get("b", 2, READER) == null) {
      return "every version of a cached key is kept";
    }
    c.put("c", 1, "c1");
    if (c.keys() != 2) {
      return "a third key must evict one: " + c.keys() + " keys";
    }
    return null;
  }

  /**
   * "a" is offered to readers over and over (get), "b" is returned to a client (touch):
   * inserting "c" evicts "a", the least recently inserted or returned.
   */
  static String evictionOrderScenario() {
    DcCache<String> c = new DcCache<>(2, 1, false);
    c.put("a", 1, "a1");
    c.put("b", 1, "b1");
    c.touch("b");
    for (int i = 0; i < 10; i++) {
      c.get("a", 1, READER); // offered in first rounds, never used
    }
    c.put("c", 1, "c1");
    if (c.get("a", 1, READER) != null) {
      return "offering a version must not refresh it: 'a' should have been evicted";
    }
    if (c.get("b", 1, READER) == null || c.get("c", 1, READER) == null) {
      return "'b' (returned) and 'c' (inserted) stay";
    }
    return null;
  }

  /** Superseded versions of a hot key do not accumulate: the newest N stay. */
  static String newestVersionsScenario() {
    DcCache<String> c = new DcCache<>(10, 1, false);
    for (long v = 1; v <= 5; v++) {
      c.put("hot", v, "v" + v);
      c.get("hot", 1, READER);
    }
    if (c.versions() != 1 || c.get("hot", 5, READER) == null) {
      return "one version per key: only the newest, got " + c.versions() + " versions";
    }
    c.put("hot", 3, "older fetch");
    if (c.get("hot", 3, READER) != null || c.get("hot", 5, READER) == null) {
      return "an older version than the cached one is not inserted";
    }
    return null;
  }

  /**
   * A pinned local write is never evicted, is counted, and becomes evictable when its
   * replicas have it; meanwhile unpinned keys make room for it.
   */
  static String pinningScenario() {
    DcCache<String> c = new DcCache<>(1, 1, false);
    c.putPinned("w", 5, "mine", WRITER);
    c.put("x", 1, "x1"); // over capacity: only x can go
    if (!"mine".equals(c.get("w", 5, READER))) {
      return "K2's cache is shared: any session reads a pinned write";
    }
    if (c.get("x", 1, READER) != null) {
      return "the unpinned key should have been evicted, the pinned one stayed";
    }
    if (c.pinnedVersions() != 1) {
      return "one pinned version, counted " + c.pinnedVersions();
    }
    c.putPinned("w2", 6, "mine too", WRITER);
    if (c.keys() != 2 || c.pinnedKeysOverCapacity() != 1) {
      return "all keys pinned: over capacity by one, and it says so; got " + c.keys() + " keys, "
          + c.pinnedKeysOverCapacity() + " over";
    }
    c.unpin("w", 5);
    c.unpin("w2", 6);
    if (c.pinnedVersions() != 0) {
      return "nothing pinned after unpinning, counted " + c.pinnedVersions();
    }
    if (c.keys() != 1 || c.pinnedKeysOverCapacity() != 0) {
      return "unpinned entries are evicted down to the capacity: " + c.keys() + " keys";
    }
    return null;
  }

  static String observe(Supplier<String> scenario) {
    return scenario.get();
  }

  @Test
  void capacityCountsKeysNotVersions() {
    assertNull(observe(DcCacheTest::capacityScenario));
    assertNotNull(Mutants.runWith(K2Mutants.CACHE_COUNTS_VERSIONS, DcCacheTest::capacityScenario),
        "the version-counting cache fails this");
    assertNotNull(Mutants.runWith(K2Mutants.CACHE_NEVER_EVICTS, DcCacheTest::capacityScenario),
        "the never-evicting cache fails this");
  }

  @Test
  void evictsTheLeastRecentlyInsertedOrReturnedKey() {
    assertNull(observe(DcCacheTest::evictionOrderScenario));
    assertNotNull(Mutants.runWith(K2Mutants.CACHE_COUNTS_VERSIONS, DcCacheTest::evictionOrderScenario),
        "the offer-refreshing cache fails this");
    assertNotNull(Mutants.runWith(K2Mutants.CACHE_NEVER_EVICTS, DcCacheTest::evictionOrderScenario),
        "the never-evicting cache fails this");
  }

  @Test
  void keepsTheNewestVersionsOfAKey() {
    assertNull(observe(DcCacheTest::newestVersionsScenario));
    assertNotNull(Mutants.runWith(K2Mutants.CACHE_COUNTS_VERSIONS, DcCacheTest::newestVersionsScenario));
    assertNotNull(Mutants.runWith(K2Mutants.CACHE_NEVER_EVICTS, DcCacheTest::newestVersionsScenario),
        "the never-evicting cache keeps every superseded version");
  }

  @Test
  void pinnedWritesAreNeverEvictedAreCountedAndBecomeEvictableWhenUnpinned() {
    assertNull(observe(DcCacheTest::pinningScenario));
    assertNotNull(Mutants.runWith(K2Mutants.CACHE_NEVER_EVICTS, DcCacheTest::pinningScenario),
        "the never-evicting cache fails this: nothing makes room, nothing shrinks after unpinning");
  }

  @Test
  void aPinnedVersionIsKeptBesideNewerCachedOnes() {
    DcCache<String> c = new DcCache<>(5, 1, false);
    c.putPinned("k", 5, "local write", WRITER);
    c.put("k", 9, "fetched newer");
    c.put("k", 10, "fetched newest");
    assertEquals("local write", c.get("k", 5, READER), "pinned until its replicas have it");
    assertNull(c.get("k", 9, READER));
    assertEquals("fetched newest", c.get("k", 10, READER));
    c.unpin("k", 5);
    assertNull(c.get("k", 5, READER), "unpinned, it is an older version than the cached newest one");
    c.dropBelow("k", 11);
    assertEquals(0, c.keys(), "versions the store no longer offers are dropped");
  }

  static boolean otherSessionReadsPin() {
    DcCache<String> c = new DcCache<>(0, 1, true);
    c.putPinned("k", 5, "mine", WRITER);
    if (c.get("k", 5, WRITER) == null) {
      throw new AssertionError("the writer reads its own held write");
    }
    return c.get("k", 5, READER) != null;
  }

  @Test
  void privatePinsAreReadableOnlyByTheirWriter() {
    assertFalse(otherSessionReadsPin(), "PaRiS*: another session never reads a held write");
    assertTrue(Mutants.runWith(K2Mutants.PARIS_SHARED_PINS, DcCacheTest::otherSessionReadsPin),
        "the shared-pins mutant does");
    DcCache<String> c = new DcCache<>(0, 1, true);
    c.putPinned("k", 5, "mine", WRITER);
    c.unpin("k", 5);
    assertEquals(0, c.keys(), "no DC cache: an unpinned write is gone");
    c.put("k", 6, "fetched");
    assertNull(c.get("k", 6, READER), "no DC cache: fetched values are not kept");
  }

  @Test
  void rejectsZeroVersionsPerKey() {
    assertThrows(IllegalArgumentException.class, () -> new DcCache<String>(1, 0, false));
  }
}
