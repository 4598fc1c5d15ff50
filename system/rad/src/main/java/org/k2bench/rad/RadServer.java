package org.k2bench.rad;

import java.util.Map;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.data.Row;
import org.k2bench.core.server.ServerActor;
import org.k2bench.core.store.MultiVersionStore;
import org.k2bench.core.store.MultiVersionStore.VersionView;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.MalformedMessageException;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.txn.WriteTransactions;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.Replicate;
import org.k2bench.core.txn.proto.ReplicatedKey;
import org.k2bench.core.txn.proto.WotSubRequest;
import org.k2bench.rad.proto.CurrentVersion;
import org.k2bench.rad.proto.ReadByTimeReply;
import org.k2bench.rad.proto.ReadByTimeRequest;
import org.k2bench.rad.proto.ReadReply;
import org.k2bench.rad.proto.ReadRequest;

/**
 * A RAD server (K2 §VII-A; SPEC §3.2): Eiger on a partial-replication layout. The f
 * replica groups each hold one full replica split over their datacenters; this server
 * holds the keys of its shard that its datacenter's position in the group owns, and
 * nothing else (no metadata of other keys, no cache).
 *
 * <p>Writes and the commit of replicated writes are the shared Eiger engine with
 * participants anywhere in the group; replication goes, in one step, to the equivalent
 * servers of the other groups, whose dependency checks run at the servers of their own
 * group. Reads are Eiger's: the current version with EVT and LVT, then the version at the
 * effective time, resolving pending transactions with their coordinator first.
 */
final class RadServer extends ServerActor {
  private final int groupPosition;
  private final WriteTransactions writes;

  RadServer(Transport transport, int serverId, ServerOptions options) {
    super("rad", transport, serverId, options, key -> false);
    this.groupPosition = dc / topology.replicationFactor();
    this.writes = new WriteTransactions(ep, thread, store, new WriteTransactions.Host() {
      @Override
      public int homeServer(String key) {
        return RadServer.this.homeServer(key);
      }

      @Override
      public void apply(String key, long txnId, long version, long evt, Row value, int writer) {
        store.commit(key, txnId, version, evt, value);
      }

      @Override
      public void replicate(WotSubRequest sub, long version) {
        RadServer.this.replicate(sub, version);
      }

      @Override
      public void count(String stat) {
        RadServer.this.count(stat);
      }

      @Override
      public void later(long delayMs, Runnable r) {
        RadServer.this.later(delayMs, r);
      }
    }, options.rpcTimeoutMs());
    start();
  }

  /** The server holding {@code key} in this server's replica group. */
  private int homeServer(String key) {
    return placement.serverFor(placement.replicaInGroupOf(dc, key), key);
  }

  private void checkHome(String key) {
    if (homeServer(key) != ep.id()) {
      throw new MalformedMessageException("key '" + key + "' is held by server " + homeServer(key)
          + " in this group, not by server " + ep.id());
    }
  }

  @Override
  protected void handle(Incoming m) {
    if (m.is(ReadRequest.class)) {
      onRead(m, m.as(ReadRequest.class));
    } else if (m.is(ReadByTimeRequest.class)) {
      onReadByTime(m, m.as(ReadByTimeRequest.class));
    } else if (!writes.handle(m)) {
      throw new MalformedMessageException("RAD server does not handle " + m.typeName());
    }
  }

  /**
   * Eiger's first round: the currently visible version, valid from its EVT until the
   * server's current logical time, or until just the prepare time of a pending
   * transaction on the key, which may become visible right after it.
   */
  private void onRead(Incoming m, ReadRequest req) {
    count("round1_requests");
    long now = clock.now();
    ReadReply.Builder reply = ReadReply.newBuilder();
    for (String key : req.getKeysList()) {
      checkHome(key);
      MultiVersionStore.Version<Row> v = store.latest(key);
      long lvt = Math.max(Math.min(now, store.minPendingPrepare(key)), 0);
      reply.addKeys(CurrentVersion.newBuilder().setKey(key).setVersion(v.version()).setEvt(v.evt())
          .setLvt(lvt).setValue(v.value()));
    }
    m.reply(reply.build());
  }

  /**
   * Eiger's second round: the version valid at the effective time. A transaction pending
   * on the key that may commit at or below it is resolved with its coordinator first.
   */
  private void onReadByTime(Incoming m, ReadByTimeRequest req) {
    count("round2_requests");
    String key = req.getKey();
    checkHome(key);
    long ts = req.getTs();
    clock.observeTimestamp(ts);
    writes.resolvePendingBelow(key, ts, remoteCheck -> {
      VersionView<Row> v = store.versionAt(key, ts, clock.now());
      if (v == null) {
        m.replyError("no version of '" + key + "' at the effective time is left (garbage-collected)");
        return;
      }
      m.reply(ReadByTimeReply.newBuilder().setVersion(v.version()).setEvt(v.evt()).setValue(v.value())
          .setRemoteStatusCheck(remoteCheck).setStalenessMs(v.stalenessMs()).build());
    });
  }

  /** After a client transaction committed: its sub-request to the equivalent server of every other group. */
  private void replicate(WotSubRequest sub, long version) {
    Replicate.Builder r = Replicate.newBuilder().setVersion(version).setOriginDc(dc)
        .setOriginCommitMs(System.currentTimeMillis())
        .setCoordinatorKey(sub.getCoordinatorKey()).setNumParticipants(sub.getNumParticipants())
        .setSubrequestKeys(sub.getWritesCount());
    if (sub.getCoordinator() == ep.id()) {
      r.addAllDeps(sub.getDepsList());
    }
    for (KeyValue kv : sub.getWritesList()) {
      r.addKeys(ReplicatedKey.newBuilder().setKey(kv.getKey()).setHasValue(true).setValue(kv.getValue()));
    }
    Replicate msg = r.build();
    int myGroup = placement.groupOf(dc);
    for (int g = 0; g < topology.replicationFactor(); g++) {
      if (g != myGroup) {
        ep.send(topology.serverId(placement.group(g)[groupPosition], shard), msg);
      }
    }
  }

  @Override
  protected void gauges(Map<String, Long> out) {
    super.gauges(out);
    out.putAll(writes.gauges());
  }
}
