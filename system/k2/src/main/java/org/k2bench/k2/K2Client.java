package org.k2bench.k2;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.k2bench.core.api.Calls;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.WriteResult;
import org.k2bench.core.data.Row;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.txn.OneHopDeps;
import org.k2bench.core.txn.WriteClient;

/**
 * K2's client library (K2 paper §III-B): routes operations to the servers of its own
 * datacenter and tracks the session's causal metadata, the one-hop dependencies
 * {@code deps} and the read timestamp {@code read_ts}. One instance is one session, with
 * one operation at a time; an operation's steps run on the threads that deliver its
 * replies ({@link #nonBlocking}).
 */
public final class K2Client implements KvClient {
  private final Topology topology;
  private final Placement placement;
  private final ServerOptions options;
  private final int dc;
  private final Endpoint ep;
  private final WriteClient writer;
  private final SessionCache sessionCache;
  private long readTs;
  /** One-hop dependencies: the last write and every version read since. */
  private final OneHopDeps deps = new OneHopDeps();

  /**
   * @param sessionCache values only this session may read (PaRiS*'s private cache);
   *     {@link SessionCache#NONE} for K2
   */
  public K2Client(Transport transport, int clientId, int dc, ServerOptions options, SessionCache sessionCache) {
    this.topology = transport.topology();
    this.placement = Placement.of(topology);
    this.options = options;
    this.dc = dc;
    this.ep = transport.openClient(clientId, dc, Runnable::run, m -> { });
    this.writer = new WriteClient(ep, options.rpcTimeoutMs());
    this.sessionCache = sessionCache;
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
    return ReadOnlyTransaction.start(this, keys);
  }

  /**
   * A local write-only transaction (§III-C): sub-requests to every local participant, a
   * random coordinator key; the coordinator answers once all participants prepared and it
   * committed. Afterwards deps = {<coordinator key, version>} and read_ts >= version.
   */
  @Override
  public synchronized WriteResult writeTxn(Map<String, Row> writes) {
    return Calls.join(writeTxnAsync(writes));
  }

  @Override
  public CompletableFuture<WriteResult> writeTxnAsync(Map<String, Row> writes) {
    return writer.commitAsync(writes, this::localServerFor, deps).thenApply(c -> {
      deps.wrote(c.coordinatorKey(), c.version());
      readTs = Math.max(readTs, c.version());
      sessionCache.onWrite(writes, c.version());
      return new WriteResult(c.version(), 0);
    });
  }

  @Override
  public WriteResult write(String key, Row row) {
    return writeTxn(Map.of(key, row));
  }

  // ---------------------------------------------------------------- for ReadOnlyTransaction

  long readTs() {
    return readTs;
  }

  /** After a read-only transaction at {@code ts}: advance read_ts, add what was read to deps. */
  void afterRead(long ts, Map<String, Long> versionsRead) {
    readTs = Math.max(readTs, ts);
    versionsRead.forEach(deps::read);
  }

  boolean isReplicaKey(String key) {
    return placement.isReplica(dc, key);
  }

  int localServerFor(String key) {
    return placement.serverFor(dc, key);
  }

  Map<Integer, List<String>> groupByLocalServer(Collection<String> keys) {
    Map<Integer, List<String>> out = new HashMap<>();
    for (String k : keys) {
      out.computeIfAbsent(localServerFor(k), s -> new ArrayList<>()).add(k);
    }
    return out;
  }

  /** A call that fails as an operation does after the RPC timeout ({@link Calls#within}). */
  <T extends com.google.protobuf.Message> CompletableFuture<T> call(int server,
      com.google.protobuf.Message req, Class<T> type, String what) {
    return Calls.within(ep.call(server, req, type), what, options.rpcTimeoutMs());
  }

  SessionCache sessionCache() {
    return sessionCache;
  }


  @Override
  public void close() {
    ep.close();
  }
}
