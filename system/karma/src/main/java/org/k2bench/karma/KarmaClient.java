package org.k2bench.karma;

import com.google.protobuf.Message;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import org.k2bench.core.api.Calls;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.OperationFailedException;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.WriteResult;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.data.Dep;
import org.k2bench.core.data.Row;
import org.k2bench.core.metrics.ProcessMetrics;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.topology.RingPlacement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;
import org.k2bench.karma.proto.CacheGet;
import org.k2bench.karma.proto.CacheGetReply;
import org.k2bench.karma.proto.DepCheck;
import org.k2bench.karma.proto.DepsComplete;
import org.k2bench.karma.proto.Put;
import org.k2bench.karma.proto.PutDone;
import org.k2bench.karma.proto.RingRead;
import org.k2bench.karma.proto.RingReadAt;
import org.k2bench.karma.proto.RingReadReply;
import org.k2bench.karma.proto.RingValue;
import org.k2bench.karma.proto.Stable;

/**
 * A client session with its client coordinator (CC, §4.1.1): the CC's per-client state lives
 * with the session, in the client's process in the client's datacenter.
 *
 * <p><b>Writes</b> (§4.1.2): a put enters the session's private write buffer (WB) and the tail
 * of one propagation queue per ring, and returns. Each ring's propagator sends the queue's
 * entries in order, one at a time (the next once the ring answered the previous one complete),
 * so a ring receives the session's puts in program order without put-after between them. A
 * put carries as dependencies (put-after) the in-flight values the session read and is still
 * restricted by (Karma, §4.1.2 "only includes items that are in-flight"), or the values it
 * read in flight since its previous put (COPS-PR: COPS's nearest dependencies less those it
 * never depends on, versions known to be everywhere). Once every ring answered, the write is
 * complete: the CC notifies each ring's middle-man that the version is stable, evicts it
 * from the WB and lifts the session's restrictions from reads before it.
 * A ring that answers none of the session's puts for {@code dead_ring_after_timeouts} RPC
 * timeouts is down: its queue grows and the session writes on (§4.4); the others keep the
 * buffer's bound.
 *
 * <p><b>Reads</b> (§3, Fig. 2): a get first looks in the WB (an entry already propagated to the
 * ring the session is restricted to is skipped: that ring has it, §4.1.2); then, unrestricted,
 * at the key's replica in the local datacenter if there is one, else through the datacenter
 * cache (which serves stable values and fills from the replica of the nearest ring, by
 * measured latency); restricted, at the bound ring, bypassing the cache. A value the replica
 * reports in flight restricts the session to that ring (Dynamic Ring Restrictions, §4.2),
 * tied to the key and version, until a put or a notify-after issued after the read completes.
 * A get-transaction of several keys is Eiger's (§4.5) at one ring, bypassing the cache: the
 * bound ring, or the ring nearest for all its keys. COPS-PR is always bound to its
 * datacenter's ring and has no cache.
 */
final class KarmaClient implements KvClient {
  private static final long RETRY_MS = 200;
  private static final double UNREACHABLE_MS = LatencyMonitor.UNREACHABLE_MS;
  /** How long a datacenter cache whose get failed is passed over (then tried again). */
  private static final long CACHE_DOWN_MS = 1000;

  private final Mode mode;
  private final RingPlacement rings;
  private final Topology topology;
  private final Endpoint ep;
  private final int dc;
  private final int homeRing;
  private final boolean dcCache;
  private final long timeoutMs;
  private final long notifyAfterMs;
  private final long bufferEntries;
  private final long deadRingAfterMs;

  /** The round trips to each datacenter, measured for all of the process's sessions in this datacenter (Karma). */
  private final LatencyMonitor latency;

  /** Guards everything below; never held while waiting for a reply. */
  private final Object state = new Object();
  private long seq;
  /** The WB: key -> the session's newest write of it not yet complete. */
  private final Map<String, Entry> wb = new HashMap<>();
  private final ArrayDeque<Entry>[] queues;
  private final boolean[] sending;
  /**
   * Per ring: 0, or the head of its queue failed to reach the ring and waits to be sent again
   * (the ring is stalled), and the ring answered nothing since this time (the head's first
   * send, ms).
   */
  private final long[] unansweredSinceMs;
  /** Per ring: the session's puts it acknowledged (a writer waiting for room sees progress by it). */
  private final long[] acks;
  /** Per ring: when the head of its queue was first sent (ms). */
  private final long[] headSentMs;
  /**
   * Per ring: its queue's length when it answered again after being down, or 0; and its
   * answers since. While it works through that backlog a writer may add one put per two of
   * its answers (see {@link #room}), so writes go on and the backlog still shrinks.
   */
  private final int[] backlog;
  private final int[] backlogAnswers;
  private int incomplete;
  /** DRRs (§4.2): in-flight values read, with the ring read from; all name the same ring. */
  private final List<Restriction> restrictions = new ArrayList<>();
  /**
   * COPS-PR: the values read in flight since the session's last put (its put-after
   * dependencies), every version of a key read, not only the newest (see {@link
   * #restrictionDeps}). A session that never writes keeps one entry per distinct version it
   * reads in flight.
   */
  private final LinkedHashSet<Dep> readsSincePut = new LinkedHashSet<>();
  /** The largest version the session has read from a ring or cache. */
  private long maxReadVersion;
  /** The session's newest put. */
  private Entry lastPut;
  /** The notify-after on its way, if any: completes true if it lifted the restrictions before it. */
  private CompletableFuture<Boolean> notifyPending;
  /** The forced notify-after on its way (see liftNow), if any. */
  private CompletableFuture<Boolean> forcedPending;
  /** When the session became restricted, and when it last inserted a notify-after. */
  private long restrictedSinceMs;
  private long lastNotifyMs;
  /**
   * Restrictions lifted by a failed read (see {@link #liftNow}) without the check in the ring
   * they were read from: dependencies of the session's puts until one of those completes
   * (then they are complete in that ring too), from the lift's {@link #seq} on.
   */
  private final List<Dep> carried = new ArrayList<>();
  private long carriedSince;
  /** Until when the datacenter cache is passed over: a cache get failed (ms, wall clock). */
  private volatile long cacheDownUntilMs;
  private volatile boolean closed;
  private volatile boolean closedHard;

  /** A put on its way to every ring. */
  private static final class Entry {
    final long seq;
    final String key;
    final long version;
    final Row row;
    final List<Dep> deps;
    final boolean[] inRing;
    int rings;
    final long startNanos = System.nanoTime();

    Entry(long seq, String key, long version, Row row, List<Dep> deps, int numRings) {
      this.seq = seq;
      this.key = key;
      this.version = version;
      this.row = row;
      this.deps = deps;
      this.inRing = new boolean[numRings];
    }
  }

  private record Restriction(String key, long version, int ring, long seq) {}

  @SuppressWarnings("unchecked")
  KarmaClient(Mode mode, Transport transport, int clientId, int dc, ServerOptions options) {
    this.mode = mode;
    this.topology = transport.topology();
    this.rings = RingPlacement.of(topology, mode.systemName);
    this.dc = dc;
    this.homeRing = rings.ringOf(dc);
    this.dcCache = mode == Mode.KARMA && options.system().flag(KarmaOptions.DC_CACHE);
    this.timeoutMs = options.rpcTimeoutMs();
    this.notifyAfterMs = mode == Mode.KARMA ? options.system().integer(KarmaOptions.NOTIFY_AFTER_MS) : 0;
    this.bufferEntries = options.system().integer(KarmaOptions.WRITE_BUFFER_ENTRIES);
    this.deadRingAfterMs = timeoutMs * options.system().integer(KarmaOptions.DEAD_RING_AFTER_TIMEOUTS);
    this.ep = transport.openClient(clientId, dc, Runnable::run, m -> { });
    int n = rings.numRings();
    this.queues = new ArrayDeque[n];
    for (int r = 0; r < n; r++) {
      queues[r] = new ArrayDeque<>();
    }
    this.sending = new boolean[n];
    this.unansweredSinceMs = new long[n];
    this.acks = new long[n];
    this.headSentMs = new long[n];
    this.backlog = new int[n];
    this.backlogAnswers = new int[n];
    this.latency = mode == Mode.KARMA
        ? LatencyMonitor.of(transport, dc, options.system().integer(KarmaOptions.LATENCY_PROBE_MS)) : null;
  }

  @Override
  public int id() {
    return ep.id();
  }

  @Override
  public int dc() {
    return dc;
  }

  // ------------------------------------------------------------------ ring choice

  /** The ring the session must read from: its own for COPS-PR, its DRR ring if restricted, else -1. */
  private int boundRing() {
    if (mode == Mode.COPS_PR) {
      return homeRing;
    }
    synchronized (state) {
      return restrictions.isEmpty() ? -1 : restrictions.get(0).ring();
    }
  }

  /** The measured round trip to a datacenter (COPS-PR reads only its own ring and measures nothing). */
  private double distanceMs(int toDc) {
    return latency == null ? topology.rttMs(dc, toDc) : latency.distanceMs(toDc);
  }

  /** The ring whose replica of every key is nearest: the smallest worst round trip (own ring on ties). */
  private int nearestRing(Collection<String> keys) {
    int best = homeRing;
    double bestMs = Double.MAX_VALUE;
    for (int k = 0; k < rings.numRings(); k++) {
      int r = (homeRing + k) % rings.numRings();
      double worst = 0;
      for (String key : keys) {
        worst = Math.max(worst, distanceMs(rings.replicaInRing(r, key)));
      }
      if (worst < bestMs) {
        best = r;
        bestMs = worst;
      }
    }
    return best;
  }

  /** Starts the latency probes that are due (Karma; the monitor is the process's). */
  private void probe() {
    if (latency != null) {
      latency.probe(ep, () -> closed);
    }
  }

  /** A read at a datacenter failed: avoid it until a probe answers. */
  private void unreachable(int toDc) {
    if (latency != null) {
      latency.unreachable(toDc);
    }
  }

  // ------------------------------------------------------------------ reads

  @Override
  public synchronized ReadResult readTxn(Collection<String> keysIn) {
    if (keysIn.isEmpty()) {
      throw new IllegalArgumentException("a read needs at least one key");
    }
    probe();
    maybeNotifyAfter();
    List<String> keys = List.copyOf(new LinkedHashSet<>(keysIn));
    boolean restricted = boundRing() >= 0 && mode == Mode.KARMA;
    ProcessMetrics.record("ring_restricted", restricted ? 1 : 0);
    try {
      return keys.size() == 1 ? get(keys.get(0)) : getTransaction(keys);
    } catch (OperationFailedException e) {
      if (mode == Mode.COPS_PR || (boundRing() >= 0 && !liftNow())) {
        throw e; // COPS-PR, or restricted to a ring the values read have not left: no other ring may serve it
      }
      // §4.5: an unrestricted read that failed at one ring is tried again at another.
      ProcessMetrics.record("ring_retries", 1);
      return keys.size() == 1 ? get(keys.get(0)) : getTransaction(keys);
    }
  }

  /**
   * A read at the ring R the session is restricted to failed (a server of R is down or cut
   * off). §4.4 Observation 2: the values the session read there in flight were applied in R
   * after their dependencies were complete in R, so once they are complete in every other
   * ring the restriction can go. A notify-after to the other rings, at once; if it answers,
   * the restrictions are lifted and the read tried at another ring. What R did not confirm
   * is kept: R may not have had every cache's invalidation of those values acknowledged, so
   * (1) they stay dependencies of the session's puts until one of those completes (then R
   * has them complete too), so nobody reads the session's later writes without them, and
   * (2) the session bypasses its cache until then too: a copy filled from R before they were
   * applied there may be served until its lease ends, and only their completion in R says it
   * has (a bound from the client's own lease setting would be as wrong as that setting).
   * Whether the session is unrestricted now.
   */
  private boolean liftNow() {
    CompletableFuture<Boolean> check;
    synchronized (state) {
      if (restrictions.isEmpty()) {
        return true;
      }
      check = forcedPending != null ? forcedPending : notifyAfter(System.currentTimeMillis(), restrictions.get(0).ring());
    }
    try {
      if (!check.get(timeoutMs, TimeUnit.MILLISECONDS)) {
        return false; // not answered in some other ring: still restricted
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
      return false;
    }
    synchronized (state) {
      return restrictions.isEmpty();
    }
  }

  /** The session's own write of {@code key} to read, unless {@code ring} (if any) already has it. */
  private Entry own(String key, int ring) {
    synchronized (state) {
      Entry e = wb.get(key);
      return e == null || (ring >= 0 && e.inRing[ring]) ? null : e;
    }
  }

  /**
   * Whether an own write may be read from the WB alone (§4.1.2: gets look in the WB first):
   * unless the session has since read a version above the write's. Such a read may have
   * brought into the session's causal past a concurrent write of the same key with a larger
   * version, which wins everywhere (last writer wins) and which the ring then holds: the
   * WB's older value would break causality (the checker found it on hot keys with puts held
   * up in the queues). Then the key is read from the ring too and the newer version
   * returned. Exact because a version is above every version in its causal past (the
   * stamp follows everything its writer read), so reads of lower versions cannot carry a
   * newer write of the key. The paper's WB check has only the ring-restriction rule.
   */
  private boolean ownAlone(Entry e) {
    synchronized (state) {
      return e.version >= maxReadVersion;
    }
  }

  private static boolean newer(Entry own, long version) {
    return own != null && own.version > version;
  }

  private ReadResult get(String key) {
    int bound = boundRing();
    Entry own = own(key, bound);
    if (own != null && (ownAlone(own) || Mutants.active(KarmaMutants.KARMA_OWN_WRITE_ALWAYS))) {
      access(true, true, false);
      return new ReadResult(Map.of(key, own.row), Map.of(key, own.version), 0, Map.of(), Double.NaN, 0, 0);
    }
    int ring = bound >= 0 ? bound : nearestRing(List.of(key));
    int server = rings.serverInRing(ring, key);
    int replicaDc = topology.dcOfServer(server);
    boolean local = replicaDc == dc;
    RingValue v;
    boolean cacheHit = false;
    long now = System.currentTimeMillis();
    boolean cacheable = dcCache && bound < 0 && !local && now >= cacheDownUntilMs && !carrying()
        && distanceMs(dc) < UNREACHABLE_MS; // the cache is on the datacenter's own servers
    try {
      if (cacheable) {
        try {
          CacheGetReply r = Calls.await(ep.call(rings.serverFor(dc, key),
              CacheGet.newBuilder().setKey(key).setReplicaServer(server).build(), CacheGetReply.class),
              "get of " + key + " through the datacenter cache", timeoutMs);
          v = r.getValue();
          cacheHit = r.getHit();
        } catch (OperationFailedException cacheFailed) {
          if (String.valueOf(cacheFailed.getMessage()).contains(KarmaServer.FILL_FAILED)) {
            throw cacheFailed; // the replica failed, not the cache: readTxn tries another ring
          }
          // §4.4 "Cache node failure": the cache holds only stable state, so losing it costs
          // latency, never availability: the cache is passed over for a second and
          // the key read at its replica (if that is what failed, this read fails too and
          // readTxn tries another ring).
          cacheDownUntilMs = System.currentTimeMillis() + CACHE_DOWN_MS;
          ProcessMetrics.record("cache_failures", 1);
          cacheable = false;
          v = Calls.await(ep.call(server, RingRead.newBuilder().addKeys(key).build(), RingReadReply.class),
              "get of " + key, timeoutMs).getValues(0);
        }
      } else {
        v = Calls.await(ep.call(server, RingRead.newBuilder().addKeys(key).build(), RingReadReply.class),
            "get of " + key, timeoutMs).getValues(0);
      }
    } catch (OperationFailedException e) {
      unreachable(replicaDc);
      throw e;
    }
    read(v, ring);
    boolean servedHere = local || cacheHit;
    access(servedHere, false, cacheHit);
    if (newer(own, v.getVersion())) { // the ring does not have the session's write yet
      return new ReadResult(Map.of(key, own.row), Map.of(key, own.version), servedHere ? 0 : 1, Map.of(),
          Double.NaN, cacheable ? 1 : 0, cacheable && !cacheHit ? 1 : 0);
    }
    Map<String, Double> staleness = cacheHit ? Map.of() : Map.of(key, v.getStalenessMs());
    return new ReadResult(Map.of(key, v.getValue()), Map.of(key, v.getVersion()), servedHere ? 0 : 1, staleness,
        Double.NaN, cacheable ? 1 : 0, cacheable && !cacheHit ? 1 : 0);
  }

  /** Eiger's get-transaction (§4.5) at one ring, bypassing the cache. */
  private ReadResult getTransaction(List<String> keys) {
    int bound = boundRing();
    int ring = bound >= 0 ? bound : nearestRing(keys);
    Map<String, Row> rows = new HashMap<>();
    Map<String, Long> versions = new HashMap<>();
    Map<String, Double> staleness = new HashMap<>();
    Map<Integer, List<String>> byServer = new HashMap<>();
    Map<String, Entry> ownToCompare = new HashMap<>();
    // Own writes come from the WB alone only if every key does: a key read from the ring may
    // bring a concurrent, newer version of a buffered key into the transaction's causal past.
    boolean allOwn = keys.stream().allMatch(k -> {
      Entry own = own(k, ring);
      return own != null && ownAlone(own);
    });
    for (String k : keys) {
      Entry own = own(k, ring);
      if (own != null && allOwn) {
        rows.put(k, own.row);
        versions.put(k, own.version);
        access(true, true, false);
      } else {
        if (own != null) {
          ownToCompare.put(k, own);
        }
        byServer.computeIfAbsent(rings.serverInRing(ring, k), s -> new ArrayList<>()).add(k);
      }
    }
    Map<String, RingValue> first = new HashMap<>();
    boolean round1Remote = readRound(byServer, keys1 -> RingRead.newBuilder().addAllKeys(keys1).build(),
        "get-transaction, first round", v -> first.put(v.getKey(), v));
    long effective = first.values().stream().mapToLong(RingValue::getEvt).max().orElse(0);
    Map<Integer, List<String>> again = new HashMap<>();
    for (RingValue v : first.values()) {
      if (v.getLvt() < effective && !Mutants.active(KarmaMutants.KARMA_SKIP_SECOND_ROUND)) {
        again.computeIfAbsent(rings.serverInRing(ring, v.getKey()), s -> new ArrayList<>()).add(v.getKey());
      } else {
        take(v, ring, rows, versions, staleness);
      }
    }
    boolean round2Remote = readRound(again,
        keys2 -> RingReadAt.newBuilder().addAllKeys(keys2).setTs(effective).build(),
        "get-transaction, second round", v -> take(v, ring, rows, versions, staleness));
    ownToCompare.forEach((k, own) -> {
      if (newer(own, versions.get(k))) { // the ring does not have the session's write yet
        rows.put(k, own.row);
        versions.put(k, own.version);
        staleness.remove(k);
      }
    });
    Map<String, Row> orderedRows = new LinkedHashMap<>();
    Map<String, Long> orderedVersions = new LinkedHashMap<>();
    for (String k : keys) {
      orderedRows.put(k, rows.get(k));
      orderedVersions.put(k, versions.get(k));
    }
    return new ReadResult(orderedRows, orderedVersions, (round1Remote ? 1 : 0) + (round2Remote ? 1 : 0), staleness);
  }

  /**
   * One round of a get-transaction: asks each server for its keys at once, hands every value
   * to {@code each}; returns whether it asked a server outside the session's datacenter. A
   * server that does not answer marks its datacenter unreachable and fails the transaction.
   */
  private boolean readRound(Map<Integer, List<String>> byServer, Function<List<String>, Message> request,
      String what, Consumer<RingValue> each) {
    boolean remote = false;
    Map<Integer, CompletableFuture<RingReadReply>> calls = new HashMap<>();
    for (Map.Entry<Integer, List<String>> e : byServer.entrySet()) {
      remote |= topology.dcOfServer(e.getKey()) != dc;
      calls.put(e.getKey(), ep.call(e.getKey(), request.apply(e.getValue()), RingReadReply.class));
    }
    for (Map.Entry<Integer, CompletableFuture<RingReadReply>> e : calls.entrySet()) {
      RingReadReply reply;
      try {
        reply = Calls.await(e.getValue(), what, timeoutMs);
      } catch (OperationFailedException failed) {
        unreachable(topology.dcOfServer(e.getKey()));
        throw failed;
      }
      reply.getValuesList().forEach(each);
    }
    return remote;
  }

  private void take(RingValue v, int ring, Map<String, Row> rows, Map<String, Long> versions,
      Map<String, Double> staleness) {
    rows.put(v.getKey(), v.getValue());
    versions.put(v.getKey(), v.getVersion());
    staleness.put(v.getKey(), v.getStalenessMs());
    read(v, ring);
    access(rings.replicaInRing(ring, v.getKey()) == dc, false, false);
  }

  /** A value read at a ring: an in-flight one restricts the session to that ring (§4.2). */
  private void read(RingValue v, int ring) {
    ep.clock().observeTimestamp(v.getVersion()); // the session's next stamp is above what it read
    synchronized (state) {
      ++seq; // orders this read against the session's puts and notify-afters (restrictions)
      maxReadVersion = Math.max(maxReadVersion, v.getVersion());
      if (mode == Mode.COPS_PR) {
        // COPS's never-depend rule (Lloyd et al., "Don't Settle for Eventual", SOSP 2011,
        // §5.1, client metadata collection): a version known to be in every ring (its
        // writer said it is stable) is no dependency; the MM's in-flight mark says which.
        if (v.getInFlight()) {
          readsSincePut.add(Dep.newBuilder().setKey(v.getKey()).setVersion(v.getVersion()).build());
        }
      } else if (v.getInFlight()) {
        if (restrictions.isEmpty()) {
          restrictedSinceMs = System.currentTimeMillis();
        }
        restrictions.add(new Restriction(v.getKey(), v.getVersion(), ring, seq));
      }
    }
  }

  /** Where a key was read from: the local access fraction of the paper's Fig. 11. */
  private static void access(boolean local, boolean fromWb, boolean fromCache) {
    ProcessMetrics.record("access_local", local ? 1 : 0);
    ProcessMetrics.record("access_wb", fromWb ? 1 : 0);
    ProcessMetrics.record("access_cache", fromCache ? 1 : 0);
  }

  // ------------------------------------------------------------------ writes

  @Override
  public synchronized WriteResult write(String key, Row row) {
    if (closed) {
      throw new OperationFailedException("session closed", null);
    }
    long version;
    synchronized (state) {
      awaitRoom(key);
      if (closed) {
        throw new OperationFailedException("session closed", null);
      }
      ProcessMetrics.record("write_ring_down", anyDown(System.currentTimeMillis()) ? 1 : 0);
      version = stamp();
      List<Dep> deps = new ArrayList<>();
      if (mode == Mode.COPS_PR) {
        if (!Mutants.active(KarmaMutants.COPS_PR_NO_PUT_AFTER)) {
          deps.addAll(readsSincePut);
        }
        readsSincePut.clear();
      } else {
        deps.addAll(restrictionDeps());
        deps.addAll(carried);
      }
      ProcessMetrics.record("put_deps", deps.size()); // put-after dependencies each ring checks
      Entry e = new Entry(++seq, key, version, row, deps, rings.numRings());
      wb.put(key, e);
      lastPut = e;
      enqueue(e);
    }
    probe(); // after the stamp: a probe's answer says nothing of what the session follows
    return new WriteResult(version, 0);
  }

  /**
   * A put's version. The paper resolves concurrent puts of a key by version numbers "as in
   * previous work" (§2.2: COPS, whose Lamport versions the key's local storage node assigns,
   * so a put outranks whatever that node holds). Here the CC stamps the put at the WB
   * (§4.1.2), before any storage node sees it, and the session's Lamport clock knows only
   * what the session has heard: a session that had not read a key stamped its put below the
   * key's loaded value and the put lost for good. The stamp takes the physical clock as a
   * floor (a hybrid logical clock: Kulkarni et al., "Logical Physical Clocks", OPODIS 2014),
   * so a put outranks every version stamped before it began, up to the clocks' skew, and,
   * by Lamport's rule (the transport's clocks), everything the session causally follows.
   */
  private long stamp() {
    if (Mutants.active(KarmaMutants.KARMA_LAMPORT_VERSIONS)) {
      return ep.clock().nextTimestamp();
    }
    return LamportClock.timestamp(ep.clock().observeWallClock(), ep.clock().nodeId());
  }

  /**
   * Waits until every ring that is up has room in the session's queue for one more put. A
   * ring that answered none of the session's puts for {@code dead_ring_after_timeouts} RPC
   * timeouts is down (§4.4: a dead or cut-off datacenter in it): its queue grows and the put
   * returns (the paper's persistent WB keeps writes available; their completion waits for
   * that ring). A ring that answers again counts once more; while it works through what it
   * missed, its bound is the backlog it came back to, lowered by one per two of its answers,
   * so a writer waits about two of its round trips, not the whole backlog (measured on
   * karma-dead-ring: 6.6-7.8 s write p50 for 30 s after a 40 s stop, with the plain
   * bound). While no ring is down or working through a backlog this bounds the puts not yet
   * complete: each queue is a suffix of the session's puts, so the longest holds every
   * incomplete one. Holds {@link #state}.
   */
  private void awaitRoom(String key) {
    int lastFull = -1;
    long lastAcks = 0;
    long progressDeadline = 0;
    int full;
    while ((full = fullRing(System.currentTimeMillis())) >= 0) {
      long now = System.currentTimeMillis();
      if (full != lastFull || acks[full] != lastAcks) { // the ring took a put: it works through the queue
        lastFull = full;
        lastAcks = acks[full];
        progressDeadline = now + 2 * timeoutMs;
      }
      if (closedHard) {
        throw new OperationFailedException("put of " + key + ": session closed while it waited for room", null);
      }
      if (unansweredSinceMs[full] == 0 && now >= progressDeadline) {
        // Neither an answer nor a failure in two RPC timeouts (each call times out after one).
        throw new OperationFailedException("put of " + key + ": ring " + full + " answered none of the session's "
            + queues[full].size() + " queued puts in " + 2 * timeoutMs + " ms", null);
      }
      // A failing ring is waited for until it counts as down; an answer or a failure wakes us sooner.
      long wakeAt = unansweredSinceMs[full] > 0 ? unansweredSinceMs[full] + deadRingAfterMs : progressDeadline;
      try {
        state.wait(Math.max(1, wakeAt - now));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new OperationFailedException("put of " + key + " interrupted", e);
      }
    }
  }

  /** A ring that is up and whose queue has no room, or -1. Holds {@link #state}. */
  private int fullRing(long now) {
    for (int r = 0; r < queues.length; r++) {
      if (queues[r].size() >= room(r) && !down(r, now)) {
        return r;
      }
    }
    return -1;
  }

  /** How many puts ring {@code r}'s queue may hold before a writer waits. Holds {@link #state}. */
  private long room(int r) {
    return Math.max(bufferEntries, backlog[r] - backlogAnswers[r] / 2);
  }

  /** Whether some ring is down for the session. Holds {@link #state}. */
  private boolean anyDown(long now) {
    for (int r = 0; r < queues.length; r++) {
      if (down(r, now)) {
        return true;
      }
    }
    return false;
  }

  /** Whether ring {@code r} answered none of the session's puts for long enough to be down. Holds {@link #state}. */
  private boolean down(int r, long now) {
    return unansweredSinceMs[r] > 0 && now - unansweredSinceMs[r] >= deadRingAfterMs;
  }

  /** Karma has no write-only transactions (§4.5); experiments refuse to run them with it. */
  @Override
  public WriteResult writeTxn(Map<String, Row> writes) {
    if (writes.size() == 1) {
      Map.Entry<String, Row> only = writes.entrySet().iterator().next();
      return write(only.getKey(), only.getValue());
    }
    throw new UnsupportedOperationException(mode.systemName + " has no write-only transactions (Karma paper §4.5)");
  }

  /**
   * The restricting values, every version read of every key: not only a key's newest, since
   * a newer version read later may be a concurrent write that says nothing of the older one's
   * causal past (keeping the newest per key let a put-after overtake that past on a hot key,
   * a violation the checker found on karma-default). Holds {@link #state}.
   */
  private List<Dep> restrictionDeps() {
    LinkedHashSet<Dep> deps = new LinkedHashSet<>();
    for (Restriction r : restrictions) {
      deps.add(Dep.newBuilder().setKey(r.key()).setVersion(r.version()).build());
    }
    return new ArrayList<>(deps);
  }

  /**
   * Write insertion (§4.2): a restricted session that has not lifted its restrictions for a
   * period inserts a notify-after: the dependency checks of a put-after carrying the
   * restrictions, in every ring, without a write. It is sent at once rather than queued
   * behind the session's puts: it checks the values the session read, not its writes, and
   * waiting in the queues would hold up the puts behind it as well.
   */
  private void maybeNotifyAfter() {
    if (mode != Mode.KARMA) {
      return;
    }
    long now = System.currentTimeMillis();
    synchronized (state) {
      if (restrictions.isEmpty() || notifyPending != null
          || now - Math.max(lastNotifyMs, restrictedSinceMs) < notifyAfterMs) {
        return;
      }
      if (lastPut != null && lastPut.rings < queues.length && !anyStalled() // a put held up at a ring lifts nothing
          && longestQueue() <= bufferEntries // nor one behind a backlog (a ring back from down)
          && lastPut.seq > restrictions.get(restrictions.size() - 1).seq()) {
        return; // a put on its way carries every restriction and lifts them when it completes
      }
      notifyAfter(now, -1);
    }
  }

  /**
   * Sends a notify-after for the session's restrictions to every ring, the ring it is
   * restricted to included: a value read there in flight was applied there, but its
   * invalidations of datacenter caches may still be on their way (they are sent after the
   * apply), and a cache filled from that ring could serve an older value once the session is
   * unrestricted. Completes true if it lifted the restrictions read before it. Holds {@link #state}.
   */
  private CompletableFuture<Boolean> notifyAfter(long now, int skipRing) {
    lastNotifyMs = now;
    long notifySeq = ++seq;
    List<CompletableFuture<DepsComplete>> checks = new ArrayList<>();
    List<Dep> deps = restrictionDeps();
    for (int r = 0; r < queues.length; r++) {
      if (r == skipRing) {
        continue;
      }
      Map<Integer, DepCheck.Builder> byServer = new HashMap<>();
      for (Dep d : deps) {
        byServer.computeIfAbsent(rings.serverInRing(r, d.getKey()), x -> DepCheck.newBuilder()).addDeps(d);
      }
      byServer.forEach((server, check) -> checks.add(ep.call(server, check.build(), DepsComplete.class)));
    }
    ProcessMetrics.record("notify_after", 1);
    CompletableFuture<Boolean> done = new CompletableFuture<>();
    if (skipRing < 0) {
      notifyPending = done;
    } else {
      forcedPending = done;
    }
    CompletableFuture.allOf(checks.toArray(CompletableFuture[]::new))
        .orTimeout(timeoutMs, TimeUnit.MILLISECONDS).whenComplete((ok, error) -> {
          synchronized (state) {
            if (notifyPending == done) {
              notifyPending = null;
            }
            if (forcedPending == done) {
              forcedPending = null;
            }
            if (error == null) {
              if (skipRing >= 0) { // see liftNow
                for (Restriction x : restrictions) {
                  if (x.seq() < notifySeq) {
                    carried.add(Dep.newBuilder().setKey(x.key()).setVersion(x.version()).build());
                  }
                }
                carriedSince = notifySeq;
                ProcessMetrics.record("forced_lifts", 1);
              }
              restrictions.removeIf(x -> x.seq() < notifySeq);
            }
          }
          done.complete(error == null);
        });
    return done;
  }

  /** Whether the session carries values a forced lift did not confirm in their ring (see liftNow). */
  private boolean carrying() {
    synchronized (state) {
      return !carried.isEmpty();
    }
  }

  /** The most puts queued for one ring. Holds {@link #state}. */
  private int longestQueue() {
    int most = 0;
    for (ArrayDeque<Entry> q : queues) {
      most = Math.max(most, q.size());
    }
    return most;
  }

  /** Whether some ring's queue waits to send again an entry the ring did not take. Holds {@link #state}. */
  private boolean anyStalled() {
    for (long since : unansweredSinceMs) {
      if (since > 0) {
        return true;
      }
    }
    return false;
  }

  /** Holds {@link #state}. */
  private void enqueue(Entry e) {
    incomplete++;
    for (int r = 0; r < queues.length; r++) {
      queues[r].add(e);
      pump(r);
    }
  }

  /** Sends ring {@code r}'s next entry if none is on its way. Holds {@link #state}. */
  private void pump(int r) {
    if (sending[r] || queues[r].isEmpty() || closedHard) {
      return;
    }
    sending[r] = true;
    headSentMs[r] = System.currentTimeMillis();
    send(r, queues[r].peek());
  }

  private void send(int r, Entry e) {
    CompletableFuture<PutDone> done = ep.call(rings.serverInRing(r, e.key), Put.newBuilder().setKey(e.key)
        .setVersion(e.version).setValue(e.row).addAllDeps(e.deps).build(), PutDone.class);
    done.orTimeout(timeoutMs, TimeUnit.MILLISECONDS).whenComplete((ok, error) -> {
      if (error != null) {
        // The ring's server is down or cut off: the entry waits (later ones behind it, in order).
        ProcessMetrics.record("propagation_retries", 1);
        synchronized (state) {
          if (unansweredSinceMs[r] == 0) {
            unansweredSinceMs[r] = headSentMs[r]; // the ring answered nothing since
          }
          state.notifyAll(); // a writer waiting for room learns when the ring will count as down
        }
        CompletableFuture.delayedExecutor(RETRY_MS, TimeUnit.MILLISECONDS).execute(() -> {
          synchronized (state) {
            if (!closedHard) {
              send(r, e);
            }
          }
        });
        return;
      }
      synchronized (state) {
        // Over its bound: the queue grew while the ring was down (no clock: a ring counts as
        // down by time, and a clock step must not hide that it is back).
        boolean back = queues[r].size() > room(r);
        queues[r].poll();
        sending[r] = false;
        unansweredSinceMs[r] = 0;
        acks[r]++;
        if (back) { // its bound is the backlog, lowered as it answers (see awaitRoom)
          backlog[r] = queues[r].size() + 1;
          backlogAnswers[r] = 0;
        } else if (backlog[r] > 0 && room(r) <= bufferEntries) {
          backlog[r] = 0;
        }
        if (backlog[r] > 0) {
          backlogAnswers[r]++;
        }
        e.inRing[r] = true;
        if (++e.rings == queues.length) {
          completed(e);
        }
        pump(r);
        state.notifyAll(); // room in ring r's queue
      }
    });
  }

  /** Every ring has the entry (§4.1.2 write completion). Holds {@link #state}. */
  private void completed(Entry e) {
    incomplete--;
    for (int r = 0; r < queues.length; r++) { // the MMs clear the in-flight mark (readers' restrictions; never-depend)
      ep.send(rings.serverInRing(r, e.key), Stable.newBuilder().setKey(e.key).setVersion(e.version).build());
    }
    wb.remove(e.key, e);
    ProcessMetrics.record("write_completion", (System.nanoTime() - e.startNanos) / 1000);
    // The entry carried every restriction from reads before it, now complete in every ring.
    restrictions.removeIf(x -> x.seq() < e.seq);
    if (e.seq > carriedSince) {
      carried.clear();
    }
    state.notifyAll();
  }

  // ------------------------------------------------------------------ lifecycle and tests

  /** The session's Lamport clock (tests: a session whose next version is far ahead). */
  LamportClock clock() {
    return ep.clock();
  }

  /** The ring an unrestricted get-transaction of {@code keys} would read (tests). */
  int nearestRingFor(List<String> keys) {
    return nearestRing(keys);
  }

  /** The session's puts queued for ring {@code r} (tests). */
  int queued(int r) {
    synchronized (state) {
      return queues[r].size();
    }
  }

  /** The session's restrictions (tests). */
  int restrictions() {
    synchronized (state) {
      return restrictions.size();
    }
  }

  /** The ring the session is restricted to, or -1 (tests). */
  int restrictedRing() {
    return mode == Mode.KARMA ? boundRing() : -1;
  }

  /** Waits until every write of the session is complete, at most {@code ms}; whether they are. */
  boolean drain(long ms) {
    long deadline = System.currentTimeMillis() + ms;
    synchronized (state) {
      while (incomplete > 0) {
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) {
          return false;
        }
        try {
          state.wait(left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      return true;
    }
  }

  /**
   * Closes the session after its buffered writes reached every ring (the CC's write buffer is
   * persistent in the paper; here it lives with the session, so closing waits for it), at
   * most the RPC timeout times the number of writes left, capped at two minutes.
   */
  @Override
  public void close() {
    closed = true;
    int left;
    boolean ringDown;
    synchronized (state) {
      left = incomplete;
      ringDown = anyStalled();
    }
    // A ring that takes none of the puts (down or cut off) would hold the close for as long
    // as it stays so: one RPC timeout then, in case it is back.
    if (left > 0 && !drain(ringDown ? timeoutMs : Math.min(120_000, timeoutMs * left))) {
      synchronized (state) {
        left = incomplete;
      }
      System.err.println(mode.systemName + " client " + ep.id() + ": closing with " + left
          + " writes not yet in every ring (a ring down or behind); they are dropped with the session");
    }
    synchronized (state) {
      closedHard = true;
      state.notifyAll(); // a writer waiting for room fails now
    }
    ep.close();
  }
}
