package org.k2bench.rad;

import java.util.Map;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.data.Row;
import org.k2bench.core.server.ServerActor;
import org.k2bench.core.store.MultiVersionStore;
import org.k2bench.core.topology.GroupPlacement;
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
import org.k2bench.rad.proto.KeyAtTime;
import org.k2bench.rad.proto.ReadByTimeReply;
import org.k2bench.rad.proto.ReadByTimeRequest;
import org.k2bench.rad.proto.ReadReply;
import org.k2bench.rad.proto.ReadRequest;

/**
 * A RAD server (K2 §VII-A): Eiger on a partial-replication layout. The f
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
  /** RAD's replica groups and equivalent datacenters (it runs on placement: groups only). */
  private final GroupPlacement groups;
  private final int groupPosition;
  private final WriteTransactions writes;
  /**
   * Sends Replicate to the other groups again until acknowledged (no failure detector: a
   * datacenter silent for an RPC timeout gets one probe until it answers).
   */
  private final org.k2bench.core.server.Retransmitter retx;

  RadServer(Transport transport, int serverId, ServerOptions options) {
    super("rad", transport, serverId, options, key -> false);
    this.groups = GroupPlacement.of(topology, "RAD");
    this.groupPosition = dc / topology.replicationFactor();
    this.retx = new org.k2bench.core.server.Retransmitter(this, null);
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
    }, options.rpcTimeoutMs(), retx);
    start();
  }

  /** The server holding {@code key} in this server's replica group. */
  private int homeServer(String key) {
    return groups.serverFor(groups.replicaInGroupOf(dc, key), key);
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
   * server's current logical time, or only until the prepare time of a transaction
   * pending on the key that may still supersede it (its EVT will be after its prepare
   * time). As in Eiger, the validity never ends before the version's own EVT unless a
   * pending transaction could make another version valid at that EVT: with this store's
   * apply rule (newest version wins, in EVT order) that takes a pending transaction with a
   * larger version than this one that may commit before this EVT ({@link #mayHide}).
   */
  private void onRead(Incoming m, ReadRequest req) {
    count("round1_requests");
    long now = clock.now();
    ReadReply.Builder reply = ReadReply.newBuilder();
    for (String key : req.getKeysList()) {
      checkHome(key);
      count("round1_keys");
      MultiVersionStore.Version<Row> v = store.latestForFirstRound(key); // GC keeps it for round two
      long pendingPrepare = store.minPendingPrepare(key);
      if (pendingPrepare < now) {
        count("round1_lvt_pending"); // validity cut by a pending transaction, not by the clock
      }
      long lvt = Math.max(Math.min(now, pendingPrepare), 0);
      if (lvt < v.evt() && !mayHide(key, v)) {
        lvt = v.evt();
        count("round1_lvt_at_evt");
      }
      reply.addKeys(CurrentVersion.newBuilder().setKey(key).setVersion(v.version()).setEvt(v.evt())
          .setLvt(lvt).setValue(v.value()));
    }
    m.reply(reply.build());
  }

  /**
   * Whether a transaction pending on {@code key} that prepared before {@code v}'s EVT may
   * still hide {@code v} at that EVT: it would have to commit with an EVT before it and a
   * larger version. A replicated transaction's version is known (its id); a client
   * transaction's version is its EVT, somewhere after its prepare time.
   */
  private boolean mayHide(String key, MultiVersionStore.Version<Row> v) {
    for (long[] p : writes.pendingOn(key)) {
      long txn = p[0];
      long prepareTs = p[1];
      if (prepareTs >= v.evt()) {
        continue; // commits after this EVT
      }
      Long replicatedVersion = writes.replicatedVersion(txn);
      if (replicatedVersion != null ? replicatedVersion > v.version()
          : Math.max(prepareTs, v.version()) + 1 < v.evt()) {
        return true;
      }
    }
    return false;
  }

  /**
   * Eiger's second round, one request per server: the version of each key valid at the
   * effective time. A transaction pending on a key that may commit at or below it is
   * resolved with its coordinator first; the reply says whether that was a wide-area wait.
   */
  private void onReadByTime(Incoming m, ReadByTimeRequest req) {
    count("round2_requests");
    long ts = req.getTs();
    for (String key : req.getKeysList()) {
      checkHome(key);
      count("round2_keys");
      if (store.minPendingPrepare(key) <= ts) {
        count("round2_keys_pending"); // waits for a transaction; the rest are read at once
      }
      store.protectAt(key, ts); // the wait below must not outlive what round one protected
    }
    clock.observeTimestamp(ts);
    int n = req.getKeysCount();
    if (n == 0) {
      m.reply(ReadByTimeReply.getDefaultInstance());
      return;
    }
    KeyAtTime[] out = new KeyAtTime[n];
    boolean[] wide = new boolean[1];
    int[] left = {n};
    boolean[] failed = new boolean[1];
    // Within the transaction timeout, for which GC keeps what this read may return.
    long deadline = System.currentTimeMillis() + Math.min(options.rpcTimeoutMs(), options.txnTimeoutMs());
    for (int i = 0; i < n && !failed[0]; i++) {
      int idx = i;
      String key = req.getKeys(i);
      writes.resolvePendingBelow(key, ts, deadline, wideWait -> {
        if (failed[0]) {
          return;
        }
        VersionView<Row> v = store.versionAt(key, ts, clock.now());
        if (v == null) {
          failed[0] = true;
          m.replyError("no version of '" + key + "' at the effective time is left (garbage-collected)");
          return;
        }
        wide[0] |= wideWait;
        out[idx] = KeyAtTime.newBuilder().setKey(key).setVersion(v.version()).setEvt(v.evt())
            .setValue(v.value()).setStalenessMs(v.stalenessMs()).build();
        if (--left[0] == 0) {
          m.reply(ReadByTimeReply.newBuilder().addAllKeys(java.util.Arrays.asList(out))
              .setWideAreaWait(wide[0]).build());
        }
      }, error -> {
        if (!failed[0]) {
          failed[0] = true;
          m.replyError(error);
        }
      });
    }
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
    int myGroup = groups.groupOf(dc);
    for (int g = 0; g < topology.replicationFactor(); g++) {
      if (g != myGroup) {
        // The participants there: each origin participant's equivalent server in group g.
        r.clearParticipants();
        for (int p : sub.getParticipantsList()) {
          int pDc = topology.dcOfServer(p);
          r.addParticipants(topology.serverId(groups.group(g)[pDc / topology.replicationFactor()],
              topology.shardOfServer(p)));
        }
        retx.call(topology.serverId(groups.group(g)[groupPosition], shard), r.build());
      }
    }
  }

  @Override
  protected void tick() {
    super.tick();
    writes.expire(System.currentTimeMillis());
  }

  @Override
  protected void gauges(Map<String, Long> out) {
    super.gauges(out);
    out.putAll(writes.gauges());
    out.putAll(retx.gauges());
  }
}
