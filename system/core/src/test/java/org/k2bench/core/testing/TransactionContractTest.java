package org.k2bench.core.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.LDN;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.data.Row;

/**
 * Guarantees of the systems with write-only transactions on the replica groups (K2, RAD,
 * PaRiS*, PaRiS, BPR): atomic visibility of write-only transactions, causality across
 * sessions, read-your-writes and monotonic reads, each under concurrency in all six
 * datacenters; and, from {@link SystemContractTest}, that no write loses to a value it
 * follows. A system's module runs them by extending this class.
 */
public abstract class TransactionContractTest extends SystemContractTest {
  /**
   * Concurrent write-only transactions from three datacenters each write one tag to six
   * keys on both shards and all replica positions; read-only transactions in every
   * datacenter must see one tag across all keys they read. The writers overlap on the
   * same keys, so transactions are concurrently pending at the same servers.
   */
  @Test
  void readOnlyTransactionsNeverObservePartOfAWriteOnlyTransaction() throws Exception {
    List<String> keys = List.of(key("c", 0, VA, CA), key("c", 1, VA, CA), key("c", 0, SP, LDN),
        key("c", 1, SP, LDN), key("c", 0, TYO, SG), key("c", 1, TYO, SG));
    AtomicLong writes = new AtomicLong();
    AtomicLong reads = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> writers = new ArrayList<>();
    for (int dc : new int[] {VA, LDN, TYO}) {
      KvClient w = cluster.client(dc);
      writers.add(new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          Map<String, Row> m = new LinkedHashMap<>();
          String tag = "dc" + dc + "-" + i;
          keys.forEach(k -> m.put(k, row(tag)));
          w.writeTxn(m);
          writes.incrementAndGet();
        }
      }));
    }
    Set<String> distinct = ConcurrentHashMap.newKeySet();
    List<String> failures = runEverywhere(4_000, writers, stop, (c, f) -> {
      Clusters.advance(c);
      List<String> subset = new ArrayList<>(keys);
      Collections.shuffle(subset);
      subset = subset.subList(0, 2 + (int) (reads.incrementAndGet() % 5));
      ReadResult r = c.readTxn(subset);
      String first = str(r.rows().get(subset.get(0)));
      distinct.add(first);
      for (String k : subset) {
        if (!str(r.rows().get(k)).equals(first)) {
          f.add("dc " + c.dc() + " read a fractured transaction: " + tags(r));
          return;
        }
      }
    });
    assertEquals(List.of(), failures.subList(0, Math.min(5, failures.size())));
    assertTrue(writes.get() > 60, "enough write-only transactions: " + writes.get());
    assertTrue(reads.get() > 200, "enough read-only transactions: " + reads.get());
    assertTrue(distinct.size() > 20, "readers saw many different transactions: " + distinct.size());
  }

  /**
   * A client in VA writes X then Y, over and over. X's replicas (TYO, SG) are behind links
   * slowed by 60 ms, so elsewhere Y's update arrives well before X's. A read-only
   * transaction anywhere that returns Y = i must return X >= i.
   */
  @Test
  void aTransactionThatReturnsYAlsoReturnsTheXWrittenBeforeIt() throws Exception {
    String x = key("d-x", 0, TYO, SG);
    String y = key("d-y", 1, VA, CA);
    for (int from = 0; from < 6; from++) {
      for (int slow : new int[] {TYO, SG}) {
        if (from != slow) {
          cluster.transport().links().setExtraDelayMs(from, slow, 60);
        }
      }
    }
    checkCausality(x, y);
  }

  /**
   * The same writes, but now the readers of CA, SP and LDN reach Y's datacenters (VA, CA)
   * 60 ms late: where a system reads remotely, a transaction reads X well before Y, so it
   * can see a Y newer than the X it read unless it notices the inconsistency (Eiger's
   * second round) or reads a consistent snapshot in the first place (K2, PaRiS*).
   */
  @Test
  void causalityHoldsWhenTheReaderReachesYLate() throws Exception {
    String x = key("d2-x", 0, TYO, SG);
    String y = key("d2-y", 1, VA, CA);
    for (int from : new int[] {CA, SP, LDN}) {
      for (int slow : new int[] {VA, CA}) {
        if (from != slow) {
          cluster.transport().links().setExtraDelayMs(from, slow, 60);
        }
      }
    }
    checkCausality(x, y);
  }

  private void checkCausality(String x, String y) throws Exception {
    KvClient writer = cluster.client(VA);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong written = new AtomicLong();
    Thread w = new Thread(() -> {
      for (long i = 1; !stop.get(); i++) {
        writer.write(x, row(Long.toString(i)));
        writer.write(y, row(Long.toString(i)));
        written.set(i);
      }
    });
    AtomicLong checked = new AtomicLong();
    AtomicLong sawY = new AtomicLong();
    List<String> failures = runEverywhere(4_000, List.of(w), stop, (c, f) -> {
      Clusters.advance(c);
      ReadResult r = c.readTxn(List.of(y, x));
      long yv = num(str(r.rows().get(y)));
      long xv = num(str(r.rows().get(x)));
      checked.incrementAndGet();
      if (yv > 0) {
        sawY.incrementAndGet();
      }
      if (xv < yv) {
        f.add("dc " + c.dc() + " read Y=" + yv + " but X=" + xv);
      }
    });
    assertEquals(List.of(), failures.subList(0, Math.min(5, failures.size())));
    assertTrue(checked.get() > 100, "enough read-only transactions: " + checked.get());
    assertTrue(written.get() > 10, "enough writes: " + written.get());
    assertTrue(sawY.get() > 10, "readers saw Y advance: " + sawY.get());
  }

  /**
   * A session reads its own single writes and write-only transactions, replica keys or
   * not: the version it reads is its own write's or newer (sessions in all datacenters
   * write the same keys, so a concurrent write may win last-writer-wins).
   */
  @Test
  void aSessionReadsItsOwnWrites() throws Exception {
    List<String> keys = List.of(key("e", 0, VA, CA), key("e", 1, SP, LDN), key("e", 0, TYO, SG));
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong n = new AtomicLong();
    AtomicLong sawOwn = new AtomicLong();
    List<String> failures = runEverywhere(2_000, List.of(), stop, (c, f) -> {
      long i = n.incrementAndGet();
      String mine = "s" + c.id() + "-" + i;
      String k = keys.get((int) (i % keys.size()));
      long v = c.write(k, row(mine)).version();
      check(c, f, keys, Map.of(k, mine), v, sawOwn);
      Map<String, Row> txn = new LinkedHashMap<>();
      Map<String, String> mineT = new LinkedHashMap<>();
      keys.forEach(kk -> {
        txn.put(kk, row(mine + "t"));
        mineT.put(kk, mine + "t");
      });
      check(c, f, keys, mineT, c.writeTxn(txn).version(), sawOwn);
    });
    assertEquals(List.of(), failures.subList(0, Math.min(5, failures.size())));
    assertTrue(n.get() > 30, "enough writes: " + n.get());
    assertTrue(sawOwn.get() > n.get() / 2, "most reads returned the session's own write: " + sawOwn.get());
  }

  private static void check(KvClient c, List<String> f, List<String> keys, Map<String, String> written,
      long version, AtomicLong sawOwn) {
    ReadResult r = c.readTxn(keys);
    for (Map.Entry<String, String> e : written.entrySet()) {
      long read = r.versions().get(e.getKey());
      String value = str(r.rows().get(e.getKey()));
      if (read < version || (read == version && !value.equals(e.getValue()))) {
        f.add("dc " + c.dc() + " wrote " + e.getValue() + " (version " + version + ") to " + e.getKey()
            + " then read " + value + " (version " + read + ")");
        return;
      }
      if (read == version) {
        sawOwn.incrementAndGet();
      }
    }
  }

  /** A session never reads a version older than one it has read before. */
  @Test
  void readsAreMonotonicInEverySession() throws Exception {
    String k = key("m", 0, SP, LDN);
    String other = key("m", 1, TYO, SG);
    KvClient writer = cluster.client(CA);
    AtomicBoolean stop = new AtomicBoolean();
    Thread w = new Thread(() -> {
      for (long i = 1; !stop.get(); i++) {
        writer.write(k, row(Long.toString(i)));
        Clusters.sleep(3);
      }
    });
    Map<Integer, Long> last = new ConcurrentHashMap<>();
    AtomicLong advanced = new AtomicLong();
    List<String> failures = runEverywhere(3_000, List.of(w), stop, (c, f) -> {
      if (advanced.incrementAndGet() % 3 == 0) {
        Clusters.advance(c); // sometimes move forward, sometimes re-read at the same point
      }
      long v = num(str(c.readTxn(List.of(k, other)).rows().get(k)));
      Long before = last.put(c.id(), v);
      if (before != null && v < before) {
        f.add("dc " + c.dc() + " read " + k + "=" + v + " after reading " + before);
      }
    });
    assertEquals(List.of(), failures.subList(0, Math.min(5, failures.size())));
    assertTrue(last.values().stream().anyMatch(v -> v > 10), "readers saw the key advance: " + last);
  }
}
