package org.k2bench.paris;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.metrics.ProcessMetrics;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.TestOptions;

/**
 * NoCC, the PaRiS paper's negative control, "does not have the start phase of transactions
 * (one round trip less than PaRiS)" and "does not run a stabilization protocol" (§V); for a
 * fair comparison it keeps the 2PC of the commit phase. Counted here by message type as the
 * transport delivers them (its msg:&lt;local|wan&gt;:&lt;type&gt; records, one per message), for NoCC
 * and, for contrast, PaRiS, over the same transactions.
 */
class NoccMessagesTest {
  static final int TXNS = 20;

  /** Messages delivered, by type, while a session in CA ran {@code TXNS} transactions (and 300 ms more). */
  static Map<String, Long> delivered(StoreSystem system) {
    Map<String, LongAdder> counts = new ConcurrentHashMap<>();
    ProcessMetrics.Sink sink = (tag, bytes) -> {
      if (tag.startsWith("msg:")) {
        counts.computeIfAbsent(tag.substring(tag.lastIndexOf(':') + 1), t -> new LongAdder()).increment();
      }
    };
    try (LocalCluster c = Clusters.start(system, TestOptions.defaults())) {
      ProcessMetrics.use(sink);
      KvClient client = c.client(CA);
      String near = Clusters.key(c.placement(), "n", -1, new int[] {VA, CA}, new java.util.ArrayList<>());
      for (int i = 0; i < TXNS / 2; i++) {
        client.writeTxn(Map.of(near, row("v" + i), "k" + i, row("v" + i)));
        client.readTxn(List.of("r" + i, "s" + i)); // keys it never wrote: PaRiS's private cache has none
      }
      Clusters.sleep(300); // the last commit decisions and replication, and 60 rounds of Δ_G = 5 ms
    } finally {
      ProcessMetrics.release(sink);
    }
    Map<String, Long> out = new java.util.TreeMap<>();
    counts.forEach((k, v) -> out.put(k, v.sum()));
    System.out.println(system.name() + " messages delivered: " + out);
    return out;
  }

  @Test
  void noccSendsNoStartRequestAndNoStabilizationMessagesWhereParisDoes() {
    Map<String, Long> nocc = delivered(new NoccSystem());
    Map<String, Long> paris = delivered(new ParisSystem());
    for (String type : List.of("StartTxReq", "StableReport", "DcStable", "UstAnnounce")) {
      assertEquals(0, nocc.getOrDefault(type, 0L), "NoCC: no " + type + ": " + nocc);
      assertTrue(paris.getOrDefault(type, 0L) > 0, "PaRiS sends " + type + ": " + paris);
    }
    assertEquals(TXNS, paris.get("StartTxReq"), "PaRiS: one start per transaction: " + paris);
    for (Map<String, Long> m : List.of(nocc, paris)) { // the same transactions, commits and reads
      assertEquals(TXNS, m.get("ReadReq") + m.get("CommitReq"), "every transaction reached its coordinator: " + m);
      assertTrue(m.getOrDefault("PrepareReq", 0L) >= TXNS / 2, "both prepare (2PC, §V (v)): " + m);
      assertTrue(m.getOrDefault("CommitTx", 0L) >= TXNS / 2, "and commit: " + m);
    }
    // Δ_G = 5 ms for 300 ms and more: each of the six non-root servers reports about every 5 ms.
    assertTrue(paris.get("StableReport") > 6 * 30, "PaRiS gossips every Δ_G: " + paris);
  }
}
