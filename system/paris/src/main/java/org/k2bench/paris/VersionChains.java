package org.k2bench.paris;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.data.Row;

/**
 * A PaRiS server's items (PaRiS paper §IV-A): per key, the installed versions in version
 * order, each version a commit time with the coordinator's node id in its low bits, so
 * versions of one commit time are totally ordered as the paper orders them (timestamp,
 * then transaction). A read at snapshot {@code s} returns the newest version whose commit
 * time is at most {@code s} (Alg. 3 lines 4-7); a read of the latest returns the newest
 * (NoCC, §V). Last-writer-wins: a version older than the newest is still inserted in order,
 * so snapshot reads see it where it belongs. Garbage collection (§IV-B) keeps, per key, the
 * newest version at or below the oldest snapshot any transaction may still read ({@code
 * sOld}) and every newer one; it runs on a key when the key is written. Not thread-safe: a
 * server's thread owns it.
 */
final class VersionChains {
  /** One installed version. */
  record Version(long version, Row value, long installedMs) {}

  /** The empty row every key has before it is written (version 0). */
  static final Version INITIAL = new Version(0, Row.getDefaultInstance(), 0);

  /** A version read, with how long ago a newer one was installed here (0 if none). */
  record Read(Version version, double stalenessMs) {}

  private final Map<String, List<Version>> chains = new HashMap<>();
  /** Per key, the newest version garbage collection removed (absent: none). */
  private final Map<String, Long> collectedUpTo = new HashMap<>();
  private long removed;

  /** Installs a version; false if this exact version is already here (a duplicate delivery). */
  boolean install(String key, long version, Row value, long nowMs, long sOld) {
    List<Version> c = chains.computeIfAbsent(key, k -> new ArrayList<>(2));
    int i = c.size();
    while (i > 0 && c.get(i - 1).version() > version) {
      i--;
    }
    if (i > 0 && c.get(i - 1).version() == version) {
      return false;
    }
    c.add(i, new Version(version, value, nowMs));
    gc(key, c, sOld);
    return true;
  }

  /**
   * The newest version with commit time at most {@code snapshot} (the initial row if none was
   * ever written), or null if garbage collection removed the versions that snapshot reads (a
   * snapshot older than S_old or the GC window): the caller answers with an error, never
   * with a wrong value.
   */
  Read at(String key, long snapshot, long nowMs) {
    List<Version> c = chains.get(key);
    if (c == null) {
      return new Read(INITIAL, 0);
    }
    long bound = LamportClock.timestamp(snapshot, 0xFFFF);
    for (int i = c.size() - 1; i >= 0; i--) {
      if (c.get(i).version() <= bound) {
        return new Read(c.get(i), i == c.size() - 1 ? 0 : Math.max(0, nowMs - c.get(i + 1).installedMs()));
      }
    }
    Long collected = collectedUpTo.get(key);
    if (collected != null) {
      return null;
    }
    return new Read(INITIAL, Math.max(0, nowMs - c.get(0).installedMs()));
  }

  /** The newest version (NoCC). */
  Read latest(String key) {
    List<Version> c = chains.get(key);
    return new Read(c == null ? INITIAL : c.get(c.size() - 1), 0);
  }

  /**
   * Drops the versions older than the newest one at or below {@code sOld}: no transaction
   * that starts from now on reads them (its snapshot is at least the UST, which is at least
   * sOld), and none running does (sOld is below each running transaction's snapshot).
   */
  private void gc(String key, List<Version> c, long sOld) {
    long bound = LamportClock.timestamp(sOld, 0xFFFF);
    int keep = 0; // index of the newest version at or below the bound
    for (int i = c.size() - 1; i >= 0; i--) {
      if (c.get(i).version() <= bound) {
        keep = i;
        break;
      }
    }
    if (keep > 0) {
      collectedUpTo.put(key, c.get(keep - 1).version());
      c.subList(0, keep).clear();
      removed += keep;
    }
  }

  /** Versions garbage-collected so far. */
  long removed() {
    return removed;
  }

  /** Versions kept, over all keys. */
  long kept() {
    long n = 0;
    for (List<Version> c : chains.values()) {
      n += c.size();
    }
    return n;
  }
}
