package org.k2bench.k2;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.k2bench.core.testing.Mutants;

/**
 * A server's share of its datacenter's cache of non-replica values (K2 §III-A): values
 * cached "after fetching" them from a replica datacenter and "for writes of non-replica
 * keys from local clients", with an LRU-like eviction policy, sized in keys (the paper:
 * 5% of all keys per datacenter, split here over the datacenter's servers).
 *
 * <h2>What counts, what refreshes</h2>
 * Capacity counts keys: every cached version of a key counts once, with the key. A key
 * keeps at most {@code versionsPerKey} versions, the newest by version number; an older
 * version than those cached is not inserted. Recency is the key's, and is refreshed when a
 * value of the key is inserted or returned to a client ({@link #touch}); looking a version
 * up ({@link #get}) does not refresh anything, so offering superseded versions to readers
 * does not keep them cached. Versions the store no longer offers are dropped
 * ({@link #dropBelow}).
 *
 * <h2>Pinned entries</h2>
 * A local client's write of a non-replica key is pinned until its replica datacenters
 * have acknowledged the data (K2 §IV-A, constrained topology): pinned versions are never
 * evicted and are counted ({@link #pinnedVersions}); a key with a pinned version counts
 * against the capacity like any other, and a cache whose keys are all pinned may exceed
 * its capacity by as many keys as replication has in flight. With {@code privatePins}
 * (PaRiS*, which has no DC cache) a pinned value is replication state, readable only by
 * the session that wrote it (K2 §VIII: private caches "cannot be shared between clients").
 *
 * <p>Owned by the server thread; not thread-safe.
 */
final class DcCache<V> {
  private static final class Cached<V> {
    final V value;
    /** The writing client while pinned; {@link #UNPINNED} otherwise. */
    int pinnedBy;

    Cached(V value, int pinnedBy) {
      this.value = value;
      this.pinnedBy = pinnedBy;
    }

    boolean pinned() {
      return pinnedBy != UNPINNED;
    }
  }

  private static final int UNPINNED = -2;

  private final int capacity;
  private final int versionsPerKey;
  private final boolean privatePins;
  /** key -> its cached versions (version -> value), least recently used key first. */
  private final LinkedHashMap<String, TreeMap<Long, Cached<V>>> keys = new LinkedHashMap<>(16, 0.75f, false);
  private int pinnedVersions;
  private long evictions;

  /**
   * @param capacity keys (0: no cache; pinned entries are still kept)
   * @param versionsPerKey how many versions of a key to keep, newest first (at least 1)
   * @param privatePins whether pinned values are readable only by their writer
   */
  DcCache(int capacity, int versionsPerKey, boolean privatePins) {
    if (versionsPerKey < 1) {
      throw new IllegalArgumentException("versionsPerKey must be at least 1, got " + versionsPerKey);
    }
    this.capacity = capacity;
    this.versionsPerKey = versionsPerKey;
    this.privatePins = privatePins;
  }

  /**
   * The value of exactly this version as {@code reader} may see it, or null. Does not
   * refresh recency: call {@link #touch} when the value is returned to a client.
   */
  V get(String key, long version, int reader) {
    TreeMap<Long, Cached<V>> vs = keys.get(key);
    Cached<V> c = vs == null ? null : vs.get(version);
    if (c == null) {
      return null;
    }
    if (privatePins && c.pinned() && c.pinnedBy != reader && !Mutants.active(K2Mutants.PARIS_SHARED_PINS)) {
      return null;
    }
    if (Mutants.active(K2Mutants.CACHE_COUNTS_VERSIONS)) {
      touch(key); // the bug: an offer refreshes recency
    }
    if (!c.pinned() && capacity == 0) {
      return null;
    }
    return c.value;
  }

  /** A value of {@code key} was returned to a client: the key becomes most recently used. */
  void touch(String key) {
    TreeMap<Long, Cached<V>> vs = keys.remove(key);
    if (vs != null) {
      keys.put(key, vs);
    }
  }

  /** Caches a value fetched from a replica datacenter (K2 §III-A: "after fetching it"). */
  void put(String key, long version, V value) {
    if (capacity > 0) {
      insert(key, version, new Cached<>(value, UNPINNED));
    }
  }

  /** A local client wrote this non-replica version: cache it, pinned until {@link #unpin}. */
  void putPinned(String key, long version, V value, int writer) {
    insert(key, version, new Cached<>(value, writer));
  }

  private void insert(String key, long version, Cached<V> c) {
    TreeMap<Long, Cached<V>> vs = keys.remove(key);
    if (vs == null) {
      vs = new TreeMap<>();
    }
    Cached<V> old = vs.get(version);
    if (old != null && old.pinned()) {
      keys.put(key, vs);
      return; // already here, pinned
    }
    boolean tooOld = !c.pinned() && unpinnedCount(vs) >= versionsPerKey() && version < newestUnpinned(vs);
    if (!tooOld) {
      vs.put(version, c);
      if (c.pinned()) {
        pinnedVersions++;
      }
      trimVersions(vs);
    }
    if (!vs.isEmpty()) {
      keys.put(key, vs); // most recently used
    }
    evictKeys();
  }

  /** The data reached its replica datacenters: the version becomes an ordinary, evictable one. */
  void unpin(String key, long version) {
    TreeMap<Long, Cached<V>> vs = keys.get(key);
    Cached<V> c = vs == null ? null : vs.get(version);
    if (c == null || !c.pinned()) {
      return;
    }
    c.pinnedBy = UNPINNED;
    pinnedVersions--;
    if (capacity == 0) {
      vs.remove(version);
      if (vs.isEmpty()) {
        keys.remove(key);
      }
      return;
    }
    trimVersions(vs);
    if (vs.isEmpty()) {
      keys.remove(key);
    }
    evictKeys();
  }

  /** Drops the unpinned versions of {@code key} below {@code version} (no longer offered to readers). */
  void dropBelow(String key, long version) {
    TreeMap<Long, Cached<V>> vs = keys.get(key);
    if (vs == null || vs.firstKey() >= version) {
      return;
    }
    vs.headMap(version, false).values().removeIf(c -> !c.pinned());
    if (vs.isEmpty()) {
      keys.remove(key);
    }
  }

  private void trimVersions(TreeMap<Long, Cached<V>> vs) {
    if (Mutants.active(K2Mutants.CACHE_NEVER_EVICTS)) {
      return; // the bug: superseded versions pile up
    }
    int excess = unpinnedCount(vs) - versionsPerKey();
    for (Iterator<Cached<V>> it = vs.values().iterator(); excess > 0 && it.hasNext(); ) {
      if (!it.next().pinned()) {
        it.remove();
        excess--;
      }
    }
  }

  private int versionsPerKey() {
    return Mutants.active(K2Mutants.CACHE_COUNTS_VERSIONS) ? Integer.MAX_VALUE : versionsPerKey;
  }

  /** What the capacity counts: keys (the mutant counts versions). */
  private int size() {
    return Mutants.active(K2Mutants.CACHE_COUNTS_VERSIONS) ? versions() : keys.size();
  }

  /** Evicts least recently used keys without pinned versions until the keys fit. */
  private void evictKeys() {
    if (size() <= capacity || Mutants.active(K2Mutants.CACHE_NEVER_EVICTS)) { // the mutant: the cache only grows
      return;
    }
    for (Iterator<TreeMap<Long, Cached<V>>> it = keys.values().iterator(); size() > capacity && it.hasNext(); ) {
      TreeMap<Long, Cached<V>> vs = it.next();
      if (vs.values().stream().noneMatch(Cached::pinned)) {
        it.remove();
        evictions++;
      }
    }
  }

  private static <V> int unpinnedCount(TreeMap<Long, Cached<V>> vs) {
    int n = 0;
    for (Cached<V> c : vs.values()) {
      if (!c.pinned()) {
        n++;
      }
    }
    return n;
  }

  private static <V> long newestUnpinned(TreeMap<Long, Cached<V>> vs) {
    for (Map.Entry<Long, Cached<V>> e : vs.descendingMap().entrySet()) {
      if (!e.getValue().pinned()) {
        return e.getKey();
      }
    }
    return Long.MIN_VALUE;
  }

  /** Keys with at least one cached version (what the capacity counts). */
  int keys() {
    return keys.size();
  }

  /** Cached versions, pinned ones included. */
  int versions() {
    int n = 0;
    for (TreeMap<Long, Cached<V>> vs : keys.values()) {
      n += vs.size();
    }
    return n;
  }

  /** Local writes still waiting for their replicas' acknowledgements. */
  int pinnedVersions() {
    return pinnedVersions;
  }

  /** Keys above the capacity because all candidates for eviction were pinned (0 normally). */
  int pinnedKeysOverCapacity() {
    return Math.max(0, keys.size() - capacity);
  }

  long evictions() {
    return evictions;
  }

  int capacity() {
    return capacity;
  }
}
