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
 */
public record ReadResult(Map<String, Row> rows, Map<String, Long> versions, int wanRounds,
    Map<String, Double> stalenessMs, double snapshotLagMs) {

  /** A read of the present (no snapshot lag measured). */
  public ReadResult(Map<String, Row> rows, Map<String, Long> versions, int wanRounds, Map<String, Double> stalenessMs) {
    this(rows, versions, wanRounds, stalenessMs, Double.NaN);
  }

  public boolean allLocal() {
    return wanRounds == 0;
  }
}
