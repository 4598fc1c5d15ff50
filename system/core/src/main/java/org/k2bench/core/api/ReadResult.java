package org.k2bench.core.api;

import java.util.Map;
import org.k2bench.core.data.Row;

/**
 * The outcome of a read-only transaction, with what the benchmark records about it.
 *
 * @param rows the row read for every requested key
 * @param versions the version read for every key
 * @param wanRounds wide-area rounds the transaction took (0 = all-local)
 * @param stalenessMs per key, the time since a newer version was written in the reading
 *     datacenter (0 if the newest), as measured by the servers
 * @param snapshotLagMs how long before the transaction's snapshot time stopped being the
 *     present at the reading servers (K2, PaRiS*: wall time since their Lamport clocks
 *     passed the chosen ts); NaN where a system reads the present
 * @param nonReplicaKeys keys read that are not replicated in the reading datacenter, for
 *     systems with a cache of such values (K2's DC cache, PaRiS*'s private cache); 0 where
 *     a system has no cache
 * @param remoteKeys of those, how many were fetched from another datacenter (the rest were
 *     served from the cache): the cache hit rate is 1 - remoteKeys / nonReplicaKeys
 */
public record ReadResult(Map<String, Row> rows, Map<String, Long> versions, int wanRounds,
    Map<String, Double> stalenessMs, double snapshotLagMs, int nonReplicaKeys, int remoteKeys) {

  /** A read of the present (no snapshot lag measured), by a system without a cache. */
  public ReadResult(Map<String, Row> rows, Map<String, Long> versions, int wanRounds, Map<String, Double> stalenessMs) {
    this(rows, versions, wanRounds, stalenessMs, Double.NaN, 0, 0);
  }

  public boolean allLocal() {
    return wanRounds == 0;
  }
}
