package org.k2bench.k2;

import java.util.Map;
import org.k2bench.core.data.Row;

/**
 * Values a client session keeps for itself and may read without asking a server. K2 has
 * none ({@link #NONE}): its cache is per datacenter, on the servers. PaRiS* keeps the
 * session's own recent writes (a private cache, K2 §VII-A).
 */
public interface SessionCache {
  SessionCache NONE = new SessionCache() {
    @Override
    public Row get(String key, long version) {
      return null;
    }

    @Override
    public void onWrite(Map<String, Row> writes, long version) {}
  };

  /** The value of exactly this version, if the session holds it. */
  Row get(String key, long version);

  /** The session committed {@code writes} at {@code version}. */
  void onWrite(Map<String, Row> writes, long version);
}
