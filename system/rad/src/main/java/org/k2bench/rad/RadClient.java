package org.k2bench.rad;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.WriteResult;
import org.k2bench.core.data.Row;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.txn.WriteClient;

/**
 * RAD's client library: reads and writes go directly to the datacenter of the client's
 * own replica group that holds each key (cross-datacenter whenever that is not the
 * client's own). Tracks the session's one-hop dependencies as Eiger does.
 */
final class RadClient implements KvClient {
  private final Placement placement;
  private final ServerOptions options;
  private final int dc;
  private final Endpoint ep;
  private final WriteClient writer;
  private final Map<String, Long> deps = new LinkedHashMap<>();

  RadClient(Transport transport, int clientId, int dc, ServerOptions options) {
    this.placement = new Placement(transport.topology());
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

  Endpoint endpoint() {
    return ep;
  }

  long timeoutMs() {
    return options.rpcTimeoutMs();
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
    ReadResult r = EigerReadOnlyTransaction.run(this, keys);
    r.versions().forEach((k, v) -> deps.merge(k, v, Math::max));
    return r;
  }

  /** Eiger's write-only transaction; participants are in the group's datacenters, often remote. */
  @Override
  public synchronized WriteResult writeTxn(Map<String, Row> writes) {
    WriteClient.Committed c = writer.commit(writes, this::homeServer, deps);
    deps.clear();
    deps.put(c.coordinatorKey(), c.version());
    boolean remote = c.participants().stream().anyMatch(this::isRemote);
    return new WriteResult(c.version(), remote ? 1 : 0);
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
