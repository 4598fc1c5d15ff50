package org.k2bench.rad;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.k2bench.core.api.Calls;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.WriteResult;
import org.k2bench.core.data.Row;
import org.k2bench.core.topology.GroupPlacement;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.txn.OneHopDeps;
import org.k2bench.core.txn.WriteClient;

/**
 * RAD's client library: reads and writes go directly to the datacenter of the client's
 * own replica group that holds each key (cross-datacenter whenever that is not the
 * client's own). Tracks the session's one-hop dependencies as Eiger does.
 */
final class RadClient implements KvClient {
  private final GroupPlacement placement;
  private final ServerOptions options;
  private final int dc;
  private final Endpoint ep;
  private final WriteClient writer;
  private final OneHopDeps deps = new OneHopDeps();
  /**
   * The session's own writes (key -> version = EVT) until a read has seen them. The
   * coordinator of a write-only transaction answers once it committed; another participant
   * may hold the transaction pending for a while longer, and round one there returns the
   * previous version. A read-only transaction's effective time is therefore at least the
   * version of the session's own writes it reads: such a key then goes to round two, whose
   * server resolves the pending transaction with its coordinator (read-your-writes).
   */
  private final Map<String, Long> ownWrites = new LinkedHashMap<>(16, 0.75f, false) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
      return size() > 10_000; // long visible by then
    }
  };

  /**
   * The largest EVT among the versions the session has read (EVTs of its own replica group,
   * where it reads everything). A replicated write-only transaction becomes visible at its
   * participants one at a time: having read one of its keys where it committed, a later
   * read-only transaction must not read another of its keys where it is still pending, and
   * round one there returns the previous version, valid until the pending prepare time,
   * below this EVT. So the effective time is at least this floor, and such a key goes to
   * round two, which resolves the pending transaction with its coordinator. The session's
   * own write-only transactions raise it too. This is causality across a session's
   * transactions (§II-A); K2's client keeps the same bound as read_ts, advanced after reads
   * and writes (§V-C); §II-B and §VII-A only say that RAD runs Eiger's rounds.
   */
  private long readFloor;

  RadClient(Transport transport, int clientId, int dc, ServerOptions options) {
    this.placement = GroupPlacement.of(transport.topology(), "RAD");
    this.options = options;
    this.dc = dc;
    this.ep = transport.openClient(clientId, dc, Runnable::run, m -> { });
    this.writer = new WriteClient(ep, options.rpcTimeoutMs());
  }

  /** The server holding {@code key} in this client's replica group. */
  int homeServer(String key) {
    return placement.serverFor(placement.replicaInGroupOf(dc, key), key);
  }

  boolean isRemote(int server) {
    return placement.topology().dcOfServer(server) != dc;
  }

  /** A call that fails as an operation does after the RPC timeout ({@link Calls#within}). */
  <T extends com.google.protobuf.Message> CompletableFuture<T> call(int server,
      com.google.protobuf.Message req, Class<T> type, String what) {
    return Calls.within(ep.call(server, req, type), what, options.rpcTimeoutMs());
  }

  /** The largest EVT the session has read (see {@link #readFloor}). */
  long readFloor() {
    return readFloor;
  }

  /** A read-only transaction of this session returned a version committed at {@code evt}. */
  void sawEvt(long evt) {
    readFloor = Math.max(readFloor, evt);
  }

  /** The version of the session's own write of {@code key} no read has returned yet, or 0. */
  long ownWriteVersion(String key) {
    return ownWrites.getOrDefault(key, 0L);
  }

  @Override
  public int id() {
    return ep.id();
  }

  @Override
  public int dc() {
    return dc;
  }

  @Override
  public boolean nonBlocking() {
    return true;
  }

  @Override
  public synchronized ReadResult readTxn(Collection<String> keys) {
    return Calls.join(readTxnAsync(keys));
  }

  @Override
  public CompletableFuture<ReadResult> readTxnAsync(Collection<String> keys) {
    if (keys.isEmpty()) {
      throw new IllegalArgumentException("a read-only transaction needs at least one key");
    }
    return EigerReadOnlyTransaction.start(this, keys).thenApply(r -> {
      r.versions().forEach((k, v) -> {
        deps.read(k, v);
        ownWrites.computeIfPresent(k, (key, mine) -> v >= mine ? null : mine);
      });
      return r;
    });
  }

  /** Eiger's write-only transaction; participants are in the group's datacenters, often remote. */
  @Override
  public synchronized WriteResult writeTxn(Map<String, Row> writes) {
    return Calls.join(writeTxnAsync(writes));
  }

  @Override
  public CompletableFuture<WriteResult> writeTxnAsync(Map<String, Row> writes) {
    return writer.commitAsync(writes, this::homeServer, deps).thenApply(c -> {
      writes.keySet().forEach(k -> ownWrites.put(k, c.version()));
      sawEvt(c.version()); // a client transaction's version is its EVT in this group
      deps.wrote(c.coordinatorKey(), c.version());
      boolean remote = c.participants().stream().anyMatch(this::isRemote);
      return new WriteResult(c.version(), remote ? 1 : 0);
    });
  }

  @Override
  public WriteResult write(String key, Row row) {
    return writeTxn(Map.of(key, row));
  }

  @Override
  public void close() {
    ep.close();
  }
}
