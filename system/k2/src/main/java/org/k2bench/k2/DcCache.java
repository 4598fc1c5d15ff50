package org.k2bench.k2;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A server's share of its datacenter's cache of non-replica values (K2 §III-A), keyed by
 * (key, version). Least-recently-used eviction over a fixed number of entries.
 *
 * <p>A local write of a non-replica key is <em>pinned</em> until its replica datacenters
 * have acknowledged the data: until then it is the only copy reachable from this
 * datacenter, so evicting it would make a local reader's remote fetch wait. Pinned entries
 * do not count against the capacity and become ordinary entries once unpinned. Owned by
 * the server thread; not thread-safe.
 */
final class DcCache<V> {
  private record Entry(String key, long version) {}

  private final int capacity;
  private final LinkedHashMap<Entry, V> lru;
  private final Map<Entry, V> pinned = new HashMap<>();
  private long hits;
  private long pinnedHits;
  private long misses;

  DcCache(int capacity) {
    this.capacity = capacity;
    this.lru = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Entry, V> eldest) {
        return size() > DcCache.this.capacity;
      }
    };
  }

  V get(String key, long version) {
    Entry e = new Entry(key, version);
    V v = pinned.get(e);
    if (v != null) {
      pinnedHits++;
    } else {
      v = lru.get(e);
    }
    if (v == null) {
      misses++;
    } else {
      hits++;
    }
    return v;
  }

  void put(String key, long version, V value) {
    if (capacity > 0 && !pinned.containsKey(new Entry(key, version))) {
      lru.put(new Entry(key, version), value);
    }
  }

  void putPinned(String key, long version, V value) {
    pinned.put(new Entry(key, version), value);
  }

  /** The data reached its replica datacenters: the entry may now be evicted. */
  void unpin(String key, long version) {
    V v = pinned.remove(new Entry(key, version));
    if (v != null) {
      put(key, version, v);
    }
  }

  int size() {
    return lru.size() + pinned.size();
  }

  /** Local writes still waiting for their replicas' acknowledgements. */
  int pinnedSize() {
    return pinned.size();
  }

  int capacity() {
    return capacity;
  }

  long hits() {
    return hits;
  }

  /** Hits on local writes still waiting for their replicas (a subset of {@link #hits}). */
  long pinnedHits() {
    return pinnedHits;
  }

  long misses() {
    return misses;
  }
}
