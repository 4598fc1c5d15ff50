package org.k2bench.core.txn;

import java.util.LinkedHashSet;
import java.util.Set;
import org.k2bench.core.data.Dep;

/**
 * A session's one-hop dependencies (K2 §III-B, Eiger): its last write and "the writes of
 * all values it has read since that write", as a set of {@code <key, version>} pairs. Two
 * versions of one key are two dependencies: a newer version read later may be concurrent
 * with the older one (written in another datacenter), so it does not stand for the older
 * one's transaction. The initial version 0 is committed everywhere and never a dependency.
 * Not thread-safe: a session's calls are serialized.
 */
public final class OneHopDeps {
  private record KeyVersion(String key, long version) {}

  private final Set<KeyVersion> deps = new LinkedHashSet<>();

  /** The session read {@code version} of {@code key}. */
  public void read(String key, long version) {
    if (version == 0) {
      return;
    }
    if (org.k2bench.core.testing.Mutants.active(org.k2bench.core.testing.Mutants.DEPS_MAX_PER_KEY)) {
      if (deps.stream().anyMatch(d -> d.key().equals(key) && d.version() >= version)) {
        return;
      }
      deps.removeIf(d -> d.key().equals(key)); // the bug: the older version's dependency is lost
    }
    deps.add(new KeyVersion(key, version));
  }

  /** The session wrote: its only dependency is now its write (§III-C). */
  public void wrote(String coordinatorKey, long version) {
    deps.clear();
    read(coordinatorKey, version);
  }

  /** The dependencies as protocol messages. */
  public Iterable<Dep> asDeps() {
    return () -> deps.stream().map(d -> Dep.newBuilder().setKey(d.key()).setVersion(d.version()).build()).iterator();
  }

  public int size() {
    return deps.size();
  }

  public boolean contains(String key, long version) {
    return deps.contains(new KeyVersion(key, version));
  }
}
