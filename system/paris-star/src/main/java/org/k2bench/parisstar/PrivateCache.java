package org.k2bench.parisstar;

import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;
import org.k2bench.core.data.Row;
import org.k2bench.k2.SessionCache;

/**
 * PaRiS*'s per-client private cache (K2 §VII-A): the session's own writes, each kept for
 * 5 s (longer than full PaRiS, which drops a write once the universal stable time passes
 * it, so PaRiS* is slightly optimistic). Only this session reads it. Per key only the
 * newest own write is kept.
 */
public final class PrivateCache implements SessionCache {
  private record Entry(long version, Row value, long writtenAtMs) {}

  private final Map<String, Entry> entries = new HashMap<>();
  private final long ttlMs;
  private final LongSupplier clockMs;

  public PrivateCache(long ttlMs, LongSupplier clockMs) {
    this.ttlMs = ttlMs;
    this.clockMs = clockMs;
  }

  @Override
  public synchronized Row get(String key, long version) {
    Entry e = entries.get(key);
    if (e == null) {
      return null;
    }
    if (clockMs.getAsLong() - e.writtenAtMs >= ttlMs) {
      entries.remove(key);
      return null;
    }
    return e.version == version ? e.value : null;
  }

  @Override
  public synchronized void onWrite(Map<String, Row> writes, long version) {
    long now = clockMs.getAsLong();
    entries.values().removeIf(e -> now - e.writtenAtMs >= ttlMs);
    writes.forEach((k, v) -> entries.put(k, new Entry(version, v, now)));
  }

  public synchronized int size() {
    return entries.size();
  }
}
