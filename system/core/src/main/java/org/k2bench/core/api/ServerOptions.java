package org.k2bench.core.api;

/**
 * Protocol parameters shared by the bundled systems. A run's come from its spec, built in one
 * place ({@link RunSpec#serverOptions}): main code has no defaults of its own for them (the
 * harness's schema has; tests start clusters with the core test-jar's {@code TestOptions}).
 *
 * @param numKeys size of the keyspace; the DC cache is sized as a fraction of it
 * @param cacheFraction DC cache size as a fraction of all keys, split over a DC's servers (K2: 5%)
 * @param gcWindowMs how long superseded versions are kept (paper: 5 s)
 * @param replicaRetentionMs how long replica servers keep superseded versions for remote reads
 * @param txnTimeoutMs read-only transaction timeout; a first-round access protects versions this long
 * @param rpcTimeoutMs how long a client or server waits for an answer before failing the operation
 * @param failoverTimeoutMs how long a remote read waits for a replica datacenter before it
 *     asks the next nearest one (K2 §VI-A); well above the largest RTT, so that a loaded but
 *     healthy replica is not skipped. Replication waits this long for every replica
 *     datacenter's acknowledgement before it goes on with those that answered.
 * @param cacheVersionsPerKey how many versions of a key the DC cache keeps, newest first
 *     (0: every version the store still offers to readers)
 * @param system the options of the one system this is for ({@link StoreSystem#options()}), checked
 */
public record ServerOptions(long numKeys, double cacheFraction, long gcWindowMs,
    long replicaRetentionMs, long txnTimeoutMs, long rpcTimeoutMs, long failoverTimeoutMs,
    int cacheVersionsPerKey, SystemOptions system) {

  public ServerOptions withFailoverTimeoutMs(long ms) {
    return new ServerOptions(numKeys, cacheFraction, gcWindowMs, replicaRetentionMs, txnTimeoutMs, rpcTimeoutMs, ms,
        cacheVersionsPerKey, system);
  }

  public ServerOptions withNumKeys(long n) {
    return new ServerOptions(n, cacheFraction, gcWindowMs, replicaRetentionMs, txnTimeoutMs, rpcTimeoutMs,
        failoverTimeoutMs, cacheVersionsPerKey, system);
  }

  public ServerOptions withCacheFraction(double f) {
    return new ServerOptions(numKeys, f, gcWindowMs, replicaRetentionMs, txnTimeoutMs, rpcTimeoutMs,
        failoverTimeoutMs, cacheVersionsPerKey, system);
  }

  public ServerOptions withRpcTimeoutMs(long ms) {
    return new ServerOptions(numKeys, cacheFraction, gcWindowMs, replicaRetentionMs, txnTimeoutMs, ms,
        failoverTimeoutMs, cacheVersionsPerKey, system);
  }

  public ServerOptions withGc(long windowMs, long replicaMs, long timeoutMs) {
    return new ServerOptions(numKeys, cacheFraction, windowMs, replicaMs, timeoutMs, rpcTimeoutMs,
        failoverTimeoutMs, cacheVersionsPerKey, system);
  }

  public ServerOptions withCacheVersionsPerKey(int n) {
    return new ServerOptions(numKeys, cacheFraction, gcWindowMs, replicaRetentionMs, txnTimeoutMs, rpcTimeoutMs,
        failoverTimeoutMs, n, system);
  }

  /** The same options with these system options (checked by {@link SystemOptions#parse}). */
  public ServerOptions withSystemOptions(SystemOptions options) {
    return new ServerOptions(numKeys, cacheFraction, gcWindowMs, replicaRetentionMs, txnTimeoutMs, rpcTimeoutMs,
        failoverTimeoutMs, cacheVersionsPerKey, options);
  }

  /** DC cache capacity per server, in keys. */
  public int cacheKeysPerServer(int serversPerDc) {
    return (int) Math.ceil(numKeys * cacheFraction / serversPerDc);
  }
}
