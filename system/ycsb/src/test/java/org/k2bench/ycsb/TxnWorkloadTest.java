package org.k2bench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.WriteResult;
import org.k2bench.core.data.Row;
import org.k2bench.core.testing.SpecFixtures;
import site.ycsb.WorkloadException;

class TxnWorkloadTest {
  @TempDir
  Path dir;

  /** Counts operations; reads take one wide-area round every third time. */
  static class FakeClient implements KvClient {
    final Map<String, Integer> ops = new HashMap<>();
    final AtomicInteger reads = new AtomicInteger();
    int lastKeys;

    @Override
    public ReadResult readTxn(Collection<String> keys) {
      ops.merge("rot", 1, Integer::sum);
      lastKeys = keys.size();
      Map<String, Row> rows = new LinkedHashMap<>();
      Map<String, Long> versions = new LinkedHashMap<>();
      Map<String, Double> stale = new LinkedHashMap<>();
      keys.forEach(k -> {
        rows.put(k, Row.getDefaultInstance());
        versions.put(k, 1L);
        stale.put(k, 2.5);
      });
      return new ReadResult(rows, versions, reads.incrementAndGet() % 3 == 0 ? 1 : 0, stale);
    }

    @Override
    public WriteResult writeTxn(Map<String, Row> writes) {
      ops.merge(writes.size() == 1 ? "write1" : "wot", 1, Integer::sum);
      lastKeys = writes.size();
      writes.values().forEach(r -> {
        assertEquals(5, r.getColumnsCount());
        assertEquals("field0", r.getColumns(0).getName());
        assertEquals(128, r.getColumns(0).getValue().size());
      });
      return new WriteResult(1, 0);
    }

    @Override
    public WriteResult write(String key, Row row) {
      ops.merge("write", 1, Integer::sum);
      return new WriteResult(1, 0);
    }

    /** Read-write transactions: reads as readTxn, writes counted at commit with version 7. */
    @Override
    public org.k2bench.core.api.ReadWriteTxn begin() {
      Map<String, Row> buffered = new LinkedHashMap<>();
      return new org.k2bench.core.api.ReadWriteTxn() {
        @Override
        public ReadResult read(Collection<String> keys) {
          assertTrue(buffered.isEmpty(), "the workload reads before it writes");
          ops.merge("rwt-read", 1, Integer::sum);
          rwReadKeys.add(keys.size());
          return readTxn(keys);
        }

        @Override
        public void write(Map<String, Row> writes) {
          buffered.putAll(writes);
        }

        @Override
        public WriteResult commit() {
          ops.merge("rwt", 1, Integer::sum);
          rwWriteKeys.add(buffered.size());
          return new WriteResult(7, 0);
        }
      };
    }

    final List<Integer> rwReadKeys = new java.util.ArrayList<>();
    final List<Integer> rwWriteKeys = new java.util.ArrayList<>();

    @Override
    public int id() {
      return 4096;
    }

    @Override
    public int dc() {
      return 0;
    }

    @Override
    public void close() {}
  }

  /** A client's properties: the fixture's spec over 10,000 keys with {@code workload} fields changed. */
  Properties props(double writeFraction, Object... workload) throws IOException {
    Map<String, Object> fields = new LinkedHashMap<>(Map.of("workload.keys", 10_000,
        "workload.write_fraction", writeFraction));
    for (int i = 0; i < workload.length; i += 2) {
      fields.put("workload." + workload[i], workload[i + 1]);
    }
    Properties p = new Properties();
    p.setProperty("k2bench.spec", SpecFixtures.write(dir, fields).toString());
    p.setProperty("k2bench.hlog", dir.resolve("c.hlog").toString());
    p.setProperty("k2bench.hlog_interval_ms", "50");
    return p;
  }

  /** A workload initialised as YCSB's Client does it. */
  static TxnWorkload workload(Properties p) throws WorkloadException {
    site.ycsb.measurements.Measurements.setProperties(p);
    TxnWorkload w = new TxnWorkload();
    w.init(p);
    return w;
  }

  /** A session of {@code client} with fixed seeds. */
  static Object session(KvClient client) {
    return session(client, 0);
  }

  /** A session whose datacenter's own popularity order is shifted by {@code shift} ids. */
  static Session session(KvClient client, long shift) {
    return new Session(client, org.apache.commons.rng.simple.RandomSource.XO_RO_SHI_RO_128_PP.create(1L),
        new KeySpace(10_000, 1.2).ranks(org.apache.commons.rng.simple.RandomSource.XO_RO_SHI_RO_128_PP.create(2L)),
        shift);
  }

  @Test
  void withLocalityEachDatacenterDrawsFromItsOwnHotSet() throws Exception {
    TxnWorkload w = workload(props(0, "locality", 1.0));
    Session home = session(new FakeClient(), 0);
    Session away = session(new FakeClient(), 5_000);
    for (int i = 0; i < 2_000; i++) { // the same draws, each moved by the datacenter's shift
      long a = Long.parseLong(w.chooseKeys(home, 1, 0).get(0).substring(4));
      long b = Long.parseLong(w.chooseKeys(away, 1, 0).get(0).substring(4));
      assertEquals((a + 5_000) % 10_000, b, "draw " + i);
    }
    w.cleanup();
    w = workload(props(0, "locality", 0.3));
    home = session(new FakeClient(), 0);
    away = session(new FakeClient(), 5_000);
    int moved = 0;
    for (int i = 0; i < 10_000; i++) { // the same rank and coin in both; only the away draw can move
      long a = Long.parseLong(w.chooseKeys(home, 1, 0).get(0).substring(4));
      long b = Long.parseLong(w.chooseKeys(away, 1, 0).get(0).substring(4));
      assertTrue(b == a || b == (a + 5_000) % 10_000, "draw " + i);
      moved += b == a ? 0 : 1;
    }
    w.cleanup();
    assertEquals(0.3, moved / 10_000.0, 0.02, "share of draws from the datacenter's own order");
  }

  @Test
  void anUnpacedThreadBacksOffAfterAFailureAndGoesOn() throws Exception {
    TxnWorkload w = workload(props(0.2));
    FakeClient dead = new FakeClient() {
      @Override
      public ReadResult readTxn(Collection<String> keys) {
        throw new IllegalStateException("connection to node 0 lost");
      }

      @Override
      public WriteResult writeTxn(Map<String, Row> writes) {
        throw new IllegalStateException("connection to node 0 lost");
      }

      @Override
      public WriteResult write(String key, Row row) {
        throw new IllegalStateException("connection to node 0 lost");
      }
    };
    Object s = session(dead);
    long t0 = System.nanoTime();
    for (int i = 0; i < 5; i++) {
      assertTrue(w.doTransaction(null, s), "the thread goes on");
    }
    double ms = (System.nanoTime() - t0) / 1e6;
    w.cleanup();
    // a failure that comes at once (a reset connection) must not become a spin
    assertTrue(ms >= 5 * TxnWorkload.FAILURE_BACKOFF_MS * 0.95, "backed off after each failure: " + ms + " ms");
    assertTrue(ms < 5 * TxnWorkload.FAILURE_BACKOFF_MS + 3_000, "once per failure: " + ms + " ms");
  }

  @Test
  void theMixFollowsTheConfiguredFractions() throws Exception {
    Properties p = props(0.2);
    TxnWorkload w = workload(p);
    FakeClient c = new FakeClient();
    Object s = session(c);
    int n = 20_000;
    for (int i = 0; i < n; i++) {
      assertTrue(w.doTransaction(null, s));
    }
    w.cleanup();
    assertEquals(0.8, c.ops.get("rot") / (double) n, 0.01, "read-only transactions");
    assertEquals(0.1, c.ops.get("wot") / (double) n, 0.01, "write-only transactions: half the writes");
    assertEquals(0.1, c.ops.get("write") / (double) n, 0.01, "single writes: the other half");

    Map<String, Long> counts = new HashMap<>();
    Map<String, Histogram> merged = new HashMap<>();
    HistogramLogReader r = new HistogramLogReader(dir.resolve("c.hlog").toFile());
    for (Histogram h; (h = (Histogram) r.nextIntervalHistogram()) != null; ) {
      counts.merge(h.getTag(), h.getTotalCount(), Long::sum);
      merged.computeIfAbsent(h.getTag(), t -> new Histogram(3)).add(h);
    }
    assertEquals(c.ops.get("rot").longValue(), counts.get("rot"), "every read-only transaction logged");
    assertEquals(c.ops.get("rot").longValue(), counts.get("rot_rounds"));
    assertEquals(5L * c.ops.get("rot"), counts.get("staleness"), "one staleness value per key read");
    assertEquals(2500, merged.get("staleness").getValueAtPercentile(50), 10, "microseconds");
    double remote = merged.get("rot_rounds").getCountAtValue(1) / (double) counts.get("rot");
    assertEquals(1 / 3.0, remote, 0.01, "wide-area rounds recorded per transaction");
    assertEquals(c.ops.get("wot").longValue(), counts.get("wot"));
    assertEquals(c.ops.get("write").longValue(), counts.get("write"));
  }

  @Test
  void readWriteTransactionsReadThenWriteAndReachTheHistory() throws Exception {
    // the PaRiS paper's 95:5 transactions: 19 reads, 1 write
    Properties p = props(0.0, "rw_fraction", 0.5, "keys_per_op", 20, "rw_writes", 1);
    p.setProperty("k2bench.history", dir.resolve("h.jsonl").toString());
    TxnWorkload w = workload(p);
    FakeClient c = new FakeClient();
    Object s = session(c);
    int n = 2_000;
    for (int i = 0; i < n; i++) {
      assertTrue(w.doTransaction(null, s));
    }
    w.cleanup();
    assertEquals(0.5, c.ops.get("rwt") / (double) n, 0.04, "half are read-write transactions");
    assertEquals(c.ops.get("rwt"), c.ops.get("rwt-read"), "each reads once, in parallel");
    assertTrue(c.rwReadKeys.stream().allMatch(k -> k == 19) && c.rwWriteKeys.stream().allMatch(k -> k == 1));
    List<String> rw = Files.readAllLines(dir.resolve("h.jsonl")).stream().filter(l -> l.contains("\"op\":\"rwt\""))
        .toList();
    assertEquals(c.ops.get("rwt").intValue(), rw.size(), "every one in the history");
    String line = rw.get(0);
    assertTrue(line.contains("\"ok\":true") && line.contains("\"r\":{") && line.contains("\"w\":{"), line);
    assertEquals(19, line.substring(line.indexOf("\"r\":{"), line.indexOf("}")).split(",").length, line);
    assertTrue(line.matches(".*\"w\":\\{\"[^\"]+\":7\\}.*"), "one write at the commit version: " + line);

    Map<String, Long> counts = new HashMap<>();
    HistogramLogReader r = new HistogramLogReader(dir.resolve("c.hlog").toFile());
    for (Histogram h; (h = (Histogram) r.nextIntervalHistogram()) != null; ) {
      counts.merge(h.getTag(), h.getTotalCount(), Long::sum);
    }
    assertEquals(c.ops.get("rwt").longValue(), counts.get("rwt"));
    assertEquals(c.ops.get("rwt").longValue(), counts.get("rwt_rounds"));
  }

  @Test
  void theFirstOperationAfterTheStartPrintsItsWallTimeOnce() throws Exception {
    Properties p = props(0.0);
    Path start = dir.resolve("start");
    Files.writeString(start, System.currentTimeMillis() + "\n");
    p.setProperty("k2bench.start_file", start.toString());
    TxnWorkload w = workload(p);
    Object s = session(new FakeClient());
    java.io.PrintStream out = System.out;
    java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
    long before = System.currentTimeMillis();
    System.setOut(new java.io.PrintStream(captured, true));
    try {
      for (int i = 0; i < 3; i++) {
        assertTrue(w.doTransaction(null, s));
      }
    } finally {
      System.setOut(out);
    }
    long after = System.currentTimeMillis();
    w.cleanup();
    List<String> lines = captured.toString().lines().filter(l -> l.startsWith(TxnWorkload.FIRST_OP_LINE)).toList();
    assertEquals(1, lines.size(), "once per process: " + captured);
    long at = Long.parseLong(lines.get(0).substring(TxnWorkload.FIRST_OP_LINE.length()));
    assertTrue(before <= at && at <= after, "the wall time of the first operation");
  }

  /** The distributions as the spec gives them: value -> probability, drawn in ascending order of value. */
  @Test
  void distributionsComeFromTheSpec() throws Exception {
    Properties p = props(0.0, "keys_per_op", Map.of("1", 0.5, "3", 0.5));
    TxnWorkload w = workload(p);
    FakeClient c = new FakeClient();
    Object s = session(c);
    Map<Integer, Integer> sizes = new HashMap<>();
    for (int i = 0; i < 4_000; i++) {
      w.doTransaction(null, s);
      sizes.merge(c.lastKeys, 1, Integer::sum);
    }
    w.cleanup();
    assertEquals(Set.of(1, 3), sizes.keySet());
    assertEquals(0.5, sizes.get(1) / 4_000.0, 0.03);
  }

  @Test
  void aBadSpecIsRunSpecsOneLineNamingTheField() throws Exception {
    Properties p = props(0.01);
    ObjectNode spec = SpecFixtures.defaultK2Tree();
    ((ObjectNode) spec.get("workload")).put("keys_per_op", "five");
    p.setProperty("k2bench.spec", SpecFixtures.write(dir, spec).toString());
    WorkloadException e = assertThrows(WorkloadException.class, () -> new TxnWorkload().init(p));
    assertTrue(e.getMessage().startsWith(dir.resolve("spec.json") + ": workload.keys_per_op: "), e.getMessage());
    assertEquals(1, e.getMessage().lines().count(), e.getMessage());
    p.remove("k2bench.spec");
    e = assertThrows(WorkloadException.class, () -> new TxnWorkload().init(p));
    assertEquals("k2bench.spec: missing; set it with -p k2bench.spec=...", e.getMessage());
  }
}
