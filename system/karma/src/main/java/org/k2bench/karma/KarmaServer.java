package org.k2bench.karma;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.data.Dep;
import org.k2bench.core.data.Row;
import org.k2bench.core.server.ServerActor;
import org.k2bench.core.store.MultiVersionStore;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.topology.RingPlacement;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.MalformedMessageException;
import org.k2bench.core.transport.Transport;
import org.k2bench.karma.proto.CacheGet;
import org.k2bench.karma.proto.CacheGetReply;
import org.k2bench.karma.proto.DepCheck;
import org.k2bench.karma.proto.DepsComplete;
import org.k2bench.karma.proto.FillRead;
import org.k2bench.karma.proto.Invalidate;
import org.k2bench.karma.proto.Invalidated;
import org.k2bench.karma.proto.Put;
import org.k2bench.karma.proto.PutDone;
import org.k2bench.karma.proto.RingRead;
import org.k2bench.karma.proto.RingReadAt;
import org.k2bench.karma.proto.RingReadReply;
import org.k2bench.karma.proto.RingValue;
import org.k2bench.karma.proto.Stable;

/**
 * One server of a datacenter: the storage server and the middle-man (MM, §4.1.1) of the keys
 * it holds for its ring, and the datacenter cache (§4.3) of the keys it is home of.
 *
 * <p>As the MM it keeps each key's <em>in-flight</em> state (§4.1.2: a version is stable once
 * it, or a later one, is in every ring; the client coordinator that wrote it says so with a
 * {@link Stable} notification), the <em>cached-at</em> set (the caches that read a stable
 * value of the key here and may hold it), and when each put is <em>complete</em> here:
 * applied and every cache in the cached-at set invalidated and acknowledged (§4.3). A
 * put-after (and a notify-after) waits until its dependencies are complete in this ring.
 *
 * <p>Each version is stored with an EVT this replica assigns when it applies it, after its
 * dependencies: EVTs follow causal order inside the ring, so Eiger's get-transactions (§4.5)
 * read a causally consistent snapshot of the ring.
 *
 * <p>As a cache it holds stable values only (demand fills of in-flight values are refused,
 * §3 "Read Case 3"), evicts least recently used keys silently, and drops a key on an
 * invalidation. A fill that was in flight when an invalidation of the key arrived is not
 * kept: the replica's reply and its later invalidation may be handled in either order here.
 *
 * <p>Cached values may be leased ({@code cache_lease_ms}, off by default; the paper has no leases): a cache
 * serves a value until a lease after it <em>asked</em> for it, and the replica counts an
 * invalidation a cache does not acknowledge as done a lease after it last <em>served</em>
 * that cache a fill of the key, which is later in real time whatever the message delays, so
 * no cache serves an older value after a put completes. Without them a dead or cut-off
 * datacenter (whose cache lives on its storage servers here) keeps every put of a key it
 * ever cached from completing in the ring, for as long as it stays so: nothing becomes
 * stable, and every reader of those keys stays restricted (the paper, §4.4: a cache failure
 * means writes to its data "cannot complete").
 */
final class KarmaServer extends ServerActor {
  /** What a cache's error reply says when the replica it filled from did not answer (KarmaClient reads it). */
  static final String FILL_FAILED = "cache fill failed at the replica";
  /** How long a propagation step waits before trying a dead or slow peer again. */
  private static final long RETRY_MS = 200;

  private final Mode mode;
  private final RingPlacement rings;
  private final int ring;

  // ---- middle-man state (§4.1.2, §4.3)
  /** key -> the highest version applied here that is not known to be stable. */
  private final Map<String, Long> inFlight = new HashMap<>();
  /**
   * key -> the caches (server ids) that read a stable value of it here since its last put,
   * each with when it last did (System.nanoTime): its lease ends a lease after that.
   */
  private final Map<String, Map<Integer, Long>> cachedAt = new HashMap<>();
  /** key -> invalidations not yet acknowledged, and the puts waiting for them. */
  private final Map<String, Invalidating> invalidating = new HashMap<>();
  /** key -> dependency checks waiting for a version of it to complete here. */
  private final Map<String, List<DepWaiter>> depWaiters = new HashMap<>();

  // ---- datacenter cache (§4.3)
  private final int cacheCapacity;
  private final LinkedHashMap<String, Cached> cache;
  private final long leaseNanos;
  /** key -> {fills outstanding, invalidated meanwhile (0/1)}. */
  private final Map<String, int[]> fills = new HashMap<>();

  private static final class Invalidating {
    int outstanding;
    final List<Long> versions = new ArrayList<>();
    final List<Incoming> waiting = new ArrayList<>();
  }

  /**
   * A wait for {@code <key, version>} to complete here, given up at {@code deadlineMs} (the
   * RPC timeout after it began: whoever waits has given up by then, and asks again if it
   * still needs it), when {@code expired} runs instead. Not the store's own waits
   * ({@code MultiVersionStore.awaitKey}): those are re-checked when a version is committed,
   * and a Karma put completes later, when its invalidations are acknowledged
   * ({@link #completed}); checked at the commit, a wait would see the put applied before
   * its invalidations were even sent.
   */
  private record DepWaiter(long version, Runnable done, long deadlineMs, Runnable expired) {}

  /** A cached value and when its lease ends (System.nanoTime). */
  private record Cached(RingValue value, long leaseEndsNanos) {}

  KarmaServer(Mode mode, Transport transport, int serverId, ServerOptions options) {
    super(mode.systemName, transport, serverId, options, k -> false);
    this.mode = mode;
    this.rings = RingPlacement.of(topology, mode.systemName);
    this.ring = rings.ringOf(dc);
    boolean caches = mode == Mode.KARMA && options.system().flag(KarmaOptions.DC_CACHE);
    this.cacheCapacity = caches ? Math.max(1, options.cacheKeysPerServer(topology.serversPerDc())) : 0;
    this.leaseNanos = caches ? options.system().integer(KarmaOptions.CACHE_LEASE_MS) * 1_000_000L : 0;
    this.cache = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Cached> eldest) {
        return size() > cacheCapacity; // silent replacement (§4.3)
      }
    };
    start();
  }

  @Override
  protected void handle(Incoming m) {
    if (m.is(RingRead.class)) {
      onRingRead(m, m.as(RingRead.class));
    } else if (m.is(RingReadAt.class)) {
      onRingReadAt(m, m.as(RingReadAt.class));
    } else if (m.is(CacheGet.class)) {
      onCacheGet(m, m.as(CacheGet.class));
    } else if (m.is(FillRead.class)) {
      onFillRead(m, m.as(FillRead.class));
    } else if (m.is(Put.class)) {
      onPut(m, m.as(Put.class));
    } else if (m.is(DepCheck.class)) {
      onDepCheck(m, m.as(DepCheck.class).getDepsList());
    } else if (m.is(Stable.class)) {
      onStable(m.as(Stable.class));
    } else if (m.is(Invalidate.class)) {
      onInvalidate(m, m.as(Invalidate.class).getKey());
    } else {
      throw new MalformedMessageException(mode.systemName + " server does not handle " + m.typeName());
    }
  }

  private void requireHeld(String key) {
    if (rings.serverInRing(ring, key) != ep.id()) {
      throw new MalformedMessageException("key '" + key + "' is not held by server " + ep.id());
    }
  }

  // ------------------------------------------------------------------ reads

  /** The newest version of a key here, as a get or a get-transaction's first round reads it. */
  private RingValue newest(String key) {
    MultiVersionStore.Version<Row> v = store.latestForFirstRound(key);
    return RingValue.newBuilder().setKey(key).setVersion(v.version()).setEvt(v.evt())
        .setLvt(Math.max(present(), v.evt())).setValue(v.value()).setInFlight(isInFlight(key)).build();
  }

  /**
   * The server's time, caught up with the physical clock first: puts carry hybrid versions
   * (KarmaClient.stamp), so their EVTs follow wall time, and a newest version's LVT (valid
   * until now, §4.5 after Eiger) must too, or a get-transaction mixing a recent put with a
   * key of a quiet server takes a needless second round. Catching up is a Lamport receive
   * of the wall time: every later EVT here stays above the LVT given.
   */
  private long present() {
    clock.observeWallClock();
    return clock.now();
  }

  /**
   * Whether a get of the key's newest version here must restrict the reader (§4.2). The
   * newest version is stable once a version at least as new was notified stable; this server
   * forgets a key's in-flight mark then (a conservative test: a version notified stable that
   * is not the newest keeps the mark).
   */
  private boolean isInFlight(String key) {
    return inFlight.containsKey(key) && !(mode == Mode.KARMA && Mutants.active(KarmaMutants.KARMA_NO_RESTRICTIONS));
  }

  private void onRingRead(Incoming m, RingRead req) {
    RingReadReply.Builder out = RingReadReply.newBuilder();
    for (String key : req.getKeysList()) {
      requireHeld(key);
      out.addValues(newest(key));
    }
    count("ring_reads");
    m.reply(out.build());
  }

  /**
   * Second round of a get-transaction: each key's version valid at the effective time. A
   * version older than the key's newest is reported in flight whatever its state: whether
   * its own causal past is in every ring is not tracked (only the newest version's is), so
   * the reader is restricted to this ring, which is safe.
   */
  private void onRingReadAt(Incoming m, RingReadAt req) {
    clock.observeTimestamp(req.getTs());
    RingReadReply.Builder out = RingReadReply.newBuilder();
    for (String key : req.getKeysList()) {
      requireHeld(key);
      MultiVersionStore.VersionView<Row> v = store.versionAt(key, req.getTs(), clock.now());
      if (v == null) {
        m.replyError("no version of '" + key + "' at the effective time is left (garbage-collected)");
        return;
      }
      boolean newest = v.version() == store.latest(key).version();
      out.addValues(RingValue.newBuilder().setKey(key).setVersion(v.version()).setEvt(v.evt()).setLvt(v.lvt())
          .setValue(v.value()).setInFlight(!newest || isInFlight(key)).setStalenessMs(v.stalenessMs()));
    }
    count("ring_reads_at");
    m.reply(out.build());
  }

  /** A cache's demand fill (§4.3): the cache's datacenter joins the cached-at set if the value is stable. */
  private void onFillRead(Incoming m, FillRead req) {
    requireHeld(req.getKey());
    RingValue v = newest(req.getKey());
    if (!v.getInFlight()) {
      cachedAt.computeIfAbsent(req.getKey(), k -> new HashMap<>(2)).put(m.from(), System.nanoTime());
    }
    count("fill_reads");
    m.reply(RingReadReply.newBuilder().addValues(v).build());
  }

  // ------------------------------------------------------------------ cache

  private void onCacheGet(Incoming m, CacheGet req) {
    String key = req.getKey();
    Cached hit = cacheCapacity > 0 ? cache.get(key) : null;
    if (hit != null && !leaseEnded(hit)) {
      count("cache_hits");
      m.reply(CacheGetReply.newBuilder().setValue(hit.value()).setHit(true).build());
      return;
    }
    if (hit != null) {
      cache.remove(key);
      count("cache_leases_ended");
    }
    count("cache_misses");
    int[] fill = fills.computeIfAbsent(key, k -> new int[2]);
    fill[0]++;
    long asked = System.nanoTime(); // the lease runs from before the replica can have answered
    // Half the RPC timeout: a replica that does not answer is reported before the client gives
    // up on the cache itself (which would take the cache for the one that failed).
    onServer(ep.call(req.getReplicaServer(), FillRead.newBuilder().setKey(key).build(), RingReadReply.class),
        Math.max(1, options.rpcTimeoutMs() / 2), (reply, error) -> {
          int[] f = fills.get(key);
          boolean invalidatedMeanwhile = f[1] != 0 && !Mutants.active(KarmaMutants.KARMA_FILL_IGNORES_INVALIDATION);
          if (--f[0] == 0) {
            fills.remove(key);
          }
          if (error != null) {
            m.replyError(FILL_FAILED + ": fill of '" + key + "' from server " + req.getReplicaServer() + ": "
                + error.getMessage());
            return;
          }
          RingValue v = reply.getValues(0);
          Cached fresh = new Cached(v.toBuilder().setStalenessMs(0).build(), asked + leaseNanos);
          if (cacheCapacity > 0 && !v.getInFlight() && !invalidatedMeanwhile && !leaseEnded(fresh)) {
            cache.put(key, fresh);
          }
          m.reply(CacheGetReply.newBuilder().setValue(v).build());
        });
  }

  /** Whether a cached value's lease has run out (never without leases). */
  private boolean leaseEnded(Cached c) {
    return leaseNanos > 0 && System.nanoTime() - c.leaseEndsNanos() >= 0;
  }

  private void onInvalidate(Incoming m, String key) {
    cache.remove(key);
    int[] f = fills.get(key);
    if (f != null) {
      f[1] = 1;
    }
    count("invalidations_received");
    m.reply(Invalidated.getDefaultInstance());
  }

  // ------------------------------------------------------------------ puts

  /** A put or put-after (§4.1.2): applied once its dependencies are complete in this ring. */
  private void onPut(Incoming m, Put put) {
    requireHeld(put.getKey());
    long start = System.nanoTime();
    awaitDeps(put.getDepsList(), () -> {
      if (!put.getDepsList().isEmpty()) { // how long put-afters wait for their dependencies here
        org.k2bench.core.metrics.ProcessMetrics.record("put_after_wait", (System.nanoTime() - start) / 1000);
      }
      apply(m, put);
    }, () -> count("put_after_waits_expired")); // the client sends the put again
  }

  /** notify-after (§4.2), or a put-after's checks from another server of the ring. */
  private void onDepCheck(Incoming m, List<Dep> deps) {
    count("dep_checks");
    awaitDeps(deps, () -> m.reply(DepsComplete.getDefaultInstance()), () -> {
      count("dep_checks_expired");
      m.replyError("dependencies not complete in this ring within " + options.rpcTimeoutMs() + " ms");
    });
  }

  /**
   * Runs {@code then} once every dependency is complete in this ring: those held here are
   * waited for here, the others asked of the servers of this ring holding them (and asked
   * again while one does not answer).
   */
  private void awaitDeps(List<Dep> deps, Runnable then, Runnable expired) {
    if (deps.isEmpty() || Mutants.active(Mutants.SKIP_DEPENDENCY_CHECKS)) {
      then.run();
      return;
    }
    long deadlineMs = System.currentTimeMillis() + options.rpcTimeoutMs();
    boolean[] gaveUp = {false};
    Runnable giveUp = () -> {
      if (!gaveUp[0]) {
        gaveUp[0] = true;
        expired.run();
      }
    };
    Map<Integer, List<Dep>> byServer = new HashMap<>();
    for (Dep d : deps) {
      byServer.computeIfAbsent(rings.serverInRing(ring, d.getKey()), s -> new ArrayList<>()).add(d);
    }
    int[] left = {byServer.size()};
    Runnable one = () -> {
      if (--left[0] == 0 && !gaveUp[0]) {
        then.run();
      }
    };
    for (Map.Entry<Integer, List<Dep>> e : byServer.entrySet()) {
      if (e.getKey() == ep.id()) {
        int[] mine = {e.getValue().size()};
        for (Dep d : e.getValue()) {
          whenComplete(d.getKey(), d.getVersion(), () -> {
            if (--mine[0] == 0) {
              one.run();
            }
          }, deadlineMs, giveUp);
        }
      } else {
        count("dep_checks_sent");
        askUntilComplete(e.getKey(), DepCheck.newBuilder().addAllDeps(e.getValue()).build(), one, deadlineMs,
            giveUp, gaveUp);
      }
    }
  }

  private void askUntilComplete(int server, DepCheck check, Runnable done, long deadlineMs, Runnable giveUp,
      boolean[] gaveUp) {
    onServer(ep.call(server, check, DepsComplete.class), (ok, error) -> {
      if (gaveUp[0]) {
        return;
      }
      if (error == null) {
        done.run();
      } else if (System.currentTimeMillis() + RETRY_MS >= deadlineMs) {
        giveUp.run();
      } else {
        later(RETRY_MS, () -> askUntilComplete(server, check, done, deadlineMs, giveUp, gaveUp));
      }
    });
  }

  /**
   * Whether the put of exactly {@code <key, version>} is complete here: applied (visible, or
   * hidden behind a newer version, or since collected) and its invalidations acknowledged.
   * Exact, not "some version at least as new" (COPS's check): a concurrent newer version of a
   * hot key from another session says nothing of this version's own causal past, and
   * taking it for the dependency let a put-after overtake what the dependency depends on
   * (a causality violation the checker found on karma-default).
   */
  private boolean isComplete(String key, long version) {
    if (!store.isCommitted(key, version)) {
      return false;
    }
    Invalidating inv = invalidating.get(key);
    return inv == null || !inv.versions.contains(version);
  }

  private void whenComplete(String key, long version, Runnable done, long deadlineMs, Runnable expired) {
    if (isComplete(key, version)) {
      done.run();
    } else {
      depWaiters.computeIfAbsent(key, k -> new ArrayList<>()).add(new DepWaiter(version, done, deadlineMs, expired));
    }
  }

  /** Gives up the dependency waits whose deadline passed (see {@link DepWaiter}). */
  @Override
  protected void tick() {
    super.tick();
    long now = System.currentTimeMillis();
    List<Runnable> expired = new ArrayList<>();
    depWaiters.values().removeIf(waiters -> {
      waiters.removeIf(w -> {
        if (w.deadlineMs() <= now) {
          expired.add(w.expired());
          return true;
        }
        return false;
      });
      return waiters.isEmpty();
    });
    expired.forEach(Runnable::run);
  }

  private void apply(Incoming m, Put put) {
    String key = put.getKey();
    long version = put.getVersion();
    clock.observeTimestamp(version);
    long evt = clock.nextTimestamp(); // after the dependencies: EVTs follow causal order in the ring
    MultiVersionStore.Applied applied = store.commit(key, version, version, evt, put.getValue());
    if (applied == MultiVersionStore.Applied.DUPLICATE) {
      // A propagator's retry of a put already applied: answer once it is complete, and leave
      // the key's state alone (it may be stable by now; marking it in flight again would
      // restrict its readers until the key's next write).
      count("duplicate_puts");
      whenComplete(key, version, () -> m.reply(PutDone.getDefaultInstance()),
          System.currentTimeMillis() + options.rpcTimeoutMs(), () -> { }); // the client asks again
      return;
    }
    count("puts_applied");
    if (!put.getDepsList().isEmpty()) {
      count("put_afters");
    }
    if (applied == MultiVersionStore.Applied.HIDDEN) {
      // A late put filed behind a newer version (last writer wins): readers still get the
      // newer one, so the key's in-flight state and the caches' copies stay as they are. It
      // is complete here once the newer versions' invalidations are (a cache may serve an
      // older value until then).
      count("puts_hidden");
      Invalidating inv = invalidating.get(key);
      if (inv == null) {
        completed(key, version, m);
      } else {
        inv.versions.add(version);
        inv.waiting.add(m);
      }
      return;
    }
    inFlight.merge(key, version, Math::max); // §4.1.2: the MM marks the object in flight
    Map<Integer, Long> caches = cachedAt.remove(key);
    if (Mutants.active(KarmaMutants.KARMA_NO_INVALIDATION)) {
      caches = null; // the bug: caches keep the older value
    }
    Invalidating inv = invalidating.get(key);
    if ((caches == null || caches.isEmpty()) && inv == null) {
      completed(key, version, m);
      return;
    }
    if (inv == null) {
      inv = new Invalidating();
      invalidating.put(key, inv);
    }
    inv.versions.add(version);
    inv.waiting.add(m);
    if (caches != null) {
      for (Map.Entry<Integer, Long> c : caches.entrySet()) {
        inv.outstanding++;
        count("invalidations_sent");
        // the lease and 1% plus 10 ms more: the cache measures it on a clock of its own
        invalidate(c.getKey(), key, c.getValue() + leaseNanos + leaseNanos / 100 + 10_000_000L);
      }
    }
  }

  /**
   * Invalidates a cache's copy, asking again until it answers or its lease has ended
   * (without leases, until it answers): a put is complete in this ring
   * only when no cache can serve an older value (§4.3).
   */
  private void invalidate(int cacheServer, String key, long leaseEndsNanos) {
    boolean[] done = {false};
    Timer[] leaseTimer = {null};
    Runnable finish = () -> {
      if (done[0]) {
        return;
      }
      done[0] = true;
      if (leaseTimer[0] != null) {
        leaseTimer[0].cancel();
      }
      Invalidating inv = invalidating.get(key);
      if (--inv.outstanding == 0) {
        invalidating.remove(key);
        for (int i = 0; i < inv.waiting.size(); i++) {
          completed(key, inv.versions.get(i), inv.waiting.get(i));
        }
      }
    };
    if (leaseNanos > 0) {
      long leftMs = Math.max(0, (leaseEndsNanos - System.nanoTime() + 999_999) / 1_000_000);
      leaseTimer[0] = later(leftMs, () -> {
        if (!done[0]) {
          count("invalidations_lease_ended"); // the cache did not answer: its copy has expired
          finish.run();
        }
      });
    }
    sendInvalidate(cacheServer, key, done, finish);
  }

  private void sendInvalidate(int cacheServer, String key, boolean[] done, Runnable finish) {
    onServer(ep.call(cacheServer, Invalidate.newBuilder().setKey(key).build(), Invalidated.class), (ok, error) -> {
      if (done[0]) {
        return;
      }
      if (error != null) {
        later(RETRY_MS, () -> {
          if (!done[0]) {
            sendInvalidate(cacheServer, key, done, finish);
          }
        });
        return;
      }
      finish.run();
    });
  }

  private void completed(String key, long version, Incoming put) {
    put.reply(PutDone.getDefaultInstance());
    List<DepWaiter> waiters = depWaiters.get(key);
    if (waiters == null) {
      return;
    }
    List<DepWaiter> ready = new ArrayList<>();
    waiters.removeIf(w -> {
      if (isComplete(key, w.version())) {
        ready.add(w);
        return true;
      }
      return false;
    });
    if (waiters.isEmpty()) {
      depWaiters.remove(key);
    }
    ready.forEach(w -> w.done().run());
  }

  /** The client coordinator's write-completion notification (§4.1.2). */
  private void onStable(Stable s) {
    inFlight.computeIfPresent(s.getKey(), (k, v) -> v <= s.getVersion() ? null : v);
    count("stable_notifications");
  }

  @Override
  protected void gauges(Map<String, Long> out) {
    super.gauges(out);
    out.put("in_flight_keys", (long) inFlight.size());
    out.put("cache_keys", (long) cache.size());
    out.put("cache_capacity_keys", (long) cacheCapacity);
    out.put("dep_waiters", depWaiters.values().stream().mapToLong(List::size).sum());
    out.put("invalidating_keys", (long) invalidating.size());
  }

  /** For tests: whether this server committed the version of the key. */
  boolean committed(String key, long version) {
    CompletableFuture<Boolean> f = new CompletableFuture<>();
    thread.execute(() -> f.complete(store.isCommitted(key, version)));
    return f.join();
  }

  /** For tests: whether this server's cache holds the key. */
  boolean cached(String key) {
    CompletableFuture<Boolean> f = new CompletableFuture<>();
    thread.execute(() -> f.complete(cache.containsKey(key) && !leaseEnded(cache.get(key))));
    return f.join();
  }
}
