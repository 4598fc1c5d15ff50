package org.k2bench.k2;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.data.Row;
import org.k2bench.core.server.FailureDetector;
import org.k2bench.core.server.ServerActor;
import org.k2bench.core.store.MultiVersionStore;
import org.k2bench.core.store.MultiVersionStore.VersionView;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.MalformedMessageException;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.txn.WriteTransactions;
import org.k2bench.core.data.Dep;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.Replicate;
import org.k2bench.core.txn.proto.ReplicatedKey;
import org.k2bench.core.txn.proto.WotSubRequest;
import org.k2bench.k2.proto.KeyVersions;
import org.k2bench.k2.proto.ReadByTimeReplies;
import org.k2bench.k2.proto.ReadByTimeReply;
import org.k2bench.k2.proto.ReadByTimeRequest;
import org.k2bench.k2.proto.ReadReply;
import org.k2bench.k2.proto.ReadRequest;
import org.k2bench.k2.proto.RemoteRead;
import org.k2bench.k2.proto.RemoteReadReply;
import org.k2bench.k2.proto.VersionInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A K2 server: one shard of one datacenter (K2 paper §III-V).
 *
 * <p>The server is a {@link ServerActor}: every message, reply and timer runs on its single
 * thread, so the state below needs no locks. It keeps metadata for every key of its shard in a
 * {@link MultiVersionStore}, values only for its replica keys, and a {@link DcCache} of
 * non-replica values. Write-only transactions (§III-C) and the commit of replicated ones
 * (§IV-A), with IncomingWrites, run in the shared {@link WriteTransactions} engine; what is
 * K2's own is here: the reads (§V-C), how a committed key is applied, and replication
 * with the constrained topology (§IV-A).
 */
public final class K2Server extends ServerActor {
  private static final Logger LOG = LoggerFactory.getLogger(K2Server.class);

  private record VKey(String key, long version) {}

  /** A remote read waiting at a replica for a version that has not arrived yet. */
  private record WaitingRead(Incoming m, long deadlineMs) {}

  private final DcCache<Row> cache;
  /**
   * Remote reads that arrived before their version (with every replica up, never: the
   * constrained topology; a replica that replication went on without can get a read first).
   */
  private final Map<VKey, List<WaitingRead>> waitingRemoteReads = new HashMap<>();
  /**
   * Which other datacenters answer heartbeats (§VI-A's "available" datacenters): remote
   * reads ask suspected replicas last, replication does not wait for suspected replicas,
   * and the first replication phases of a suspected origin are carried on from here.
   */
  private final FailureDetector detector;
  /**
   * First-phase sub-requests received lately (this server has their data), by arrival:
   * if their origin datacenter dies before its second phase reached everyone, this server
   * sends it on its behalf (see {@link #carryOn}).
   */
  private final java.util.ArrayDeque<Received> recentFirstPhases = new java.util.ArrayDeque<>();
  /** The versions in {@link #recentFirstPhases} (a resent first phase is kept once). */
  private final Set<Long> recentFirstPhaseVersions = new HashSet<>();
  /** At most this many first phases are kept (the oldest go first, counted). */
  private static final int MAX_RECENT_FIRST_PHASES = 200_000;
  /** How long a first-phase sub-request is kept for {@link #carryOn}. */
  private final long carryOnWindowMs;

  /** A first phase received from its origin, and whether it was carried on already. */
  private static final class Received {
    final long atMs;
    final Replicate r;
    boolean carried;

    Received(long atMs, Replicate r) {
      this.atMs = atMs;
      this.r = r;
    }
  }
  /**
   * Versions whose data only some replica datacenters have (replication went on without
   * one): which ones, for remote reads. Bounded: old entries concern collected versions.
   */
  private final Map<VKey, List<Integer>> replicasWithData = new java.util.LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<VKey, List<Integer>> eldest) {
      return size() > 100_000;
    }
  };
  /** Client sub-requests whose first replication phase has not finished, by version. */
  private final Map<Long, List<Replication>> replicating = new HashMap<>();
  /** Write-only transactions, local and replicated; also holds IncomingWrites (§IV-A). */
  private final WriteTransactions writes;
  /**
   * Sends replication messages again until the other datacenter acknowledges them, parked
   * while the detector suspects it (§VI-A: a transient failure loses no data, pending
   * updates are replicated once a datacenter is restored).
   */
  private final org.k2bench.core.server.Retransmitter retx;

  /**
   * Starts a K2 server on its topology address.
   *
   * @param dcCache false for systems built on K2's servers without a DC cache (PaRiS*):
   *     a local write of a non-replica key is then kept only for the session that wrote it
   */
  public static K2Server start(Transport transport, int serverId, ServerOptions options, boolean dcCache) {
    return new K2Server(transport, serverId, options, dcCache);
  }

  private K2Server(Transport transport, int serverId, ServerOptions options, boolean dcCache) {
    super("k2", transport, serverId, options, replicaKeysOf(transport, serverId));
    int perKey = options.cacheVersionsPerKey() == 0 ? Integer.MAX_VALUE : options.cacheVersionsPerKey();
    this.cache = new DcCache<>(dcCache ? options.cacheKeysPerServer(topology.serversPerDc()) : 0, perKey, !dcCache);
    // Entries for a suspected datacenter wait for trust(): heartbeats are the probe.
    this.retx = new org.k2bench.core.server.Retransmitter(this, this::suspectedDc);
    this.writes = new WriteTransactions(ep, thread, store, new WriteTransactions.Host() {
      @Override
      public int homeServer(String key) {
        return placement.serverFor(dc, key);
      }

      @Override
      public void apply(String key, long txnId, long version, long evt, Row value, int writer) {
        K2Server.this.apply(key, txnId, version, evt, value, writer);
      }

      @Override
      public void replicate(WotSubRequest sub, long version) {
        K2Server.this.replicate(sub, version);
      }

      @Override
      public void incoming(String key, long version, Row value) {
        answerWaitingRemoteReads(key, version, value);
        if (org.k2bench.core.testing.Mutants.active(K2Mutants.INCOMING_WRITES_VISIBLE)) {
          store.commit(key, version, version, clock.nextTimestamp(), value); // the bug: visible before commit
        }
      }

      @Override
      public void replicasWithData(String key, long version, List<Integer> dcs) {
        VKey k = new VKey(key, version);
        List<Integer> known = replicasWithData.get(k);
        if (known != null || !dcs.isEmpty()) {
          replicasWithData.put(k, mergeReplicaLists(known, dcs));
        }
      }

      @Override
      public void count(String stat) {
        K2Server.this.count(stat);
      }

      @Override
      public void later(long delayMs, Runnable r) {
        K2Server.this.later(delayMs, r);
      }

      @Override
      public void replicated(Replicate r, int from) {
        K2Server.this.received(r, from);
      }
    }, options.rpcTimeoutMs(), retx);
    this.detector = new FailureDetector(ep, topology, shard, Runnable::run,
        options.failoverTimeoutMs(), FailureDetector::monotonicMs, this::suspect, this::trust);
    double maxRtt = 0;
    for (int d = 0; d < topology.numDcs(); d++) {
      maxRtt = Math.max(maxRtt, topology.rttMs(dc, d));
    }
    // An origin sends its second phase within a fail-over timeout (plus a round trip) of
    // this server's acknowledgement, unless its own thread is that far behind; if it dies
    // before, the detector says so within another fail-over timeout (plus a round trip and
    // a heartbeat interval). Kept a little longer. (Not longer still: every suspicion of
    // the origin sends all of them on again.)
    this.carryOnWindowMs = 3 * options.failoverTimeoutMs() + 2 * (long) Math.ceil(maxRtt) + 1_000;
    start();
  }

  /** A replica list that says every replica datacenter has the version. */
  static final List<Integer> ALL_REPLICAS = java.util.Collections.unmodifiableList(new ArrayList<>());

  /**
   * What is known of which replica datacenters have a version, after another sender (the
   * origin, or a replica carrying it on) said {@code heard} (empty: all of them): the union
   * of what each said, and once anyone said all, all.
   *
   * @param known what was known, or null for nothing
   */
  static List<Integer> mergeReplicaLists(List<Integer> known, List<Integer> heard) {
    if (known == ALL_REPLICAS || heard.isEmpty()) {
      return ALL_REPLICAS;
    }
    java.util.TreeSet<Integer> union = new java.util.TreeSet<>(heard);
    if (known != null) {
      union.addAll(known);
    }
    return List.copyOf(union);
  }

  /** Whether this server is a replica server of a key (one Placement, built once). */
  private static Predicate<String> replicaKeysOf(Transport transport, int serverId) {
    Placement p = Placement.of(transport.topology());
    int dc = transport.topology().dcOfServer(serverId);
    return key -> p.isReplica(dc, key);
  }

  @Override
  protected void handle(Incoming m) {
    if (m.is(ReadRequest.class)) {
      onRead(m, m.as(ReadRequest.class));
    } else if (m.is(ReadByTimeRequest.class)) {
      onReadByTime(m, m.as(ReadByTimeRequest.class));
    } else if (m.is(RemoteRead.class)) {
      onRemoteRead(m, m.as(RemoteRead.class));
    } else if (!writes.handle(m)) {
      throw new MalformedMessageException("K2 server does not handle " + m.typeName());
    }
  }

  private void checkShard(String key) {
    int owner = placement.serverFor(dc, key);
    if (owner != ep.id()) {
      throw new MalformedMessageException("key '" + key + "' belongs to shard " + topology.shardOfServer(owner)
          + ", not to server " + ep.id() + " (shard " + shard + ")");
    }
  }

  private boolean isReplica(String key) {
    return placement.isReplica(dc, key);
  }

  /**
   * The value of a version if {@code reader} may have it from here: stored (replica keys,
   * and the initial version) or cached (non-replica keys).
   */
  private Row localValue(String key, long version, Row stored, int reader) {
    if (stored != null) {
      return stored;
    }
    return cache.get(key, version, reader);
  }

  // =================================================================== reads (§V-C)

  /**
   * First round: every visible version valid at or after read_ts, with EVT, LVT and the
   * value where stored or cached. A version a pending transaction may still change comes
   * back without a value ("empty value").
   */
  private void onRead(Incoming m, ReadRequest req) {
    count("round1_requests");
    clock.observeTimestamp(req.getReadTs());
    long now = clock.now();
    ReadReply.Builder reply = ReadReply.newBuilder();
    for (String key : req.getKeysList()) {
      checkShard(key);
      boolean nonReplica = !isReplica(key);
      if (nonReplica) {
        count("nonreplica_key_reads"); // the denominator of the DC cache hit rate
      }
      boolean cachedValueReturned = false;
      KeyVersions.Builder kv = KeyVersions.newBuilder().setKey(key);
      for (VersionView<Row> v : store.versionsFrom(key, req.getReadTs(), now)) {
        VersionInfo.Builder vi = VersionInfo.newBuilder().setVersion(v.version()).setEvt(v.evt())
            .setLvt(v.lvt()).setStalenessMs(v.stalenessMs()).setWithheld(v.withheld())
            .setEvtLagMs(clockHistory.msSince(v.evt()));
        Row value = v.withheld() ? null : localValue(key, v.version(), v.value(), m.from());
        if (value != null) {
          vi.setHasValue(true).setValue(value);
          cachedValueReturned |= v.value() == null;
        }
        kv.addVersions(vi);
      }
      if (cachedValueReturned) {
        count("round1_cached_keys");
        cache.touch(key);
      }
      reply.addKeys(kv);
    }
    m.reply(reply.setReadTsLagMs(clockHistory.msSince(req.getReadTs())).build());
  }

  /** Where one key's second-round answer goes: its slot in its request's reply. */
  private record Answer(Batch batch, int slot) {
    /** The reading client (whose session's own writes localValue may serve). */
    int reader() {
      return batch.m.from();
    }

    void ok(ReadByTimeReply reply) {
      batch.ok(slot, reply);
    }

    void error(String message) {
      batch.error(message);
    }
  }

  /**
   * Second round: the client's one request to this server, with each of its keys here read
   * exactly as alone, with its own wait and fetch, and the reply carrying their answers in
   * order once all are in. The paper's client reads each key by time (Fig. 5: {@code read_by_time(k,
   * ts)}; "at most one inter-datacenter round trip": in parallel) and waits for all before
   * the transaction returns, so one request per server asks the same, and answers no later
   * than the slowest key did. Only failures differ: the keys of one server share the
   * client's RPC timeout (awaited one after another, each had its own), and the error
   * reported is the first to happen on that server.
   */
  private void onReadByTime(Incoming m, ReadByTimeRequest req) {
    if (req.getKeysCount() == 0) {
      throw new MalformedMessageException("a second-round request names no key");
    }
    count("round2_requests");
    long ts = req.getTs();
    req.getKeysList().forEach(this::checkShard); // all refused before any waits
    Batch batch = new Batch(m, req.getKeysCount());
    for (int i = 0; i < req.getKeysCount(); i++) {
      readByTime(req.getKeys(i), ts, batch.slot(i));
    }
  }

  /** A batched second-round request's answers, on the server's thread. */
  private static final class Batch {
    final Incoming m;
    final ReadByTimeReply[] answers;
    int missing;
    boolean failed;

    Batch(Incoming m, int keys) {
      this.m = m;
      this.answers = new ReadByTimeReply[keys];
      this.missing = keys;
    }

    Answer slot(int i) {
      return new Answer(this, i);
    }

    void ok(int i, ReadByTimeReply reply) {
      answers[i] = reply;
      if (--missing == 0 && !failed) {
        m.reply(ReadByTimeReplies.newBuilder().addAllReplies(java.util.Arrays.asList(answers)).build());
      }
    }

    void error(String message) {
      if (!failed) { // the transaction fails, with the first error of its keys here
        failed = true;
        m.replyError(message);
      }
    }
  }

  /**
   * The value of key (of this shard: the caller checked) at logical time ts. Waits for
   * pending local write-only transactions that may commit at or below ts (at most a local
   * round trip), then answers from local data, or fetches the exact version from the
   * nearest replica datacenter, caches it and answers: one non-blocking wide-area request
   * at most.
   */
  private void readByTime(String key, long ts, Answer a) {
    count("round2_keys");
    clock.observeTimestamp(ts); // later prepares here get prepare_ts > ts, so EVT > ts
    store.protectAt(key, ts); // GC keeps the answer while this read waits
    // Local transactions commit within a local round trip; the deadline only matters for a
    // server whose coordinator died on its own (server.processes: per_server).
    long waitMs = Math.min(options.rpcTimeoutMs(), options.txnTimeoutMs());
    store.awaitKey(key, () -> !store.hasPendingBelow(key, ts), () -> readAt(a, key, ts),
        System.currentTimeMillis() + waitMs, () -> {
          count("reads_unresolved");
          a.error("a write-only transaction pending on '" + key + "' below " + LamportClock.format(ts)
              + " did not commit within " + waitMs + " ms");
        });
  }

  private void readAt(Answer a, String key, long ts) {
    VersionView<Row> v = store.versionAt(key, ts, clock.now());
    if (v == null) {
      count("round2_gc_misses");
      a.error("no version of '" + key + "' at " + LamportClock.format(ts)
          + " is left (garbage-collected); the transaction outlived its timeout");
      return;
    }
    ReadByTimeReply.Builder reply = ReadByTimeReply.newBuilder().setVersion(v.version())
        .setEvt(v.evt()).setStalenessMs(v.stalenessMs());
    Row value = localValue(key, v.version(), v.value(), a.reader());
    if (value != null) {
      if (v.value() == null) {
        count("round2_cache_hits");
        cache.touch(key);
      }
      a.ok(reply.setValue(value).build());
      return;
    }
    count("remote_fetches");
    fetch(new Fetch(a, key, v.version(), reply, replicasToAsk(key, v.version())), 0);
  }

  /**
   * The key's replica datacenters in the order to ask them ({@link #askOrder}): available
   * ones first, among them those known to have this version (asking one that lacks it is
   * safe, only slower: it waits, and the next is asked beside it).
   */
  private int[] replicasToAsk(String key, long version) {
    List<Integer> known = replicasWithData.get(new VKey(key, version));
    return askOrder(placement.replicasByDistance(dc, key), known == ALL_REPLICAS ? null : known,
        detector::suspected);
  }

  /**
   * The order in which to ask replica datacenters for a version: the available ones first
   * (§VI-A: non-replica datacenters "send their remote read requests to the available
   * replica datacenters"), among them those known to have it (one that lacked it when
   * replication went on without it may still lack it, and makes the read wait), nearest
   * first. A suspected one is still asked, last, even when only it was known to have the
   * version: suspicion is not proof, and it may hold the only copy; but the list of replicas
   * with the data is as old as the write's second phase (the paper's list names every
   * replica, §IV-A; a partial one is this implementation's, for replication that went on
   * without a replica), a replica left out only because it answered late gets the first
   * phase when it arrives, and a dead datacenter asked first would cost every such read the
   * failover timeout until the key is written again. Should the available one still lack
   * the version, {@link #fetch} keeps its call open beside the next one's.
   *
   * @param byDistance the key's replica datacenters, nearest first
   * @param known those known to have the version, or null if all have it
   */
  static int[] askOrder(int[] byDistance, List<Integer> known, java.util.function.IntPredicate suspected) {
    return java.util.Arrays.stream(byDistance).boxed()
        .sorted(java.util.Comparator.comparingInt(d -> (suspected.test(d) ? 2 : 0)
            + (known != null && !known.contains(d) ? 1 : 0)))
        .mapToInt(Integer::intValue).toArray();
  }

  /** One remote read's calls to the key's replica datacenters. */
  private static final class Fetch {
    final Answer a;
    final String key;
    final long version;
    final ReadByTimeReply.Builder reply;
    final int[] replicas;
    /** Replicas asked so far (the next to ask is replicas[asked]), and of those, failed. */
    int asked;
    int failed;
    boolean done;
    /** When the next replica is asked unless an answer came first. */
    Timer hedge;

    Fetch(Answer a, String key, long version, ReadByTimeReply.Builder reply, int[] replicas) {
      this.a = a;
      this.key = key;
      this.version = version;
      this.reply = reply;
      this.replicas = replicas;
    }
  }

  /**
   * Fetches the exact version from the key's replica datacenters in {@code replicas} order,
   * caches it and answers. A replica that has not answered within the failover timeout
   * (down, paused, cut off, or waiting for a version that has not reached it yet) gets the
   * next one asked beside it (paper §VI-A, f >= 2), and so does one that fails at once;
   * every call stays open until the RPC timeout and the first value to come back answers,
   * so a slow replica's late answer is not thrown away for a dead one's error. The read
   * fails only when every replica has failed. The constrained topology guarantees every
   * replica gets the version.
   */
  private void fetch(Fetch f, int i) {
    f.asked = i + 1;
    int replicaDc = f.replicas[i];
    RemoteRead rr = RemoteRead.newBuilder().setKey(f.key).setVersion(f.version).build();
    CompletableFuture<RemoteReadReply> call = ep.call(topology.serverId(replicaDc, shard), rr, RemoteReadReply.class);
    if (f.asked < f.replicas.length) {
      f.hedge = later(options.failoverTimeoutMs(), () -> askNext(f, i));
    }
    onServer(call, options.rpcTimeoutMs(), (r, err) -> {
      if (f.done) {
        return;
      }
      if (err != null) {
        f.failed++;
        if (f.failed == f.asked && f.asked == f.replicas.length) {
          f.done = true;
          f.a.error("remote read of '" + f.key + "' failed at every replica datacenter, last "
              + topology.dcName(replicaDc) + ": " + err);
        } else {
          askNext(f, i); // failed at once (or timed out): no need to wait for the failover timeout
        }
        return;
      }
      f.done = true;
      if (f.hedge != null) {
        f.hedge.cancel();
      }
      cache.put(f.key, f.version, r.getValue());
      cache.dropBelow(f.key, store.oldestOfferedVersion(f.key));
      // Failovers: the replicas asked one after another, whichever answered (a read that
      // waited the failover timeout for the first and got it from there still took longer
      // than one wide-area round).
      f.a.ok(f.reply.setValue(r.getValue()).setRemote(true).setRemoteDc(replicaDc).setFailovers(f.asked - 1)
          .build());
    });
  }

  /** Asks the replica after {@code replicas[i]} unless the read is answered or it was asked already. */
  private void askNext(Fetch f, int i) {
    if (!f.done && f.asked == i + 1 && f.asked < f.replicas.length) {
      count("remote_read_failovers");
      fetch(f, i + 1);
    }
  }

  /**
   * At a replica datacenter: the exact version, from IncomingWrites or the multiversion
   * store. The constrained topology guarantees it is here; if it is not (which the
   * remote_read_waits counter would show: a replica that replication went on without, or
   * a partition), the read waits for it, until the RPC timeout. A version this server
   * has already garbage-collected is answered with an error at once.
   */
  private void onRemoteRead(Incoming m, RemoteRead req) {
    count("remote_reads_served");
    String key = req.getKey();
    checkShard(key);
    if (!isReplica(key)) {
      throw new MalformedMessageException("remote read of '" + key + "', which " + topology.dcName(dc)
          + " does not replicate: ask one of its replica datacenters");
    }
    Row value = findForRemote(key, req.getVersion());
    if (value != null) {
      m.reply(RemoteReadReply.newBuilder().setValue(value).build());
      return;
    }
    if (store.wasCollected(key, req.getVersion())) {
      count("remote_read_collected");
      m.replyError("version " + LamportClock.format(req.getVersion()) + " of '" + key + "' was garbage-collected in "
          + topology.dcName(dc) + " (superseded longer than the replica retention ago)");
      return;
    }
    count("remote_read_waits");
    LOG.debug("server {}: remote read of {} v{} has to wait", ep.id(), key, LamportClock.format(req.getVersion()));
    waitingRemoteReads.computeIfAbsent(new VKey(key, req.getVersion()), k -> new ArrayList<>())
        .add(new WaitingRead(m, System.currentTimeMillis() + options.rpcTimeoutMs()));
  }

  /** A replica's copy of a version: in IncomingWrites, or stored (replica servers store every value). */
  private Row findForRemote(String key, long version) {
    Row value = writes.incoming(key, version);
    if (value == null) {
      MultiVersionStore.Version<Row> v = store.find(key, version);
      if (v != null) {
        value = v.value();
      }
    }
    return value;
  }

  private void answerWaitingRemoteReads(String key, long version, Row value) {
    if (waitingRemoteReads.isEmpty() || value == null) {
      return;
    }
    List<WaitingRead> waiting = waitingRemoteReads.remove(new VKey(key, version));
    if (waiting != null) {
      for (WaitingRead w : waiting) {
        w.m().reply(RemoteReadReply.newBuilder().setValue(value).setWaited(true).build());
      }
    }
  }

  @Override
  protected void tick() {
    super.tick();
    long now = System.currentTimeMillis();
    writes.expire(now);
    long mono = FailureDetector.monotonicMs();
    detector.tick(mono);
    // Counted from this server's own last stall as well: entries it kept while stopped
    // are still needed if the origin died meanwhile (its suspicion comes after the resume).
    while (!recentFirstPhases.isEmpty()
        && mono - Math.max(recentFirstPhases.peekFirst().atMs, detector.resumedMs()) > carryOnWindowMs) {
      recentFirstPhaseVersions.remove(recentFirstPhases.removeFirst().r.getVersion());
    }
    if (waitingRemoteReads.isEmpty()) {
      return;
    }
    for (Iterator<Map.Entry<VKey, List<WaitingRead>>> it = waitingRemoteReads.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<VKey, List<WaitingRead>> e = it.next();
      e.getValue().removeIf(w -> {
        if (w.deadlineMs() > now) {
          return false;
        }
        count("remote_read_wait_timeouts");
        w.m().replyError("version " + LamportClock.format(e.getKey().version()) + " of '" + e.getKey().key()
            + "' did not arrive in " + topology.dcName(dc) + " within " + options.rpcTimeoutMs() + " ms");
        return true;
      });
      if (e.getValue().isEmpty()) {
        it.remove();
      }
    }
  }

  // =================================================================== writes

  /**
   * Applies one committed key (called by the shared write-only transaction engine).
   * Replica keys store the value; non-replica keys commit only metadata, and a local
   * client's value goes into the cache (§III-C), pinned until its replicas have it.
   */
  private void apply(String key, long txnId, long version, long evt, Row value, int writer) {
    if (isReplica(key)) {
      store.commit(key, txnId, version, evt, value);
      answerWaitingRemoteReads(key, version, value);
    } else {
      store.commit(key, txnId, version, evt, null);
      if (writer != WriteTransactions.Host.REPLICATED && value != null) {
        cache.putPinned(key, version, value, writer);
        cache.dropBelow(key, store.oldestOfferedVersion(key));
      }
    }
  }

  /**
   * Replicates this participant's sub-request of a committed local transaction to its
   * equivalent servers, in two phases (the constrained topology, §IV-A): data and
   * metadata to the keys' replica datacenters first; once they have stored it in
   * IncomingWrites and acknowledged, metadata and the list of replica datacenters to the
   * non-replica datacenters. Only the coordinator sends the transaction's dependencies, and
   * only once to each datacenter (with the first message it gets).
   *
   * <p>A replica datacenter that is down must not stop replication among the others
   * (§VI-A: replication "can proceed if at least one replica datacenter of each key in
   * those writes is available"): after the fail-over timeout, the second phase starts as
   * soon as every key has at least one replica with the data (this datacenter counts when
   * it is a replica), and later writes do not wait for a datacenter that let that happen
   * until it acknowledges again. A non-replica reader that asks the missing replica first
   * fails over to the next, as for any unavailable replica.
   */
  private void replicate(WotSubRequest sub, long version) {
    boolean coordinator = sub.getCoordinator() == ep.id();
    Map<Integer, Replicate.Builder> phase1 = new TreeMap<>();
    Map<Integer, Replicate.Builder> phase2 = new TreeMap<>();
    Replication r = new Replication(sub, version);
    for (KeyValue kv : sub.getWritesList()) {
      Set<Integer> replicas = new HashSet<>();
      for (int other = 0; other < topology.numDcs(); other++) {
        if (other == dc) {
          continue;
        }
        boolean replica = placement.isReplica(other, kv.getKey());
        ReplicatedKey.Builder rk = ReplicatedKey.newBuilder().setKey(kv.getKey());
        if (replica) {
          rk.setHasValue(true).setValue(kv.getValue());
          replicas.add(other);
        }
        (replica ? phase1 : phase2).computeIfAbsent(other, d -> header(sub, version)).addKeys(rk);
      }
      r.unacked.put(kv.getKey(), replicas);
      r.hasCopy.put(kv.getKey(), isReplica(kv.getKey()));
    }
    if (coordinator) {
      Set<Integer> sent = new HashSet<>();
      for (Map<Integer, Replicate.Builder> phase : List.of(phase1, phase2)) {
        phase.forEach((other, b) -> {
          if (sent.add(other)) {
            for (Dep d : sub.getDepsList()) {
              if (d.getVersion() != 0) {
                b.addDeps(d);
              }
            }
          }
        });
      }
    }
    r.phase2 = phase2;
    if (phase1.isEmpty()) {
      secondPhase(r);
      return;
    }
    replicating.computeIfAbsent(version, v -> new ArrayList<>(1)).add(r);
    for (Map.Entry<Integer, Replicate.Builder> e : phase1.entrySet()) {
      r.phase1.put(e.getKey(), e.getValue().build());
      sendPhase1(r, e.getKey());
    }
    maybeSecondPhase(r); // nothing to wait for if only suspected replicas are missing
    if (r.done) {
      return;
    }
    later(options.failoverTimeoutMs(), () -> {
      r.timedOut = true;
      maybeSecondPhase(r);
    });
  }

  /** One client sub-request being replicated by this participant. */
  private static final class Replication {
    final WotSubRequest sub;
    final long version;
    /** key -> replica datacenters that have not acknowledged it yet. */
    final Map<String, Set<Integer>> unacked = new HashMap<>();
    /** key -> whether some replica datacenter (this one included) has its data. */
    final Map<String, Boolean> hasCopy = new HashMap<>();
    final Map<Integer, Replicate> phase1 = new TreeMap<>();
    Map<Integer, Replicate.Builder> phase2;
    boolean timedOut;
    boolean done;

    Replication(WotSubRequest sub, long version) {
      this.sub = sub;
      this.version = version;
    }
  }

  /**
   * Sends the first phase to a replica datacenter until it acknowledges, also after the
   * second phase went on without it (§VI-A: a replica cut off or down for a while still
   * gets the data once it answers again). An error reply counts as an acknowledgement: the
   * replica had committed the version already (and collected its data since).
   */
  private void sendPhase1(Replication r, int replicaDc) {
    retx.call(topology.serverId(replicaDc, shard), r.phase1.get(replicaDc),
        ack -> phase1Acked(r, replicaDc), refused -> phase1Acked(r, replicaDc));
  }

  private void phase1Acked(Replication r, int replicaDc) {
    if (r.done) {
      count("late_phase1_acks"); // the second phase went on without it
      return;
    }
    for (ReplicatedKey k : r.phase1.get(replicaDc).getKeysList()) {
      r.unacked.get(k.getKey()).remove(replicaDc);
      r.hasCopy.put(k.getKey(), true);
    }
    maybeSecondPhase(r);
  }

  private void maybeSecondPhase(Replication r) {
    if (r.done) {
      return;
    }
    boolean allAcked = r.unacked.values().stream().allMatch(Set::isEmpty);
    boolean everyKeyHasACopy = r.hasCopy.values().stream().allMatch(b -> b);
    boolean onlySuspectsMissing = r.unacked.values().stream()
        .allMatch(missing -> missing.stream().allMatch(detector::suspected));
    boolean mayGoOn = (r.timedOut || onlySuspectsMissing) && everyKeyHasACopy
        && !org.k2bench.core.testing.Mutants.active(K2Mutants.REPLICATION_WAITS_EVERY_REPLICA);
    if (allAcked || mayGoOn) {
      if (!allAcked) {
        count("replication_without_some_replica");
        if (!onlySuspectsMissing) {
          // Timed out on a replica that is not suspected (slow, or not suspected yet): its
          // readers elsewhere are told only the others have the data.
          count("replication_without_an_unsuspected_replica");
        }
      }
      secondPhase(r);
    }
  }

  private void secondPhase(Replication r) {
    r.done = true;
    List<Replication> same = replicating.get(r.version);
    if (same != null) {
      same.remove(r);
      if (same.isEmpty()) {
        replicating.remove(r.version);
      }
    }
    for (KeyValue kv : r.sub.getWritesList()) {
      if (!isReplica(kv.getKey())) {
        cache.unpin(kv.getKey(), r.version);
      }
    }
    // When some replica datacenter has not acknowledged, say which ones have the data, so
    // that readers elsewhere ask those (§IV-A: metadata goes with "the list of replicas
    // storing the value").
    java.util.SortedSet<Integer> withData = new java.util.TreeSet<>();
    boolean partial = false;
    for (KeyValue kv : r.sub.getWritesList()) {
      for (int replica : placement.replicaDcs(kv.getKey())) {
        if (replica == dc || (r.phase1.containsKey(replica) && !r.unacked.get(kv.getKey()).contains(replica))) {
          withData.add(replica);
        } else {
          partial = true;
        }
      }
    }
    if (partial) { // this datacenter's own readers ask those first too
      for (KeyValue kv : r.sub.getWritesList()) {
        if (!isReplica(kv.getKey())) {
          replicasWithData.put(new VKey(kv.getKey(), r.version), List.copyOf(withData));
        }
      }
    }
    for (Map.Entry<Integer, Replicate.Builder> e : r.phase2.entrySet()) {
      if (partial) {
        e.getValue().addAllReplicaDcsWithData(withData);
      }
      retx.call(topology.serverId(e.getKey(), shard), e.getValue().build()); // acknowledged, not waited for
    }
  }

  private Replicate.Builder header(WotSubRequest sub, long version) {
    return Replicate.newBuilder().setVersion(version).setOriginDc(dc)
        .setCoordinatorKey(sub.getCoordinatorKey()).setNumParticipants(sub.getNumParticipants())
        .setSubrequestKeys(sub.getWritesCount()).setOriginCommitMs(System.currentTimeMillis());
  }

  // =================================================================== failures (§VI-A)

  private void suspect(int otherDc) {
    count("dcs_suspected");
    LOG.info("server {}: {} does not answer heartbeats; reads ask other replicas first, replication does not wait "
        + "for it", ep.id(), topology.dcName(otherDc));
    for (List<Replication> rs : List.copyOf(replicating.values())) {
      for (Replication r : List.copyOf(rs)) {
        maybeSecondPhase(r); // nothing more to wait for if only suspects are missing
      }
    }
    carryOn(otherDc);
  }

  /** Whether the detector suspects {@code otherDc} (for the retransmitter, made before the detector). */
  private boolean suspectedDc(int otherDc) {
    return detector.suspected(otherDc);
  }

  private void trust(int otherDc) {
    count("dcs_trusted_again");
    LOG.info("server {}: {} answers again", ep.id(), topology.dcName(otherDc));
    retx.kick(otherDc); // what waited for it goes out now
  }

  /**
   * A replicated sub-request arrived here (the engine stored it): keep first phases that
   * came from their origin for {@link #carryOn} (not those another replica carried on:
   * each replica carries on only what it got from the origin, so nothing bounces).
   */
  private void received(Replicate r, int from) {
    boolean firstPhase = false;
    for (ReplicatedKey k : r.getKeysList()) {
      firstPhase |= k.getHasValue();
    }
    if (!firstPhase || topology.dcOfServer(from) != r.getOriginDc() || !recentFirstPhaseVersions.add(r.getVersion())) {
      return;
    }
    Received e = new Received(FailureDetector.monotonicMs(), r);
    recentFirstPhases.addLast(e);
    if (recentFirstPhases.size() > MAX_RECENT_FIRST_PHASES) {
      recentFirstPhaseVersions.remove(recentFirstPhases.removeFirst().r.getVersion());
      count("first_phases_not_kept");
    }
    if (detector.suspected(r.getOriginDc())) {
      // Held back by a partition from an origin suspected since: it may have died, or it
      // may answer again at the heal (and have sent this write's second phase long ago).
      // Carry it on only if it still does not answer once a heartbeat could have come back.
      later(detector.maxAllowanceMs(), () -> {
        if (!e.carried && detector.suspected(r.getOriginDc())) {
          carryOn(e);
        }
      });
    }
  }

  /**
   * The origin datacenter of recent first phases is suspected: send their data and
   * metadata on to every other datacenter, as its second phase would have (the data to
   * the keys' other replica datacenters, the metadata and this datacenter as the replica
   * with the data to the rest).
   *
   * <p>The paper's K2 replicates only from the writing datacenter, so one that dies after
   * a replica acknowledged, but before its second phase went out, leaves a write visible at
   * its replicas and unknown elsewhere; a session that reads it there and writes makes a
   * write whose dependency check waits in every other datacenter forever, and so does all
   * that depends on it. §VI-A loses only writes that reached no other datacenter; the
   * replicas have these, so they finish the replication. Receivers drop what they have
   * already, so a wrong suspicion only costs duplicate messages.
   */
  private void carryOn(int origin) {
    for (Received e : recentFirstPhases) {
      if (e.r.getOriginDc() == origin && !e.carried) {
        carryOn(e);
      }
    }
  }

  private void carryOn(Received e) {
    if (org.k2bench.core.testing.Mutants.active(K2Mutants.REPLICATION_NOT_CARRIED_ON)) {
      return;
    }
    e.carried = true;
    Replicate r = e.r;
    count("replication_carried_on");
    for (int other = 0; other < topology.numDcs(); other++) {
      if (other == dc || other == r.getOriginDc()) {
        continue;
      }
      Replicate.Builder b = r.toBuilder().clearKeys().clearReplicaDcsWithData();
      boolean metadataOnly = false;
      for (ReplicatedKey k : r.getKeysList()) {
        if (placement.isReplica(other, k.getKey())) {
          b.addKeys(k);
        } else {
          b.addKeys(ReplicatedKey.newBuilder().setKey(k.getKey()));
          metadataOnly = true;
        }
      }
      if (metadataOnly) {
        b.addReplicaDcsWithData(dc); // this one has the data for sure
      }
      retx.call(topology.serverId(other, shard), b.build());
    }
  }

  // =================================================================== stats

  @Override
  protected void gauges(Map<String, Long> out) {
    super.gauges(out);
    out.put("cache_capacity_keys", (long) cache.capacity());
    out.put("cache_keys", (long) cache.keys());
    out.put("cache_versions", (long) cache.versions());
    out.put("cache_pinned_versions", (long) cache.pinnedVersions());
    out.put("cache_pinned_keys_over_capacity", (long) cache.pinnedKeysOverCapacity());
    out.put("cache_evictions", cache.evictions());
    out.put("replicating", (long) replicating.values().stream().mapToInt(List::size).sum());
    out.put("suspected_dcs", (long) detector.suspectedCount());
    out.put("dcs_never_answered", (long) detector.neverAnsweredCount());
    out.put("detector_resumed_ms_ago", FailureDetector.monotonicMs() - detector.resumedMs());
    out.put("recent_first_phases", (long) recentFirstPhases.size());
    out.put("waiting_remote_reads", (long) waitingRemoteReads.values().stream().mapToInt(List::size).sum());
    // The protocol's calls; heartbeats to a dead datacenter are always a few in flight.
    out.put("pending_calls", (long) Math.max(0, ep.pendingCalls() - detector.outstanding()));
    out.put("heartbeats_in_flight", (long) detector.outstanding());
    out.putAll(writes.gauges());
    out.putAll(retx.gauges());
  }
}
