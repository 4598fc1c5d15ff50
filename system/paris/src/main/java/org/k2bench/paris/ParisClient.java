package org.k2bench.paris;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.k2bench.core.api.Calls;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ReadWriteTxn;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.WriteResult;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.data.Row;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;
import org.k2bench.paris.proto.CommitReq;
import org.k2bench.paris.proto.CommitResp;
import org.k2bench.paris.proto.Item;
import org.k2bench.paris.proto.KeyRow;
import org.k2bench.paris.proto.ReadReq;
import org.k2bench.paris.proto.ReadResp;
import org.k2bench.paris.proto.StartTxReq;
import org.k2bench.paris.proto.StartTxResp;

/**
 * A client session of PaRiS, BPR or NoCC (PaRiS paper Alg. 1 and §V). Its coordinator is a
 * server of its own datacenter (§V: "clients are co-located with the server partition they
 * use as a transaction coordinator"), chosen by client id.
 *
 * <p>PaRiS: {@code ust_c}, the highest stable snapshot the session has seen; {@code hwt_c},
 * the commit time of its last update transaction; and {@code WC_c}, the private cache of its
 * own writes not yet known to be in the stable snapshot, pruned at every start (Alg. 1 line 5).
 * BPR: the highest snapshot seen (its own commits included), which the coordinator's clock
 * may raise. NoCC: neither; no start phase.
 */
final class ParisClient implements KvClient {
  private final Mode mode;
  private final Endpoint ep;
  private final int dc;
  /** The co-located server; with rotate_coordinator, the first of the datacenter's servers in turn. */
  private final int home;
  private final boolean rotate;
  private int turn;
  private final org.k2bench.core.topology.Topology topology;
  private final long timeoutMs;
  /** PaRiS: ust_c. BPR: the highest snapshot the session has seen. */
  private long snapshotSeen;
  private long hwt;
  /** WC_c: key -> the session's own write, with its commit time. */
  private final Map<String, Own> cache = new HashMap<>();

  private record Own(long version, long commitTime, Row row) {}

  ParisClient(Mode mode, Transport transport, int clientId, int dc, ServerOptions options) {
    this.mode = mode;
    this.dc = dc;
    this.ep = transport.openClient(clientId, dc, Runnable::run, m -> { });
    this.topology = transport.topology();
    this.home = Math.floorMod(clientId, topology.serversPerDc());
    this.rotate = options.system().flag(ParisOptions.ROTATE_COORDINATOR);
    this.timeoutMs = options.rpcTimeoutMs();
  }

  @Override
  public int id() {
    return ep.id();
  }

  @Override
  public int dc() {
    return dc;
  }

  /** The private cache's size (tests: it is pruned as the UST passes the writes). */
  synchronized int cachedWrites() {
    return cache.size();
  }

  @Override
  public synchronized ReadResult readTxn(Collection<String> keys) {
    if (keys.isEmpty()) {
      throw new IllegalArgumentException("a read-only transaction needs at least one key");
    }
    return begin().read(keys); // a transaction without writes needs no commit (Alg. 1 line 26)
  }

  @Override
  public synchronized WriteResult writeTxn(Map<String, Row> writes) {
    if (writes.isEmpty()) {
      throw new IllegalArgumentException("a write-only transaction needs at least one key");
    }
    ReadWriteTxn t = begin();
    t.write(writes);
    return t.commit();
  }

  @Override
  public WriteResult write(String key, Row row) {
    return writeTxn(Map.of(key, row));
  }

  /** The coordinator of the next transaction. */
  private int nextCoordinator() {
    int shard = rotate ? Math.floorMod(home + turn++, topology.serversPerDc()) : home;
    return topology.serverId(dc, shard);
  }

  @Override
  public synchronized ReadWriteTxn begin() {
    int coordinator = nextCoordinator();
    if (mode == Mode.NOCC) {
      return new Txn(coordinator, 0, 0); // §V: no start phase
    }
    long from = mode == Mode.PARIS ? snapshotSeen : Math.max(snapshotSeen, hwt);
    StartTxResp r = Calls.await(ep.call(coordinator, StartTxReq.newBuilder().setClientSnapshot(from).build(),
        StartTxResp.class), "start", timeoutMs);
    snapshotSeen = Math.max(snapshotSeen, r.getSnapshot()); // Alg. 1 line 4
    if (mode == Mode.PARIS) {
      long ust = snapshotSeen;
      cache.values().removeIf(o -> o.commitTime() <= ust); // line 5: now in every snapshot
    }
    return new Txn(coordinator, r.getTxnId(), r.getSnapshot());
  }

  /** One transaction: WS_c and RS_c (Alg. 1). */
  private final class Txn implements ReadWriteTxn {
    private final int coordinator;
    private final long id;
    private final long snapshot;
    private final Map<String, Row> ws = new LinkedHashMap<>();
    private final Map<String, Item> rs = new HashMap<>();

    Txn(int coordinator, long id, long snapshot) {
      this.coordinator = coordinator;
      this.id = id;
      this.snapshot = snapshot;
    }

    @Override
    public ReadResult read(Collection<String> keys) {
      synchronized (ParisClient.this) {
        Map<String, Row> rows = new LinkedHashMap<>();
        Map<String, Long> versions = new LinkedHashMap<>();
        Map<String, Double> staleness = new LinkedHashMap<>();
        List<String> ask = new ArrayList<>();
        for (String k : keys) { // Alg. 1 line 11: WS_c, RS_c, WC_c, in this order
          if (ws.containsKey(k)) {
            rows.put(k, ws.get(k)); // not committed: no version to record
          } else if (rs.containsKey(k)) {
            put(rs.get(k), rows, versions, staleness);
          } else if (mode == Mode.PARIS && cache.containsKey(k) && !Mutants.active(ParisMutants.PARIS_ABOVE_UST)) {
            // Alg. 1 line 18 also adds what the cache gave to RS_c; not needed here: the cache
            // is pruned only at start, so a repeated read finds the same entry again.
            Own o = cache.get(k);
            rows.put(k, o.row());
            versions.put(k, o.version());
            staleness.put(k, 0.0);
          } else {
            ask.add(k);
          }
        }
        int wanRounds = 0;
        if (!ask.isEmpty()) {
          ReadResp r = Calls.await(ep.call(coordinator, ReadReq.newBuilder().setTxnId(id).addAllKeys(ask)
              .setLatest(mode == Mode.NOCC).build(), ReadResp.class), "read", timeoutMs);
          for (Item it : r.getItemsList()) {
            rs.put(it.getKey(), it);
            put(it, rows, versions, staleness);
          }
          wanRounds = r.getWanRounds();
          if (mode == Mode.BPR) { // the read phase blocks as long as its slowest slice (§V-B)
            org.k2bench.core.metrics.ProcessMetrics.record("read_phase_blocked", Math.round(r.getBlockedMs() * 1000));
          }
        }
        double lag = mode == Mode.NOCC ? Double.NaN
            : Math.max(0, System.currentTimeMillis() - LamportClock.wallMsOf(LamportClock.timestamp(snapshot, 0)));
        return new ReadResult(rows, versions, wanRounds, staleness, lag, 0, 0);
      }
    }

    private void put(Item it, Map<String, Row> rows, Map<String, Long> versions, Map<String, Double> staleness) {
      rows.put(it.getKey(), it.getValue());
      versions.put(it.getKey(), it.getVersion());
      staleness.put(it.getKey(), it.getStalenessMs());
    }

    @Override
    public void write(Map<String, Row> writes) {
      synchronized (ParisClient.this) {
        ws.putAll(writes); // Alg. 1 lines 22-24
      }
    }

    @Override
    public WriteResult commit() {
      synchronized (ParisClient.this) {
        if (ws.isEmpty()) {
          return new WriteResult(0, 0);
        }
        CommitReq.Builder b = CommitReq.newBuilder().setTxnId(id).setHwt(hwt).setLatest(mode == Mode.NOCC);
        ws.forEach((k, v) -> b.addWrites(KeyRow.newBuilder().setKey(k).setValue(v)));
        CommitResp r = Calls.await(ep.call(coordinator, b.build(), CommitResp.class), "commit", timeoutMs);
        hwt = Math.max(hwt, r.getCommitTime()); // Alg. 1 line 29
        if (mode == Mode.PARIS) {
          ws.forEach((k, v) -> cache.put(k, new Own(r.getVersion(), r.getCommitTime(), v))); // lines 30-31
        } else if (mode == Mode.BPR) {
          snapshotSeen = Math.max(snapshotSeen, r.getCommitTime());
        }
        return new WriteResult(r.getVersion(), r.getWanRounds());
      }
    }
  }

  @Override
  public void close() {
    ep.close();
  }
}
