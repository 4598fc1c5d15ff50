package org.k2bench.k2;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import org.k2bench.core.api.ServerNode;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.data.Dep;
import org.k2bench.core.data.Row;
import org.k2bench.core.store.MultiVersionStore;
import org.k2bench.core.store.MultiVersionStore.VersionView;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.MalformedMessageException;
import org.k2bench.core.transport.Transport;
import org.k2bench.k2.proto.Commit;
import org.k2bench.k2.proto.DepCheck;
import org.k2bench.k2.proto.DepOk;
import org.k2bench.k2.proto.KeyValue;
import org.k2bench.k2.proto.KeyVersions;
import org.k2bench.k2.proto.Notify;
import org.k2bench.k2.proto.Prepare;
import org.k2bench.k2.proto.Prepared;
import org.k2bench.k2.proto.ReadByTimeReply;
import org.k2bench.k2.proto.ReadByTimeRequest;
import org.k2bench.k2.proto.ReadReply;
import org.k2bench.k2.proto.ReadRequest;
import org.k2bench.k2.proto.RemoteRead;
import org.k2bench.k2.proto.RemoteReadReply;
import org.k2bench.k2.proto.Replicate;
import org.k2bench.k2.proto.ReplicateAck;
import org.k2bench.k2.proto.ReplicatedKey;
import org.k2bench.k2.proto.VersionInfo;
import org.k2bench.k2.proto.WotReply;
import org.k2bench.k2.proto.WotSubRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A K2 server: one shard of one datacenter (papers/k2.md §III-V).
 *
 * <p>The server is an actor: every message, reply and timer runs on its single thread, so
 * the state below needs no locks. It keeps metadata for every key of its shard in a
 * {@link MultiVersionStore}, values only for its replica keys, a {@link DcCache} of
 * non-replica values, and the IncomingWrites table of replicated data not yet committed.
 *
 * <p>Sections: reads (§V-C), local write-only transactions (§III-C), replication with the
 * constrained topology and replicated write-only transactions (§IV-A).
 */
public final class K2Server implements ServerNode {
  private static final Logger LOG = LoggerFactory.getLogger(K2Server.class);
  static final Row EMPTY_ROW = Row.getDefaultInstance();

  private record VKey(String key, long version) {}

  private final Topology topology;
  private final Placement placement;
  private final ServerOptions options;
  private final int dc;
  private final int shard;
  private final ExecutorService thread;
  private final Endpoint ep;
  private final LamportClock clock;
  private final MultiVersionStore<Row> store;
  private final DcCache<Row> cache;
  /** Replicated data not yet committed here; visible only to remote reads (§IV-A). */
  private final Map<VKey, Row> incomingWrites = new HashMap<>();
  /** Remote reads that arrived before their version (never, with the constrained topology). */
  private final Map<VKey, List<Incoming>> waitingRemoteReads = new HashMap<>();
  private final Map<Long, LocalTxn> localTxns = new HashMap<>();
  private final Map<Long, ReplicatedTxn> replicatedTxns = new HashMap<>();
  private final Map<String, LongAdder> stats = new ConcurrentHashMap<>();

  K2Server(Transport transport, int serverId, ServerOptions options, boolean dcCache) {
    this.topology = transport.topology();
    this.placement = new Placement(topology);
    this.options = options;
    this.dc = topology.dcOfServer(serverId);
    this.shard = topology.shardOfServer(serverId);
    this.thread = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "k2-server-" + serverId);
      t.setDaemon(true);
      return t;
    });
    this.store = new MultiVersionStore<>(EMPTY_ROW, key -> placement.isReplica(dc, key),
        System::currentTimeMillis, options.gcWindowMs(), options.replicaRetentionMs(),
        options.txnTimeoutMs());
    this.cache = new DcCache<>(dcCache ? options.cacheEntriesPerServer(topology.serversPerDc()) : 0);
    this.ep = transport.openServer(serverId, thread, this::handle);
    this.clock = ep.clock();
  }

  @Override
  public Endpoint endpoint() {
    return ep;
  }

  private void handle(Incoming m) {
    if (m.is(ReadRequest.class)) {
      onRead(m, m.as(ReadRequest.class));
    } else if (m.is(ReadByTimeRequest.class)) {
      onReadByTime(m, m.as(ReadByTimeRequest.class));
    } else if (m.is(RemoteRead.class)) {
      onRemoteRead(m, m.as(RemoteRead.class));
    } else if (m.is(WotSubRequest.class)) {
      onSubRequest(m, m.as(WotSubRequest.class));
    } else if (m.is(Prepared.class)) {
      onPrepared(m.from(), m.as(Prepared.class));
    } else if (m.is(Commit.class)) {
      onCommit(m.as(Commit.class));
    } else if (m.is(Replicate.class)) {
      onReplicate(m, m.as(Replicate.class));
    } else if (m.is(Notify.class)) {
      onNotify(m.from(), m.as(Notify.class));
    } else if (m.is(DepCheck.class)) {
      onDepCheck(m, m.as(DepCheck.class));
    } else if (m.is(Prepare.class)) {
      onPrepare(m, m.as(Prepare.class));
    } else {
      throw new MalformedMessageException("K2 server does not handle " + m.typeName());
    }
  }

  private void count(String stat) {
    stats.computeIfAbsent(stat, k -> new LongAdder()).increment();
  }

  private void checkShard(String key) {
    if (placement.shardOf(key) != shard) {
      throw new MalformedMessageException("key '" + key + "' belongs to shard " + placement.shardOf(key)
          + ", not to server " + ep.id() + " (shard " + shard + ")");
    }
  }

  /** Runs {@code then} on this server's thread when {@code f} completes. */
  private <T> void onServer(CompletableFuture<T> f, BiConsumer<T, Throwable> then) {
    f.orTimeout(options.rpcTimeoutMs(), TimeUnit.MILLISECONDS).whenCompleteAsync(then, thread);
  }

  private boolean isReplica(String key) {
    return placement.isReplica(dc, key);
  }

  /** The value of a version if this server has it: stored (replica) or cached (non-replica). */
  private Row localValue(String key, long version, Row stored) {
    if (stored != null) {
      return stored;
    }
    return cache.get(key, version);
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
      KeyVersions.Builder kv = KeyVersions.newBuilder().setKey(key);
      for (VersionView<Row> v : store.versionsFrom(key, req.getReadTs(), now)) {
        VersionInfo.Builder vi = VersionInfo.newBuilder().setVersion(v.version()).setEvt(v.evt())
            .setLvt(v.lvt()).setStalenessMs(v.stalenessMs());
        Row value = v.withheld() ? null : localValue(key, v.version(), v.value());
        if (value != null) {
          vi.setHasValue(true).setValue(value);
        }
        kv.addVersions(vi);
      }
      reply.addKeys(kv);
    }
    m.reply(reply.build());
  }

  /**
   * Second round: the value of key at logical time ts. Waits for pending local write-only
   * transactions that may commit at or below ts (at most a local round trip), then answers
   * from local data, or fetches the exact version from the nearest replica datacenter,
   * caches it and answers: one non-blocking wide-area request at most.
   */
  private void onReadByTime(Incoming m, ReadByTimeRequest req) {
    count("round2_requests");
    String key = req.getKey();
    checkShard(key);
    long ts = req.getTs();
    clock.observeTimestamp(ts); // later prepares here get prepare_ts > ts, so EVT > ts
    store.awaitKey(key, () -> !store.hasPendingBelow(key, ts), () -> readAt(m, key, ts));
  }

  private void readAt(Incoming m, String key, long ts) {
    VersionView<Row> v = store.versionAt(key, ts, clock.now());
    if (v == null) {
      count("round2_gc_misses");
      m.replyError("no version of '" + key + "' at " + LamportClock.format(ts)
          + " is left (garbage-collected); the transaction outlived its timeout");
      return;
    }
    ReadByTimeReply.Builder reply = ReadByTimeReply.newBuilder().setVersion(v.version())
        .setEvt(v.evt()).setStalenessMs(v.stalenessMs());
    Row value = localValue(key, v.version(), v.value());
    if (value != null) {
      m.reply(reply.setValue(value).build());
      return;
    }
    int replicaDc = placement.nearestReplica(dc, key);
    count("remote_fetches");
    RemoteRead rr = RemoteRead.newBuilder().setKey(key).setVersion(v.version()).build();
    onServer(ep.call(topology.serverId(replicaDc, shard), rr, RemoteReadReply.class), (r, err) -> {
      if (err != null) {
        m.replyError("remote read of '" + key + "' from " + topology.dcName(replicaDc) + " failed: " + err);
        return;
      }
      cache.put(key, v.version(), r.getValue());
      m.reply(reply.setValue(r.getValue()).setRemote(true).setRemoteDc(replicaDc).build());
    });
  }

  /**
   * At a replica datacenter: the exact version, from IncomingWrites or the multiversion
   * store. The constrained topology guarantees it is here; if it is not (which the
   * remote_read_waits counter would show), the read waits for it, as a design without
   * that guarantee would have to.
   */
  private void onRemoteRead(Incoming m, RemoteRead req) {
    count("remote_reads_served");
    String key = req.getKey();
    checkShard(key);
    Row value = findForRemote(key, req.getVersion());
    if (value != null) {
      m.reply(RemoteReadReply.newBuilder().setValue(value).build());
      return;
    }
    count("remote_read_waits");
    LOG.warn("server {}: remote read of {} v{} had to wait", ep.id(), key, LamportClock.format(req.getVersion()));
    waitingRemoteReads.computeIfAbsent(new VKey(key, req.getVersion()), k -> new ArrayList<>()).add(m);
  }

  private Row findForRemote(String key, long version) {
    Row value = incomingWrites.get(new VKey(key, version));
    if (value == null) {
      MultiVersionStore.Version<Row> v = store.find(key, version);
      if (v != null) {
        value = localValue(key, version, v.value());
      }
    }
    return value;
  }

  private void answerWaitingRemoteReads(String key, long version, Row value) {
    if (waitingRemoteReads.isEmpty() || value == null) {
      return;
    }
    List<Incoming> waiting = waitingRemoteReads.remove(new VKey(key, version));
    if (waiting != null) {
      for (Incoming w : waiting) {
        w.reply(RemoteReadReply.newBuilder().setValue(value).setWaited(true).build());
      }
    }
  }

  // =================================================================== commit, shared

  /**
   * Applies one committed key. Replica keys store the value; non-replica keys commit only
   * metadata, and a local write's value goes into the cache, pinned until replicated.
   */
  private void applyCommit(String key, long txnId, long version, long evt, Row value, boolean localWrite) {
    if (isReplica(key)) {
      store.commit(key, txnId, version, evt, value);
      answerWaitingRemoteReads(key, version, value);
    } else {
      store.commit(key, txnId, version, evt, null);
      if (localWrite && value != null) {
        cache.putPinned(key, version, value);
      }
    }
  }

  // =================================================================== local write-only transactions (§III-C)

  /** A local write-only transaction at one participant. */
  private static final class LocalTxn {
    final long id;
    WotSubRequest sub;
    Incoming client;
    final Set<Integer> cohorts = new HashSet<>();
    long version;
    boolean committed;

    LocalTxn(long id) {
      this.id = id;
    }
  }

  private void onSubRequest(Incoming m, WotSubRequest sub) {
    if (sub.getWritesCount() == 0 || sub.getNumParticipants() < 1) {
      throw new MalformedMessageException("write-only sub-request " + sub.getTxnId() + " has no writes");
    }
    for (KeyValue kv : sub.getWritesList()) {
      checkShard(kv.getKey());
    }
    LocalTxn t = localTxns.computeIfAbsent(sub.getTxnId(), LocalTxn::new);
    t.sub = sub;
    long prepareTs = clock.nextTimestamp();
    for (KeyValue kv : sub.getWritesList()) {
      store.prepare(kv.getKey(), t.id, prepareTs);
    }
    if (sub.getCoordinator() == ep.id()) {
      t.client = m;
      maybeCommitLocal(t);
    } else {
      ep.send(sub.getCoordinator(), Prepared.newBuilder().setTxnId(t.id).setPrepareTs(prepareTs).build());
    }
  }

  /** Coordinator: a cohort prepared ("Yes"); cohorts make themselves known this way. */
  private void onPrepared(int cohort, Prepared p) {
    LocalTxn t = localTxns.computeIfAbsent(p.getTxnId(), LocalTxn::new);
    t.cohorts.add(cohort);
    maybeCommitLocal(t);
  }

  /** Coordinator: once every cohort prepared, version = EVT = the current Lamport time. */
  private void maybeCommitLocal(LocalTxn t) {
    if (t.sub == null || t.client == null || t.committed
        || t.cohorts.size() < t.sub.getNumParticipants() - 1) {
      return;
    }
    t.committed = true;
    t.version = clock.nextTimestamp();
    count("local_wots");
    for (KeyValue kv : t.sub.getWritesList()) {
      applyCommit(kv.getKey(), t.id, t.version, t.version, kv.getValue(), true);
    }
    Commit commit = Commit.newBuilder().setTxnId(t.id).setVersion(t.version).setEvt(t.version).build();
    for (int cohort : t.cohorts) {
      ep.send(cohort, commit);
    }
    t.client.reply(WotReply.newBuilder().setVersion(t.version).build());
    localTxns.remove(t.id);
    replicate(t.sub, t.version);
  }

  private void onCommit(Commit c) {
    LocalTxn t = localTxns.remove(c.getTxnId());
    if (t != null && t.sub != null) {
      for (KeyValue kv : t.sub.getWritesList()) {
        applyCommit(kv.getKey(), t.id, c.getVersion(), c.getEvt(), kv.getValue(), true);
      }
      replicate(t.sub, c.getVersion());
      return;
    }
    ReplicatedTxn r = replicatedTxns.remove(c.getTxnId());
    if (r != null) {
      commitReplicated(r, c.getEvt());
    }
  }

  // =================================================================== replication (§IV-A)

  /**
   * Replicates this participant's sub-request of a committed transaction to its
   * equivalent servers, in two phases (the constrained topology): data and metadata to the
   * keys' replica datacenters first; once all of them have stored it in IncomingWrites
   * and acknowledged, metadata and the list of replicas to the non-replica datacenters.
   */
  private void replicate(WotSubRequest sub, long version) {
    boolean coordinator = sub.getCoordinator() == ep.id();
    Map<Integer, Replicate.Builder> phase1 = new HashMap<>();
    Map<Integer, Replicate.Builder> phase2 = new HashMap<>();
    for (KeyValue kv : sub.getWritesList()) {
      for (int other = 0; other < topology.numDcs(); other++) {
        if (other == dc) {
          continue;
        }
        boolean replica = placement.isReplica(other, kv.getKey());
        ReplicatedKey.Builder rk = ReplicatedKey.newBuilder().setKey(kv.getKey());
        if (replica) {
          rk.setHasValue(true).setValue(kv.getValue());
        }
        (replica ? phase1 : phase2).computeIfAbsent(other, d -> header(sub, version, coordinator))
            .addKeys(rk);
      }
    }
    List<CompletableFuture<ReplicateAck>> acks = new ArrayList<>();
    for (Map.Entry<Integer, Replicate.Builder> e : phase1.entrySet()) {
      acks.add(ep.call(topology.serverId(e.getKey(), shard), e.getValue().build(), ReplicateAck.class));
    }
    Runnable secondPhase = () -> {
      for (KeyValue kv : sub.getWritesList()) {
        if (!isReplica(kv.getKey())) {
          cache.unpin(kv.getKey(), version);
        }
      }
      for (Map.Entry<Integer, Replicate.Builder> e : phase2.entrySet()) {
        ep.send(topology.serverId(e.getKey(), shard), e.getValue().build());
      }
    };
    if (acks.isEmpty()) {
      secondPhase.run();
      return;
    }
    CompletableFuture<Void> all = CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new));
    // No timeout: a replica datacenter that is down delays replication, it does not cancel it.
    all.whenCompleteAsync((r, err) -> {
      if (err != null) {
        LOG.warn("server {}: replication of v{} failed: {}", ep.id(), LamportClock.format(version), err.toString());
        return;
      }
      secondPhase.run();
    }, thread);
  }

  private Replicate.Builder header(WotSubRequest sub, long version, boolean coordinator) {
    Replicate.Builder b = Replicate.newBuilder().setVersion(version).setOriginDc(dc)
        .setCoordinatorKey(sub.getCoordinatorKey()).setNumParticipants(sub.getNumParticipants())
        .setSubrequestKeys(sub.getWritesCount());
    if (coordinator) {
      b.addAllDeps(sub.getDepsList());
    }
    return b;
  }

  /** A replicated write-only transaction at one participant of a remote datacenter. */
  private static final class ReplicatedTxn {
    final long version;
    String coordinatorKey;
    int numParticipants;
    int expectedKeys = -1;
    final Map<String, ReplicatedKey> keys = new HashMap<>();
    final List<Dep> deps = new ArrayList<>();
    boolean complete;
    // coordinator only
    final Set<Integer> cohorts = new HashSet<>();
    int depsPending = -1;
    boolean preparing;

    ReplicatedTxn(long version) {
      this.version = version;
    }

    boolean isCoordinatorAt(Placement placement, int shard) {
      return placement.shardOf(coordinatorKey) == shard;
    }
  }

  private void onReplicate(Incoming m, Replicate r) {
    ReplicatedTxn t = replicatedTxns.computeIfAbsent(r.getVersion(), ReplicatedTxn::new);
    t.coordinatorKey = r.getCoordinatorKey();
    t.numParticipants = r.getNumParticipants();
    t.expectedKeys = r.getSubrequestKeys();
    t.deps.addAll(r.getDepsList());
    for (ReplicatedKey k : r.getKeysList()) {
      checkShard(k.getKey());
      t.keys.put(k.getKey(), k);
      if (k.getHasValue()) {
        incomingWrites.put(new VKey(k.getKey(), r.getVersion()), k.getValue());
        answerWaitingRemoteReads(k.getKey(), r.getVersion(), k.getValue());
      }
    }
    if (m.expectsReply()) {
      m.reply(ReplicateAck.getDefaultInstance()); // data is in IncomingWrites
    }
    if (t.complete || t.keys.size() < t.expectedKeys) {
      return;
    }
    t.complete = true;
    if (t.isCoordinatorAt(placement, shard)) {
      checkDependencies(t);
      maybePrepareReplicated(t);
    } else {
      ep.send(topology.serverId(dc, placement.shardOf(t.coordinatorKey)),
          Notify.newBuilder().setVersion(t.version).build());
    }
  }

  private void onNotify(int from, Notify n) {
    ReplicatedTxn t = replicatedTxns.computeIfAbsent(n.getVersion(), ReplicatedTxn::new);
    t.cohorts.add(from);
    maybePrepareReplicated(t);
  }

  /** One-hop dependency checks against the local servers holding the dependencies. */
  private void checkDependencies(ReplicatedTxn t) {
    t.depsPending = t.deps.size();
    for (Dep d : t.deps) {
      int server = topology.serverId(dc, placement.shardOf(d.getKey()));
      if (server == ep.id()) {
        store.awaitKey(d.getKey(), () -> store.isCommitted(d.getKey(), d.getVersion()), () -> depSatisfied(t));
      } else {
        ep.call(server, DepCheck.newBuilder().setKey(d.getKey()).setVersion(d.getVersion()).build())
            .whenCompleteAsync((ok, err) -> {
              if (err != null) {
                LOG.warn("server {}: dependency check failed: {}", ep.id(), err.toString());
                return;
              }
              depSatisfied(t);
            }, thread);
      }
    }
  }

  private void depSatisfied(ReplicatedTxn t) {
    t.depsPending--;
    maybePrepareReplicated(t);
  }

  private void onDepCheck(Incoming m, DepCheck d) {
    checkShard(d.getKey());
    if (!store.isCommitted(d.getKey(), d.getVersion())) {
      count("dep_check_waits");
    }
    store.awaitKey(d.getKey(), () -> store.isCommitted(d.getKey(), d.getVersion()),
        () -> m.reply(DepOk.getDefaultInstance()));
  }

  /**
   * Coordinator: with its own sub-request complete, every cohort notified and every
   * dependency committed locally, run two-phase commit inside this datacenter and assign
   * the EVT.
   */
  private void maybePrepareReplicated(ReplicatedTxn t) {
    if (!t.complete || t.preparing || t.depsPending != 0
        || t.cohorts.size() < t.numParticipants - 1) {
      return;
    }
    t.preparing = true;
    long prepareTs = clock.nextTimestamp();
    for (String key : t.keys.keySet()) {
      store.prepare(key, t.version, prepareTs);
    }
    List<CompletableFuture<Prepared>> yes = new ArrayList<>();
    for (int cohort : t.cohorts) {
      yes.add(ep.call(cohort, Prepare.newBuilder().setTxnId(t.version).build(), Prepared.class));
    }
    CompletableFuture.allOf(yes.toArray(CompletableFuture[]::new)).whenCompleteAsync((r, err) -> {
      if (err != null) {
        LOG.warn("server {}: prepare of replicated v{} failed: {}", ep.id(), LamportClock.format(t.version), err.toString());
        return;
      }
      long evt = clock.nextTimestamp();
      replicatedTxns.remove(t.version);
      commitReplicated(t, evt);
      Commit commit = Commit.newBuilder().setTxnId(t.version).setVersion(t.version).setEvt(evt).build();
      for (int cohort : t.cohorts) {
        ep.send(cohort, commit);
      }
    }, thread);
  }

  /** Cohort of a replicated transaction: mark its keys pending and say yes. */
  private void onPrepare(Incoming m, Prepare p) {
    ReplicatedTxn t = replicatedTxns.get(p.getTxnId());
    if (t == null) {
      throw new MalformedMessageException("prepare for unknown replicated transaction " + p.getTxnId());
    }
    long prepareTs = clock.nextTimestamp();
    for (String key : t.keys.keySet()) {
      store.prepare(key, t.version, prepareTs);
    }
    m.reply(Prepared.newBuilder().setTxnId(t.version).setPrepareTs(prepareTs).build());
  }

  private void commitReplicated(ReplicatedTxn t, long evt) {
    count("replicated_wots");
    for (ReplicatedKey k : t.keys.values()) {
      Row value = k.getHasValue() ? incomingWrites.remove(new VKey(k.getKey(), t.version)) : null;
      applyCommit(k.getKey(), t.version, t.version, evt, value, false);
    }
  }

  // =================================================================== lifecycle

  @Override
  public Map<String, Long> stats() {
    Map<String, Long> out = new HashMap<>();
    stats.forEach((k, v) -> out.put(k, v.sum()));
    try {
      thread.submit(() -> {
        out.put("gc_removed", store.gcRemoved());
        out.put("cache_hits", cache.hits());
        out.put("cache_misses", cache.misses());
        out.put("cache_entries", (long) cache.size());
        out.put("incoming_writes", (long) incomingWrites.size());
      }).get(5, TimeUnit.SECONDS);
    } catch (Exception e) {
      // closed or stuck: report the counters we have
    }
    return out;
  }

  @Override
  public void close() {
    ep.close();
    thread.shutdownNow();
  }
}
