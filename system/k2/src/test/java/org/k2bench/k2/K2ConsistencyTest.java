package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.k2.TestCluster.CA;
import static org.k2bench.k2.TestCluster.LDN;
import static org.k2bench.k2.TestCluster.SG;
import static org.k2bench.k2.TestCluster.SP;
import static org.k2bench.k2.TestCluster.TYO;
import static org.k2bench.k2.TestCluster.VA;
import static org.k2bench.k2.TestCluster.row;
import static org.k2bench.k2.TestCluster.str;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.data.Row;
import org.k2bench.core.topology.Placement;

/** K2's guarantees under concurrency: atomic visibility of write-only transactions, causality. */
class K2ConsistencyTest {
  static LocalCluster cluster;
  static Placement placement;
  static final List<String> used = new ArrayList<>();

  @BeforeAll
  static void start() {
    cluster = TestCluster.start(ServerOptions.defaults());
    placement = cluster.placement();
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  @AfterEach
  void healLinks() {
    cluster.transport().links().clearExtraDelays();
  }

  static String key(String prefix, int shard, int... replicaDcs) {
    String k = TestCluster.key(placement, prefix,
        c -> Arrays.equals(placement.replicaDcs(c), replicaDcs) && placement.shardOf(c) == shard, used);
    used.add(k);
    return k;
  }

  /** Runs {@code body} in one thread per datacenter for {@code ms}; collects failures. */
  static List<String> runEverywhere(long ms, List<Thread> extra, AtomicBoolean stop, DcBody body)
      throws InterruptedException {
    List<String> failures = Collections.synchronizedList(new ArrayList<>());
    List<Thread> threads = new ArrayList<>(extra);
    for (int dc = 0; dc < 6; dc++) {
      KvClient c = cluster.client(dc);
      threads.add(new Thread(() -> {
        try {
          while (!stop.get()) {
            body.run(c, failures);
          }
        } catch (RuntimeException | AssertionError e) {
          failures.add("dc " + c.dc() + ": " + e);
        }
      }));
    }
    threads.forEach(Thread::start);
    Thread.sleep(ms);
    stop.set(true);
    for (Thread t : threads) {
      t.join(10_000);
    }
    return failures;
  }

  interface DcBody {
    void run(KvClient client, List<String> failures);
  }

  /**
   * (c) Concurrent write-only transactions from three datacenters each write one tag to
   * six keys on both shards, replica and non-replica everywhere; read-only transactions in
   * every datacenter must see one tag across all keys they read. Writers overlap on the
   * same keys, so transactions are concurrently pending at the same servers.
   */
  @Test
  void readOnlyTransactionsNeverObservePartOfAWriteOnlyTransaction() throws Exception {
    List<String> keys = List.of(key("c", 0, VA, CA), key("c", 1, VA, CA), key("c", 0, SP, LDN),
        key("c", 1, SP, LDN), key("c", 0, TYO, SG), key("c", 1, TYO, SG));
    AtomicLong writes = new AtomicLong();
    AtomicLong reads = new AtomicLong();
    AtomicLong tagsSeen = new AtomicLong();
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
    java.util.Set<String> distinct = java.util.concurrent.ConcurrentHashMap.newKeySet();
    List<String> failures = runEverywhere(4_000, writers, stop, (c, f) -> {
      TestCluster.advance(c);
      List<String> subset = new ArrayList<>(keys);
      Collections.shuffle(subset);
      subset = subset.subList(0, 2 + (int) (reads.get() % 5));
      ReadResult r = c.readTxn(subset);
      reads.incrementAndGet();
      String first = str(r.rows().get(subset.get(0)));
      if (distinct.add(first)) {
        tagsSeen.incrementAndGet();
      }
      for (String k : subset) {
        if (!str(r.rows().get(k)).equals(first)) {
          f.add("dc " + c.dc() + " read a fractured transaction: " + tags(r));
          return;
        }
      }
    });
    assertEquals(List.of(), failures.subList(0, Math.min(5, failures.size())));
    assertTrue(writes.get() > 100, "enough write-only transactions: " + writes.get());
    assertTrue(reads.get() > 200, "enough read-only transactions: " + reads.get());
    assertTrue(tagsSeen.get() > 20, "readers saw many different transactions: " + tagsSeen.get());
  }

  static String tags(ReadResult r) {
    StringBuilder sb = new StringBuilder();
    r.rows().forEach((k, v) -> sb.append(k).append('=').append(str(v)).append(' '));
    return sb.toString();
  }

  /**
   * (d) A client in VA writes X then Y, over and over. Y replicates fast (replicas VA, CA)
   * while X's data takes a slowed path to its replicas (TYO, SG), so in most datacenters
   * Y's update arrives well before X's. A read-only transaction anywhere that returns
   * Y = i must return X >= i: the one-hop dependency check holds Y back.
   */
  @Test
  void aTransactionThatReturnsYAlsoReturnsTheXWrittenBeforeIt() throws Exception {
    String x = key("d-x", 0, TYO, SG);
    String y = key("d-y", 1, VA, CA);
    cluster.transport().links().setExtraDelayMs(VA, TYO, 60);
    cluster.transport().links().setExtraDelayMs(VA, SG, 60);
    KvClient writer = cluster.client(VA);
    AtomicBoolean stop = new AtomicBoolean();
    AtomicLong written = new AtomicLong();
    Thread w = new Thread(() -> {
      for (long i = 1; !stop.get(); i++) {
        writer.write(x, row(Long.toString(i)));
        writer.write(y, row(Long.toString(i)));
        written.set(i);
        TestCluster.sleep(2);
      }
    });
    AtomicLong checked = new AtomicLong();
    ConcurrentLinkedQueue<Long> gaps = new ConcurrentLinkedQueue<>();
    List<String> failures = runEverywhere(4_000, List.of(w), stop, (c, f) -> {
      TestCluster.advance(c);
      ReadResult r = c.readTxn(List.of(y, x));
      long yv = num(str(r.rows().get(y)));
      long xv = num(str(r.rows().get(x)));
      checked.incrementAndGet();
      if (yv > 0) {
        gaps.add(written.get() - yv);
      }
      if (xv < yv) {
        f.add("dc " + c.dc() + " read Y=" + yv + " but X=" + xv);
      }
    });
    assertEquals(List.of(), failures.subList(0, Math.min(5, failures.size())));
    assertTrue(checked.get() > 200, "enough read-only transactions: " + checked.get());
    assertTrue(written.get() > 50, "enough writes: " + written.get());
    assertTrue(gaps.stream().anyMatch(g -> g < written.get()), "readers saw Y advance");
  }

  static long num(String s) {
    return s.isEmpty() ? 0 : Long.parseLong(s);
  }
}
