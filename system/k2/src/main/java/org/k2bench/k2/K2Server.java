package org.k2bench.k2;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.data.Row;
import org.k2bench.core.server.ServerActor;
import org.k2bench.core.store.MultiVersionStore;
import org.k2bench.core.store.MultiVersionStore.VersionView;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.MalformedMessageException;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.txn.WriteTransactions;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.Replicate;
import org.k2bench.core.txn.proto.ReplicateAck;
import org.k2bench.core.txn.proto.ReplicatedKey;
import org.k2bench.core.txn.proto.WotSubRequest;
import org.k2bench.k2.proto.KeyVersions;
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
 * A K2 server: one shard of one datacenter (papers/k2.md §III-V).
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

  private final DcCache<Row> cache;
  /** Remote reads that arrived before their version (never, with the constrained topology). */
  private final Map<VKey, List<Incoming>> waitingRemoteReads = new HashMap<>();
  /** Write-only transactions, local and replicated; also holds IncomingWrites (§IV-A). */
  private final WriteTransactions writes;

  /**
   * Starts a K2 server on its topology address.
   *
   * @param dcCache false for systems built on K2's servers without a DC cache (PaRiS*)
   */
  public static K2Server start(Transport transport, int serverId, ServerOptions options, boolean dcCache) {
    return new K2Server(transport, serverId, options, dcCache);
  }

  private K2Server(Transport transport, int serverId, ServerOptions options, boolean dcCache) {
    super("k2", transport, serverId, options,
        key -> new Placement(transport.topology()).isReplica(transport.topology().dcOfServer(serverId), key));
    this.cache = new DcCache<>(dcCache ? options.cacheEntriesPerServer(topology.serversPerDc()) : 0);
    this.writes = new WriteTransactions(ep, thread, store, new WriteTransactions.Host() {
      @Override
      public int homeServer(String key) {
        return placement.serverFor(dc, key);
      }

      @Override
      public void apply(String key, long txnId, long version, long evt, Row value, boolean clientWrite) {
        K2Server.this.apply(key, txnId, version, evt, value, clientWrite);
      }

      @Override
      public void replicate(WotSubRequest sub, long version) {
        K2Server.this.replicate(sub, version);
      }

      @Override
      public void incoming(String key, long version, Row value) {
        answerWaitingRemoteReads(key, version, value);
        if (org.k2bench.core.testing.Mutants.active(org.k2bench.core.testing.Mutants.INCOMING_WRITES_VISIBLE)) {
          store.commit(key, version, version, clock.nextTimestamp(), value); // the bug: visible before commit
        }
      }

      @Override
      public void count(String stat) {
        K2Server.this.count(stat);
      }
    });
    start();
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
    if (placement.shardOf(key) != shard) {
      throw new MalformedMessageException("key '" + key + "' belongs to shard " + placement.shardOf(key)
          + ", not to server " + ep.id() + " (shard " + shard + ")");
    }
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
            .setLvt(v.lvt()).setStalenessMs(v.stalenessMs()).setWithheld(v.withheld());
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
    count("remote_fetches");
    fetch(m, key, v.version(), reply, placement.replicasByDistance(dc, key), 0);
  }

  /**
   * Fetches the exact version from {@code replicas[i]}, caches it and answers. A replica
   * datacenter that does not answer within the failover timeout (down, paused, cut off)
   * is skipped for the next nearest one (paper §VI-A, f >= 2); the last one gets the full
   * RPC timeout. The constrained topology guarantees every replica has the version.
   */
  private void fetch(Incoming m, String key, long version, ReadByTimeReply.Builder reply, int[] replicas, int i) {
    int replicaDc = replicas[i];
    boolean last = i == replicas.length - 1;
    long timeoutMs = last ? options.rpcTimeoutMs() : options.failoverTimeoutMs();
    RemoteRead rr = RemoteRead.newBuilder().setKey(key).setVersion(version).build();
    onServer(ep.call(topology.serverId(replicaDc, shard), rr, RemoteReadReply.class), timeoutMs, (r, err) -> {
      if (err != null) {
        if (!last) {
          count("remote_read_failovers");
          fetch(m, key, version, reply, replicas, i + 1);
        } else {
          m.replyError("remote read of '" + key + "' failed at every replica datacenter, last "
              + topology.dcName(replicaDc) + ": " + err);
        }
        return;
      }
      cache.put(key, version, r.getValue());
      m.reply(reply.setValue(r.getValue()).setRemote(true).setRemoteDc(replicaDc).setFailovers(i).build());
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
    Row value = writes.incoming(key, version);
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

  // =================================================================== writes

  /**
   * Applies one committed key (called by the shared write-only transaction engine).
   * Replica keys store the value; non-replica keys commit only metadata, and a local
   * client's value goes into the cache, pinned until its replicas have it.
   */
  private void apply(String key, long txnId, long version, long evt, Row value, boolean clientWrite) {
    if (isReplica(key)) {
      store.commit(key, txnId, version, evt, value);
      answerWaitingRemoteReads(key, version, value);
    } else {
      store.commit(key, txnId, version, evt, null);
      if (clientWrite && value != null) {
        cache.putPinned(key, version, value);
      }
    }
  }

  /**
   * Replicates this participant's sub-request of a committed local transaction to its
   * equivalent servers, in two phases (the constrained topology, §IV-A): data and
   * metadata to the keys' replica datacenters first; once all of them have stored it in
   * IncomingWrites and acknowledged, metadata to the non-replica datacenters.
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
    // No timeout: a replica datacenter that is down delays replication, it does not cancel it.
    CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).whenCompleteAsync((r, err) -> {
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

  // =================================================================== stats

  @Override
  protected void gauges(Map<String, Long> out) {
    super.gauges(out);
    out.put("cache_hits", cache.hits());
    out.put("cache_pinned_hits", cache.pinnedHits());
    out.put("cache_misses", cache.misses());
    out.put("cache_entries", (long) cache.size());
    out.put("cache_pinned_entries", (long) cache.pinnedSize());
    out.putAll(writes.gauges());
  }
}
