package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Row;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.testing.TestOptions;

/**
 * A session that never writes still moves forward (K2 §V-B: clients "make progress through
 * the garbage collection that safely discards any versions older than 5 s"): while hot
 * keys are overwritten every 40 ms, a reader in VA that only reads them never gets a value
 * older than the GC window (shortened here to 1 s; plus the time its transaction took
 * between the rounds), and the versions it reads keep
 * advancing. A session held back by its own first-round reads (which protect what they
 * read from GC) would read ever older snapshots.
 *
 * <p>find_ts picks the earliest time with values, so the reader often fetches, from a
 * replica, a version its datacenter offers near the window's end; the replica keeps it the
 * window, the transaction timeout and a fail-over and more (the spec's rule for
 * server.replica_retention_ms), or the read fails as garbage-collected there.
 */
class K2FreshnessTest {
  static final long WINDOW_MS = 1_000;
  /** The spec's rule: the window, the transaction timeout and a fail-over (2 s) at least. */
  static final long RETENTION_MS = 5 * WINDOW_MS;

  @Test
  void aSessionThatNeverWritesKeepsUpWithHotKeys() throws Exception {
    try (LocalCluster cluster = TestCluster.start(TestOptions.defaults().withGc(WINDOW_MS, RETENTION_MS, WINDOW_MS))) {
      List<String> used = new ArrayList<>();
      List<String> keys = List.of(
          Clusters.key(cluster.placement(), "hot-a", -1, new int[] {SP, LDN}, used),
          Clusters.key(cluster.placement(), "hot-b", -1, new int[] {TYO, SG}, used),
          Clusters.key(cluster.placement(), "hot-c", -1, new int[] {VA, CA}, used));
      KvClient writer = cluster.client(CA);
      AtomicBoolean stop = new AtomicBoolean();
      CompletableFuture<Void> writes = CompletableFuture.runAsync(() -> {
        for (int i = 0; !stop.get(); i++) {
          Map<String, Row> w = new LinkedHashMap<>();
          for (String k : keys) {
            w.put(k, row("w" + i));
          }
          writer.writeTxn(w);
          Clusters.sleep(40);
        }
      });
      try {
        KvClient reader = cluster.client(VA); // never writes
        long end = System.currentTimeMillis() + 5_000;
        double worst = 0;
        long firstVersion = -1;
        long lastVersion = -1;
        int reads = 0;
        while (System.currentTimeMillis() < end) {
          long began = System.nanoTime();
          ReadResult r = reader.readTxn(keys);
          double tookMs = (System.nanoTime() - began) / 1e6;
          reads++;
          // Round one offers a version inserted (so superseded) less than the window ago;
          // round two reads it up to the transaction's own duration later, and its
          // staleness counts from then (whole ms: at most the window itself).
          for (double s : r.stalenessMs().values()) {
            worst = Math.max(worst, s - tookMs);
          }
          long v = r.versions().get(keys.get(0));
          if (firstVersion < 0) {
            firstVersion = v;
          }
          lastVersion = v;
          Clusters.sleep(20);
        }
        assertTrue(reads > 20, "reads: " + reads);
        assertTrue(worst <= WINDOW_MS, "a value read was " + worst + " ms staler than its transaction took;"
            + " versions superseded longer than the GC window ago are not offered to anyone");
        assertTrue(lastVersion > firstVersion, "the reader moved forward without writing");
      } finally {
        stop.set(true);
        writes.get();
      }
    }
  }
}
