package org.k2bench.core.store;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import java.util.function.IntConsumer;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * The multiversioning framework of K2 §IV-A, shared by every system. Not thread-safe: a
 * server owns one store and touches it only from its own thread.
 *
 * <h2>Versions, EVT and LVT</h2>
 * A committed write has a <em>version</em> (the Lamport timestamp assigned by the
 * datacenter that accepted it) and an <em>EVT</em> (earliest valid time: the logical time
 * at which this datacenter made it visible). The locally visible versions of a key form a
 * chain ordered by EVT; a version is valid from its EVT until just before its successor's
 * EVT (its LVT), and the newest one is valid until the server's current logical time.
 *
 * <h2>Apply rule</h2>
 * Newer versions become visible; an older one arriving later is dropped from local view
 * (K2 §IV-A). Because EVTs are chosen by different coordinators, two write-only
 * transactions pending on one key at the same time can commit with EVT order opposite to
 * version order; so the rule is applied in EVT order: a committed version is visible iff
 * its version is greater than every version with a smaller EVT. This keeps the chain
 * increasing in both version and EVT (so all datacenters converge on the largest version),
 * and inserting into the middle of the chain is safe because that part of the chain lies
 * after the pending transaction's prepare time, which no reader has consumed: round-one
 * reads withhold values there and second-round reads wait for pending transactions.
 *
 * <p>Versions that are committed but not visible are kept as <em>hidden</em>: with their
 * value at replica servers (remote reads may still ask for them) and as metadata only
 * elsewhere (dependency checks ask whether they were committed).
 *
 * <h2>Garbage collection</h2>
 * Lazily on every commit to a key (K2 §IV-A): K2 "keeps a version around if it is not
 * older than 5 s, or this version or any of its earlier versions has been accessed by the
 * first round of a read-only transaction within the past 5 s". A version's age counts from
 * when it was written here (committed); the retention is the GC window, longer at replica
 * servers, where it counts from when a version was superseded: remote reads of other
 * datacenters may ask for it until they learn of its successor, after the replicas. Only a prefix of the chain is removed, so no interval in the middle ever
 * disappears. Round one offers no superseded version older than the GC window, whether or
 * not a read still protects it: that is how sessions that never write "make progress
 * through the garbage collection that safely discards any versions older than 5 s" (§V-B),
 * and why protection by access cannot keep a version alive forever. GC remembers which
 * versions it removed (a sorted array of longs per key), so that a dependency check on a
 * collected version is still answered exactly.
 *
 * <p>A key never written has an implicit initial version 0 with EVT 0 and an empty value,
 * known in every datacenter.
 *
 * @param <V> the value type
 */
public final class MultiVersionStore<V> {

  /** One committed version of a key. */
  public static final class Version<V> {
    final long version;
    final long evt;
    V value;
    final long insertedAtMs;
    long supersededAtMs = -1;
    long lastAccessMs = Long.MIN_VALUE / 2;

    Version(long version, long evt, V value, long insertedAtMs) {
      this.version = version;
      this.evt = evt;
      this.value = value;
      this.insertedAtMs = insertedAtMs;
    }

    public long version() {
      return version;
    }

    public long evt() {
      return evt;
    }

    /** The stored value, or null where this server holds only metadata. */
    public V value() {
      return value;
    }
  }

  /**
   * What a reader sees of one visible version.
   *
   * @param lvt latest valid time: the successor's EVT minus one, or the server's current
   *     logical time for the newest version
   * @param value the value, or null when not stored here or withheld because a pending
   *     write-only transaction may still change this part of the chain
   * @param withheld true if the value must not be used (from here or a cache) because a
   *     pending write-only transaction may still change this part of the chain
   * @param stalenessMs time since a newer version was written in this datacenter, 0 if newest
   */
  public record VersionView<V>(long version, long evt, long lvt, V value, boolean withheld,
      double stalenessMs) {}

  /** Outcome of applying a commit. */
  public enum Applied { VISIBLE, HIDDEN, DUPLICATE }

  private static final class Chain<V> {
    final ArrayList<Version<V>> visible = new ArrayList<>();
    final TreeMap<Long, Version<V>> hidden = new TreeMap<>();
    final Map<Long, Long> pending = new HashMap<>(2);
    /** Versions committed here and since garbage-collected (exact dependency checks). */
    LongSortedSet collected;
    List<Waiter> waiters;
  }

  /** Something waiting for a condition on a key, re-evaluated at every commit to it. */
  private static final class Waiter {
    final BooleanSupplier ready;
    final Runnable action;
    final long deadlineMs;
    final Runnable onExpire;

    Waiter(BooleanSupplier ready, Runnable action, long deadlineMs, Runnable onExpire) {
      this.ready = ready;
      this.action = action;
      this.deadlineMs = deadlineMs;
      this.onExpire = onExpire;
    }
  }

  private static final boolean READ_PENDING_MUTANT =
      org.k2bench.core.testing.Mutants.active(org.k2bench.core.testing.Mutants.READ_PENDING);

  private final Map<String, Chain<V>> chains = new HashMap<>();
  /** Keys with at least one waiter, for {@link #expireWaiters}. */
  private final Set<String> waitedKeys = new HashSet<>();
  private long collectedRecords;
  private final V initialValue;
  private final Predicate<String> isReplicaKey;
  private final LongSupplier clockMs;
  private final long gcWindowMs;
  private final long replicaRetentionMs;
  private final long txnTimeoutMs;
  private long gcRemoved;

  /**
   * @param initialValue the value of the implicit version 0
   * @param isReplicaKey whether this server is a replica server of a key (hidden versions keep values)
   * @param clockMs wall clock in ms (injectable for tests)
   * @param gcWindowMs how long a version is kept after it was written here (paper: 5 s)
   * @param replicaRetentionMs the same at replica servers, for remote reads
   * @param txnTimeoutMs how long a first-round access protects a version (paper: 5 s)
   */
  public MultiVersionStore(V initialValue, Predicate<String> isReplicaKey, LongSupplier clockMs,
      long gcWindowMs, long replicaRetentionMs, long txnTimeoutMs) {
    this.initialValue = initialValue;
    this.isReplicaKey = isReplicaKey;
    this.clockMs = clockMs;
    this.gcWindowMs = gcWindowMs;
    this.replicaRetentionMs = Math.max(gcWindowMs, replicaRetentionMs);
    this.txnTimeoutMs = txnTimeoutMs;
  }

  private Chain<V> chain(String key) {
    return chains.computeIfAbsent(key, k -> {
      Chain<V> c = new Chain<>();
      c.visible.add(new Version<>(0, 0, initialValue, 0));
      return c;
    });
  }

  // ---------------------------------------------------------------- pending transactions

  /**
   * Marks a key pending for a write-only transaction that prepared at logical time
   * {@code prepareTs}. Its EVT will be greater than {@code prepareTs}.
   */
  public void prepare(String key, long txnId, long prepareTs) {
    chain(key).pending.putIfAbsent(txnId, prepareTs); // a repeated prepare keeps the first time
  }

  /** Whether a pending transaction on {@code key} may still commit with EVT at or below {@code ts}. */
  public boolean hasPendingBelow(String key, long ts) {
    Chain<V> c = chains.get(key);
    if (c == null) {
      return false;
    }
    for (long p : c.pending.values()) {
      if (p < ts) {
        return true;
      }
    }
    return false;
  }

  /** The pending transactions on {@code key} that may commit with EVT at or below {@code ts}. */
  public List<Long> pendingBelow(String key, long ts) {
    Chain<V> c = chains.get(key);
    List<Long> out = new ArrayList<>();
    if (c != null) {
      c.pending.forEach((txn, p) -> {
        if (p < ts) {
          out.add(txn);
        }
      });
    }
    return out;
  }

  /** The transactions pending on {@code key}: {txn id, prepare time} each. */
  public List<long[]> pending(String key) {
    Chain<V> c = chains.get(key);
    List<long[]> out = new ArrayList<>();
    if (c != null) {
      c.pending.forEach((txn, p) -> out.add(new long[] {txn, p}));
    }
    return out;
  }

  /** The smallest prepare time of a pending transaction on {@code key}, or Long.MAX_VALUE. */
  public long minPendingPrepare(String key) {
    Chain<V> c = chains.get(key);
    return c == null ? Long.MAX_VALUE : minPending(c);
  }

  public boolean isPending(String key) {
    Chain<V> c = chains.get(key);
    return c != null && !c.pending.isEmpty();
  }

  private static long minPending(Chain<?> c) {
    long min = Long.MAX_VALUE;
    for (long p : c.pending.values()) {
      min = Math.min(min, p);
    }
    return min;
  }

  // ---------------------------------------------------------------- commit (apply rule)

  /**
   * Commits one key of a write-only transaction (clearing its pending mark) and applies
   * the rule described in the class comment. Runs lazy GC on the key and wakes waiters.
   *
   * @param value the value, or null where this server keeps only metadata
   */
  public Applied commit(String key, long txnId, long version, long evt, V value) {
    Chain<V> c = chain(key);
    c.pending.remove(txnId);
    long now = clockMs.getAsLong();
    Applied result = insert(c, version, evt, value, now);
    gc(key, c, now);
    wake(key, c);
    return result;
  }

  private Applied insert(Chain<V> c, long version, long evt, V value, long now) {
    if (contains(c, version)) {
      return Applied.DUPLICATE;
    }
    List<Version<V>> vis = c.visible;
    int pos = vis.size();
    while (pos > 0 && vis.get(pos - 1).evt > evt) {
      pos--;
    }
    Version<V> v = new Version<>(version, evt, value, now);
    if (pos > 0 && vis.get(pos - 1).version > version) {
      v.supersededAtMs = now;
      c.hidden.put(version, v);
      return Applied.HIDDEN;
    }
    if (pos > 0) {
      vis.get(pos - 1).supersededAtMs = now;
    }
    vis.add(pos, v);
    // Later-EVT versions that this one supersedes leave the visible chain.
    for (int i = pos + 1; i < vis.size(); ) {
      Version<V> later = vis.get(i);
      if (later.version < version) {
        vis.remove(i);
        later.supersededAtMs = now;
        c.hidden.put(later.version, later);
      } else {
        i++;
      }
    }
    if (pos + 1 < vis.size()) {
      v.supersededAtMs = now;
    }
    return Applied.VISIBLE;
  }

  private boolean contains(Chain<V> c, long version) {
    return visibleIndex(c, version) >= 0 || c.hidden.containsKey(version);
  }

  /**
   * Where {@code version} is in the visible chain, or a negative number: a binary search,
   * the chain being increasing in version (class comment). A hot key holds every version of
   * the last GC window, and a replicated transaction's checks ask for dozens of keys.
   */
  private static int visibleIndex(Chain<?> c, long version) {
    List<? extends Version<?>> vis = c.visible;
    int lo = 0;
    int hi = vis.size() - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      long v = vis.get(mid).version;
      if (v < version) {
        lo = mid + 1;
      } else if (v > version) {
        hi = mid - 1;
      } else {
        return mid;
      }
    }
    return -1;
  }

  // ---------------------------------------------------------------- reads

  /**
   * First round of a read-only transaction (K2 §V-C): the visible versions valid at or
   * after {@code readTs}, oldest first, each with EVT, LVT, value and staleness. Marks
   * them as read by a first round (GC protection).
   *
   * @param nowTs the server's current logical time, the LVT of the newest version
   */
  public List<VersionView<V>> versionsFrom(String key, long readTs, long nowTs) {
    Chain<V> c = chain(key);
    long now = clockMs.getAsLong();
    long pendingFrom = minPending(c);
    List<Version<V>> vis = c.visible;
    List<VersionView<V>> out = new ArrayList<>(4);
    // Versions before the last one with EVT <= readTs end before readTs (LVT = next EVT - 1):
    // start there instead of walking a hot key's whole window.
    for (int i = Math.max(0, firstEvtAbove(vis, readTs) - 1); i < vis.size(); i++) {
      Version<V> v = vis.get(i);
      boolean last = i == vis.size() - 1;
      long lvt = last ? Math.max(nowTs, v.evt) : vis.get(i + 1).evt - 1;
      if (lvt < readTs) {
        continue;
      }
      if (!last && now - v.insertedAtMs >= gcWindowMs) {
        continue; // superseded and older than the window: offered to no new reader (class comment)
      }
      v.lastAccessMs = now;
      boolean uncertain = lvt > pendingFrom && !READ_PENDING_MUTANT;
      out.add(new VersionView<>(v.version, v.evt, lvt, uncertain ? null : v.value,
          uncertain, last ? 0 : Math.max(0, now - v.supersededAtMs)));
    }
    return out;
  }

  /** The index of the first visible version with EVT above {@code ts} (the chain is increasing in EVT), or the size. */
  private static int firstEvtAbove(List<? extends Version<?>> vis, long ts) {
    int lo = 0;
    int hi = vis.size();
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (vis.get(mid).evt <= ts) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * Marks the visible version valid at {@code ts} (and so its successors) as read, so GC
   * keeps it for the transaction timeout: a second round that must wait first.
   */
  public void protectAt(String key, long ts) {
    Chain<V> c = chain(key);
    List<Version<V>> vis = c.visible;
    long now = clockMs.getAsLong();
    for (int i = vis.size() - 1; i >= 0; i--) {
      if (vis.get(i).evt <= ts || i == 0) {
        vis.get(i).lastAccessMs = now;
        return;
      }
    }
  }

  /**
   * The visible version valid at logical time {@code ts} (second round). The caller must
   * first wait until {@link #hasPendingBelow} is false for {@code ts}. Null if GC already
   * removed every version at or before {@code ts}.
   */
  public VersionView<V> versionAt(String key, long ts, long nowTs) {
    Chain<V> c = chain(key);
    List<Version<V>> vis = c.visible;
    long now = clockMs.getAsLong();
    for (int i = vis.size() - 1; i >= 0; i--) {
      Version<V> v = vis.get(i);
      if (v.evt <= ts) {
        boolean last = i == vis.size() - 1;
        long lvt = last ? Math.max(nowTs, v.evt) : vis.get(i + 1).evt - 1;
        return new VersionView<>(v.version, v.evt, lvt, v.value, false,
            last ? 0 : Math.max(0, now - v.supersededAtMs));
      }
    }
    return null;
  }

  /**
   * The version of the oldest visible version round one still offers (see the class
   * comment): a value of an older version of {@code key} will not be asked for by new
   * readers, so a cache need not keep it.
   */
  public long oldestOfferedVersion(String key) {
    Chain<V> c = chains.get(key);
    if (c == null) {
      return 0;
    }
    long now = clockMs.getAsLong();
    List<Version<V>> vis = c.visible;
    for (int i = 0; i < vis.size() - 1; i++) {
      if (now - vis.get(i).insertedAtMs < gcWindowMs) {
        return vis.get(i).version;
      }
    }
    return vis.get(vis.size() - 1).version;
  }

  /** The newest visible version (what a plain read returns). */
  public Version<V> latest(String key) {
    List<Version<V>> vis = chain(key).visible;
    return vis.get(vis.size() - 1);
  }

  /**
   * The newest visible version, read by the first round of a read-only transaction (an
   * Eiger first round): marked accessed, so GC keeps it and its successors until the
   * transaction's second round, as {@link #versionsFrom} does for K2.
   */
  public Version<V> latestForFirstRound(String key) {
    Version<V> v = latest(key);
    v.lastAccessMs = clockMs.getAsLong();
    return v;
  }

  /**
   * An exact version, visible or hidden (remote reads fetch exact versions). Marks it
   * accessed so GC keeps it for the transaction timeout. Null if unknown here.
   */
  public Version<V> find(String key, long version) {
    Chain<V> c = chains.get(key);
    if (c == null) {
      return version == 0 ? chain(key).visible.get(0) : null;
    }
    int i = visibleIndex(c, version);
    Version<V> v = i >= 0 ? c.visible.get(i) : c.hidden.get(version);
    if (v != null) {
      v.lastAccessMs = clockMs.getAsLong();
    }
    return v;
  }

  /**
   * Dependency check: whether the write {@code <key, version>} was committed here (visible,
   * hidden or since collected). Exact: neither "some version at least as new" (COPS), since
   * a concurrent newer version says nothing about the dependency's own transaction, nor
   * "at or below what GC has removed", since a newer version from another datacenter can be
   * collected while the dependency is still held up on the way (a partition longer than the
   * GC window): GC records the versions it removes instead.
   */
  public boolean isCommitted(String key, long version) {
    if (version == 0) {
      return true;
    }
    Chain<V> c = chains.get(key);
    if (c == null) {
      return false;
    }
    if (c.collected != null && org.k2bench.core.testing.Mutants.active(
        org.k2bench.core.testing.Mutants.DEP_CHECK_GC_WATERMARK) && version <= c.collected.max()) {
      return true; // the bug: the dependency may still be on its way
    }
    return contains(c, version) || (c.collected != null && c.collected.contains(version));
  }

  /** Whether {@code <key, version>} was committed here and has since been garbage-collected. */
  public boolean wasCollected(String key, long version) {
    Chain<V> c = chains.get(key);
    return c != null && c.collected != null && c.collected.contains(version);
  }

  /** Largest version committed here, visible or hidden. */
  public long maxCommittedVersion(String key) {
    Chain<V> c = chains.get(key);
    if (c == null) {
      return 0;
    }
    long max = c.visible.get(c.visible.size() - 1).version;
    if (!c.hidden.isEmpty()) {
      max = Math.max(max, c.hidden.lastKey());
    }
    return max;
  }

  // ---------------------------------------------------------------- waiting

  /**
   * Runs {@code action} (on the owner thread) once {@code ready} holds for {@code key};
   * re-evaluated after every commit to that key. Runs at once if it already holds. Waits
   * as long as it takes: callers use it where at most one wait exists per transaction that
   * is itself waiting (a replicated transaction's dependency on this server).
   */
  public void awaitKey(String key, BooleanSupplier ready, Runnable action) {
    awaitKey(key, ready, action, Long.MAX_VALUE, () -> { });
  }

  /**
   * As above, but gives up at {@code deadlineMs} (wall clock): {@link #expireWaiters} then
   * runs {@code onExpire} instead, so a wait for a commit that never comes (its
   * coordinator's datacenter died, a dependency from a datacenter that died before
   * replicating it) does not stay forever. Returns whether {@code action} ran at once.
   */
  public boolean awaitKey(String key, BooleanSupplier ready, Runnable action, long deadlineMs, Runnable onExpire) {
    if (ready.getAsBoolean()) {
      action.run();
      return true;
    }
    Chain<V> c = chain(key);
    if (c.waiters == null) {
      c.waiters = new ArrayList<>(2);
    }
    c.waiters.add(new Waiter(ready, action, deadlineMs, onExpire));
    waitedKeys.add(key);
    return false;
  }

  private void wake(String key, Chain<V> c) {
    if (c.waiters == null || c.waiters.isEmpty()) {
      return;
    }
    List<Waiter> ws = c.waiters;
    c.waiters = null;
    List<Waiter> still = null;
    for (Waiter w : ws) {
      if (w.ready.getAsBoolean()) {
        w.action.run(); // may add waiters to this key again
      } else {
        (still == null ? still = new ArrayList<>(2) : still).add(w);
      }
    }
    if (still != null) {
      if (c.waiters == null) {
        c.waiters = still;
      } else {
        c.waiters.addAll(still);
      }
    }
    if (c.waiters == null || c.waiters.isEmpty()) {
      waitedKeys.remove(key);
    }
  }

  /** Gives up every wait whose deadline has passed (runs their {@code onExpire}); returns how many. */
  public int expireWaiters(long nowMs) {
    return expireWaiters(nowMs, n -> { });
  }

  /**
   * As above, telling {@code beforeExpiring} how many expire before any {@code onExpire}
   * runs: an expiry answers its asker, who may read the server's counters at once.
   */
  public int expireWaiters(long nowMs, IntConsumer beforeExpiring) {
    if (waitedKeys.isEmpty()) {
      return 0;
    }
    List<Waiter> expired = new ArrayList<>();
    for (java.util.Iterator<String> it = waitedKeys.iterator(); it.hasNext(); ) {
      Chain<V> c = chains.get(it.next());
      if (c == null || c.waiters == null) {
        it.remove();
        continue;
      }
      c.waiters.removeIf(w -> {
        if (w.deadlineMs <= nowMs) {
          expired.add(w);
          return true;
        }
        return false;
      });
      if (c.waiters.isEmpty()) {
        c.waiters = null;
        it.remove();
      }
    }
    beforeExpiring.accept(expired.size());
    for (Waiter w : expired) {
      w.onExpire.run();
    }
    return expired.size();
  }

  /** Waits registered and not yet run or expired. */
  public int waiterCount() {
    int n = 0;
    for (String k : waitedKeys) {
      Chain<V> c = chains.get(k);
      n += c == null || c.waiters == null ? 0 : c.waiters.size();
    }
    return n;
  }

  // ---------------------------------------------------------------- GC

  /**
   * Whether GC keeps {@code v} for its age: younger than the GC window since it was written
   * here; at replica servers, younger than the replica retention since it was superseded:
   * a non-replica datacenter keeps offering {@code v} until it commits the superseding
   * version, which can be after the replicas commit it (its dependency checks), and reads it
   * from a replica until then (§IV-B: "once a non-replica datacenter learns about an update,
   * the value must be available from each of the replica datacenters"). A non-replica
   * datacenter held up longer than the retention (15 s) gets "garbage-collected" answers for
   * keys nobody read meanwhile: the retention bounds how far behind a datacenter may fall.
   */
  private boolean young(Version<V> v, boolean replica, long now) {
    return now - v.insertedAtMs < gcWindowMs
        || (replica && now - Math.max(v.insertedAtMs, v.supersededAtMs) < replicaRetentionMs);
  }

  private void gc(String key, Chain<V> c, long now) {
    boolean replica = isReplicaKey.test(key);
    List<Version<V>> vis = c.visible;
    int remove = 0;
    long accessed = Long.MIN_VALUE;
    long pendingFrom = minPending(c);
    for (int i = 0; i < vis.size() - 1; i++) {
      Version<V> v = vis.get(i);
      accessed = Math.max(accessed, v.lastAccessMs);
      boolean young = young(v, replica, now);
      boolean protectedByRead = now - accessed < txnTimeoutMs;
      // The version valid when a pending transaction prepared stays: that transaction
      // commits after it, and the apply rule compares it with its predecessor there.
      boolean beforePending = vis.get(i + 1).evt > pendingFrom;
      if (young || protectedByRead || beforePending) {
        break;
      }
      remove++;
    }
    for (int i = 0; i < remove; i++) {
      recordCollected(c, vis.get(i).version);
    }
    if (remove > 0) {
      vis.subList(0, remove).clear();
      gcRemoved += remove;
    }
    for (Iterator<Version<V>> it = c.hidden.values().iterator(); it.hasNext(); ) {
      Version<V> v = it.next();
      if (!young(v, replica, now) && now - v.lastAccessMs >= txnTimeoutMs) {
        recordCollected(c, v.version);
        it.remove();
        gcRemoved++;
      }
    }
  }

  private void recordCollected(Chain<V> c, long version) {
    if (version == 0) {
      return; // the initial version is committed everywhere
    }
    if (c.collected == null) {
      c.collected = new LongSortedSet();
    }
    c.collected.add(version);
    collectedRecords++;
  }

  /** Versions GC removed whose commit is still remembered (8 bytes each, for dependency checks). */
  public long collectedRecords() {
    return collectedRecords;
  }

  /** Number of versions GC has removed (for tests and metrics). */
  public long gcRemoved() {
    return gcRemoved;
  }

  /** Number of visible versions currently kept for a key. */
  public int visibleCount(String key) {
    Chain<V> c = chains.get(key);
    return c == null ? 1 : c.visible.size();
  }

  public int keyCount() {
    return chains.size();
  }
}
