package org.k2bench.k2;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.OperationFailedException;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.WriteResult;
import org.k2bench.core.data.Dep;
import org.k2bench.core.data.Row;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.WotReply;
import org.k2bench.core.txn.proto.WotSubRequest;

/**
 * K2's client library (papers/k2.md §III-B): routes operations to the servers of its own
 * datacenter and tracks the session's causal metadata, the one-hop dependencies
 * {@code deps} and the read timestamp {@code read_ts}. One instance is one session; calls
 * are serialized.
 */
public final class K2Client implements KvClient {
  private final Topology topology;
  private final Placement placement;
  private final ServerOptions options;
  private final int dc;
  private final Endpoint ep;
  private final Random random;
  private long readTs;
  /** One-hop dependencies: the last write and every version read since (key -> version). */
  private final Map<String, Long> deps = new LinkedHashMap<>();
  private long txnSeq;

  K2Client(Transport transport, int clientId, int dc, ServerOptions options) {
    this.topology = transport.topology();
    this.placement = new Placement(topology);
    this.options = options;
    this.dc = dc;
    this.ep = transport.openClient(clientId, dc, Runnable::run, m -> { });
    this.random = new Random(clientId);
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
  public synchronized ReadResult readTxn(Collection<String> keys) {
    if (keys.isEmpty()) {
      throw new IllegalArgumentException("a read-only transaction needs at least one key");
    }
    return ReadOnlyTransaction.run(this, keys);
  }

  /**
   * A local write-only transaction (§III-C): sub-requests to every local participant, a
   * random coordinator key; the coordinator answers once all participants prepared and it
   * committed. Returns the version (also the EVT here).
   */
  @Override
  public synchronized WriteResult writeTxn(Map<String, Row> writes) {
    if (writes.isEmpty()) {
      throw new IllegalArgumentException("a write-only transaction needs at least one key");
    }
    List<String> keys = new ArrayList<>(writes.keySet());
    String coordinatorKey = keys.get(random.nextInt(keys.size()));
    int coordinator = localServerFor(coordinatorKey);
    Map<Integer, List<String>> participants = groupByLocalServer(keys);
    long txnId = (++txnSeq << 16) | ep.id(); // low bits >= 4096: never a server-stamped version
    CompletableFuture<WotReply> reply = null;
    for (Map.Entry<Integer, List<String>> e : participants.entrySet()) {
      WotSubRequest.Builder sub = WotSubRequest.newBuilder().setTxnId(txnId)
          .setCoordinatorKey(coordinatorKey).setCoordinator(coordinator)
          .setNumParticipants(participants.size());
      for (String k : e.getValue()) {
        sub.addWrites(KeyValue.newBuilder().setKey(k).setValue(writes.get(k)));
      }
      if (e.getKey() == coordinator) {
        deps.forEach((k, v) -> sub.addDeps(Dep.newBuilder().setKey(k).setVersion(v)));
        reply = call(coordinator, sub.build(), WotReply.class);
      } else {
        ep.send(e.getKey(), sub.build());
      }
    }
    long version = await(reply, "write-only transaction").getVersion();
    deps.clear();
    deps.put(coordinatorKey, version);
    readTs = Math.max(readTs, version);
    return new WriteResult(version, 0);
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
    versionsRead.forEach((k, v) -> deps.merge(k, v, Math::max));
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

  <T extends com.google.protobuf.Message> CompletableFuture<T> call(int server,
      com.google.protobuf.Message req, Class<T> type) {
    return ep.call(server, req, type);
  }

  <T> T await(CompletableFuture<T> f, String what) {
    try {
      return f.get(options.rpcTimeoutMs(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      f.cancel(false);
      throw new OperationFailedException(what + " timed out after " + options.rpcTimeoutMs() + " ms", e);
    } catch (ExecutionException e) {
      throw new OperationFailedException(what + " failed: " + e.getCause().getMessage(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new OperationFailedException(what + " interrupted", e);
    }
  }

  /** The session's current one-hop dependencies (for tests). */
  synchronized Map<String, Long> deps() {
    return Map.copyOf(deps);
  }

  @Override
  public void close() {
    ep.close();
  }
}
