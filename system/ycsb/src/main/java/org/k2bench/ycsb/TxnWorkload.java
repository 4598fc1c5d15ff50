package org.k2bench.ycsb;

import com.google.protobuf.ByteString;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.RejectionInversionZipfSampler;
import org.apache.commons.rng.simple.RandomSource;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.RunSpec;
import org.k2bench.core.api.WriteResult;
import org.k2bench.core.data.Column;
import org.k2bench.core.data.Row;
import org.k2bench.core.metrics.IntervalLog;
import org.k2bench.core.topology.ConfigException;
import site.ycsb.DB;
import site.ycsb.Workload;
import site.ycsb.WorkloadException;
import site.ycsb.generator.ScrambledZipfianGenerator;
import site.ycsb.measurements.Measurements;

/**
 * The transactional workload of the K2 paper (§VII-B) as a YCSB workload: each
 * operation is a read-only transaction of {@code keys_per_op} distinct Zipf-chosen keys, a
 * write-only transaction of as many keys, or a single write, in the configured mix. Rows
 * have {@code columns} columns of {@code value_bytes} random bytes. The load phase writes
 * every key of [insertstart, insertstart + insertcount) once; with
 * {@code k2bench.load_local=true} a loader writes only the keys whose first replica
 * datacenter (group 0) is its own, so every system loads with local writes when one
 * loader runs in each datacenter.
 *
 * <p>Latency is measured from YCSB's intended start time when a target rate paces the
 * threads (coordinated omission corrected), else from the actual start, and recorded with
 * the wide-area rounds and staleness of each read in an {@link IntervalLog} log.
 *
 * <p>With {@code k2bench.start_file}, the threads of every client process start together:
 * once all threads of a process are connected it prints {@value #READY_LINE}, and every
 * thread waits until the orchestrator writes the start time (epoch ms) into that file, so
 * JVM start-up never eats into the warm-up and every process measures the same window.
 * With {@code k2bench.run_s} the workload stops itself that many seconds after the start.
 * The first operation of the process prints {@value #FIRST_OP_LINE} and its wall time.
 *
 * <p>The workload is the trial's spec's ({@code k2bench.spec}, {@link RunSpec.Workload}; what
 * each field means: k2bench/spec/schema.py): keys, keys_per_op, columns, value_bytes, zipf,
 * write_fraction, wot_fraction (of writes), rw_fraction (the share of operations that are
 * interactive read-write transactions, for systems that have them: keys_per_op keys, the first
 * read in parallel and then the last rw_writes written, then commit), partitions_per_op (0:
 * keys by Zipf over the whole keyspace, the K2 paper's; n: the PaRiS paper's choice over n
 * partitions, {@link PartitionedKeys}) with local_fraction and multi_dc_partitions, locality
 * (0: every datacenter shares one popularity order; L: each key draw is, with probability L,
 * from the client's datacenter's own order, the global one shifted by {@code dc * (N / D)} ids,
 * so each datacenter has its own hot set, as in the traces of latency-aware replica placement;
 * {@code k2bench place}'s expected demand follows the same rule), key_distribution ({@code zipf}:
 * ranks from an exact Zipf over the keys, mapped by {@link KeySpace}'s permutation;
 * {@code ycsb_scrambled}: YCSB's own {@link ScrambledZipfianGenerator}, what its CoreWorkload
 * runs for requestdistribution=zipfian, only at its constant 0.99 and without locality or
 * partitions_per_op).
 *
 * <p>Properties, what is this process's own (besides YCSB's insertstart, insertcount, target):
 * {@code k2bench.hlog} (the log to write), {@code k2bench.hlog_interval_ms} (1000),
 * {@code k2bench.seed}, {@code k2bench.history}, {@code k2bench.load_local},
 * {@code k2bench.load_report}, {@code k2bench.start_file}, {@code k2bench.run_s},
 * {@code k2bench.sessions_per_thread} ({@link SessionGroup}).
 */
public final class TxnWorkload extends Workload {
  /** Printed on stdout once every thread of this process is ready to start. */
  public static final String READY_LINE = "k2bench: clients ready";
  /**
   * Printed on stdout, followed by the wall time in epoch ms, when this process issues its
   * first operation after the start barrier: the orchestrator holds it against the common
   * start time (a start file that arrived late, a host clock that is off).
   */
  public static final String FIRST_OP_LINE = "k2bench: first operation at ";

  private KeySpace keys;
  private double locality;
  private Discrete keysPerOp;
  private Discrete columns;
  private Discrete valueBytes;
  private double writeFraction;
  private double wotFraction;
  private double rwFraction;
  private int rwWrites;
  private double zipf;
  /** With key_distribution ycsb_scrambled: YCSB's generator over the key ids, shared by the threads. */
  private ScrambledZipfianGenerator scrambled;
  private int partitionsPerOp;
  private double localFraction;
  private PartitionedKeys.MultiDc multiDc;
  /** With partitions_per_op: the partitions' keys, built once the placement is known. */
  private volatile PartitionedKeys partitioned;
  private final Object partitionLock = new Object();
  private long seed;
  private IntervalLog recorder;
  private HistoryLog history;
  private AtomicLong nextLoad;
  private long loadEnd;
  private boolean loadLocal;
  private final AtomicLong loaded = new AtomicLong();
  private final AtomicLong loadFailures = new AtomicLong();
  private String loadReport;
  private Path startFile;
  private long runMs;
  private long startTimeoutMs;
  private final java.util.concurrent.atomic.AtomicInteger threadsReady =
      new java.util.concurrent.atomic.AtomicInteger();
  private volatile long endAtMs = Long.MAX_VALUE;
  private long startAtMs = -1;
  private final java.util.concurrent.atomic.AtomicBoolean firstOpSeen =
      new java.util.concurrent.atomic.AtomicBoolean();
  /** {@code k2bench.sessions_per_thread}: sessions one thread drives together ({@link SessionGroup}). */
  private int sessionsPerThread = 1;
  private final Map<Integer, SessionGroup> groups = new java.util.concurrent.ConcurrentHashMap<>();
  private final ThreadLocal<SessionGroup.Member> member = new ThreadLocal<>();

  @Override
  public void init(Properties p) throws WorkloadException {
    RunSpec spec;
    try {
      spec = K2BenchDB.spec(p);
      multiDc = PartitionedKeys.MultiDc.parse(spec.file() + ": workload.multi_dc_partitions",
          spec.workload().multiDcPartitions());
    } catch (ConfigException | IllegalArgumentException e) {
      throw new WorkloadException(e.getMessage());
    }
    // The harness checked these (ranges and combinations, k2bench/spec): taken as they are.
    RunSpec.Workload w = spec.workload();
    long n = w.keys();
    zipf = w.zipf();
    keys = new KeySpace(n, zipf);
    keysPerOp = Discrete.of(w.keysPerOp());
    columns = Discrete.of(w.columns());
    valueBytes = Discrete.of(w.valueBytes());
    writeFraction = w.writeFraction();
    wotFraction = w.wotFraction();
    rwFraction = w.rwFraction();
    rwWrites = w.rwWrites();
    partitionsPerOp = w.partitionsPerOp();
    localFraction = w.localFraction();
    locality = w.locality();
    // Thread-safe as YCSB's CoreWorkload shares it: its fields are set here, before the
    // threads start, and each draw takes ThreadLocalRandom's next double.
    scrambled = switch (w.keyDistribution()) {
      case "zipf" -> null;
      case "ycsb_scrambled" -> new ScrambledZipfianGenerator(0, n - 1);
      default -> throw new WorkloadException(spec.file() + ": workload.key_distribution: must be zipf "
          + "or ycsb_scrambled, got '" + w.keyDistribution() + "'; regenerate it with this launcher's harness");
    };
    seed = Props.longProp(p, "k2bench.seed", 42, Long.MIN_VALUE);
    long insertStart = Props.longProp(p, INSERT_START_PROPERTY, 0, 0);
    long insertCount = Props.longProp(p, INSERT_COUNT_PROPERTY, n - insertStart, 0);
    nextLoad = new AtomicLong(insertStart);
    loadEnd = Math.min(n, insertStart + insertCount);
    loadLocal = Boolean.parseBoolean(p.getProperty("k2bench.load_local", "false"));
    loadReport = p.getProperty("k2bench.load_report");
    String start = p.getProperty("k2bench.start_file");
    startFile = start == null ? null : Path.of(start);
    runMs = Math.round(1000 * Props.doubleProp(p, "k2bench.run_s", 0));
    startTimeoutMs = Props.longProp(p, "k2bench.start_timeout_ms", 600_000, 1);
    sessionsPerThread = (int) Math.min(Integer.MAX_VALUE, Props.longProp(p, "k2bench.sessions_per_thread", 1, 1));
    String historyPath = p.getProperty("k2bench.history");
    if (historyPath != null) {
      try {
        history = new HistoryLog(Path.of(historyPath));
      } catch (IOException e) {
        throw new WorkloadException("k2bench.history: cannot write " + historyPath + ": " + e.getMessage());
      }
    }
    String hlog = p.getProperty("k2bench.hlog");
    if (hlog != null) {
      try {
        IntervalLog log = new IntervalLog(Path.of(hlog), Props.longProp(p, "k2bench.hlog_interval_ms", 1000, 10));
        try {
          if (!K2BenchDB.colocated(p)) { // inside the servers' process their log has the lateness
            org.k2bench.core.metrics.ProcessMetrics.use(log); // the transport's lateness, too
          }
        } catch (IllegalStateException e) {
          log.close();
          throw new WorkloadException("k2bench.hlog: " + e.getMessage());
        }
        recorder = log;
      } catch (IOException e) {
        throw new WorkloadException("k2bench.hlog: cannot write " + hlog + ": " + e.getMessage());
      }
    }
  }

  @Override
  public Object initThread(Properties p, int threadId, int threadCount) throws WorkloadException {
    KvClient client = K2BenchDB.current();
    if (partitionsPerOp > 0 && partitioned == null) {
      // Not on this workload's monitor: awaitStart holds it while it waits for the start file,
      // and a thread waiting here would then never report ready.
      synchronized (partitionLock) {
        if (partitioned == null) {
          partitioned = new PartitionedKeys(K2BenchDB.placement(), client.dc(), keys.size(), zipf, partitionsPerOp,
              localFraction, multiDc);
        }
      }
    }
    UniformRandomProvider rng = RandomSource.XO_RO_SHI_RO_128_PP.create(seed * 1_000_003L + client.id());
    int dcs = K2BenchDB.placement().topology().numDcs();
    Session s = new Session(client, rng, keys.ranks(rng), client.dc() * (keys.size() / dcs));
    Object state = state(p, s, threadId, threadCount);
    if (startFile != null) {
      awaitStart(threadCount);
    } else if (runMs > 0) {
      synchronized (this) {
        if (endAtMs == Long.MAX_VALUE) {
          endAtMs = System.currentTimeMillis() + runMs;
        }
      }
    }
    return state;
  }

  /**
   * A thread's state for YCSB: its session, or its handle on the {@link SessionGroup} that
   * drives the session with those of the next threads (the group's first thread drives).
   */
  Object state(Properties p, Session s, int threadId, int threadCount) {
    String single = sessionsPerThread == 1 ? "" : SessionGroup.whyThreadPerSession(p, rwFraction, s.client);
    if (threadId == 0 && sessionsPerThread > 1) {
      System.out.println(single == null
          ? "k2bench: " + threadCount + " sessions, " + sessionsPerThread + " per driving thread"
          : "k2bench: a thread per session (k2bench.sessions_per_thread " + sessionsPerThread + " not used: "
              + single + ")");
    }
    if (single != null) {
      return s;
    }
    SessionGroup.Member m = groups.computeIfAbsent(threadId / sessionsPerThread, i -> new SessionGroup(this))
        .join(s, threadId % sessionsPerThread == 0);
    member.set(m);
    return m;
  }

  /**
   * The start barrier (see the class comment). Called by YCSB before a thread's first
   * operation and before it takes its pacing origin, so a paced thread does not try to
   * catch up on the time it waited.
   */
  private void awaitStart(int threadCount) throws WorkloadException {
    if (threadsReady.incrementAndGet() == threadCount) {
      System.out.println(READY_LINE);
      System.out.flush();
    }
    long t0 = startTime();
    long wait = t0 - System.currentTimeMillis();
    if (wait > 0) {
      try {
        Thread.sleep(wait);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new WorkloadException("interrupted while waiting for the start time");
      }
    }
  }

  /** The start time from the start file, read once per process; waits for the file to appear. */
  private synchronized long startTime() throws WorkloadException {
    if (startAtMs >= 0) {
      return startAtMs;
    }
    long deadline = System.currentTimeMillis() + startTimeoutMs;
    while (true) {
      try {
        String text = java.nio.file.Files.readString(startFile).trim();
        if (!text.isEmpty()) {
          startAtMs = Long.parseLong(text);
          break;
        }
      } catch (java.nio.file.NoSuchFileException e) {
        // not yet
      } catch (IOException | NumberFormatException e) {
        throw new WorkloadException("k2bench.start_file: cannot read a start time from " + startFile + ": " + e);
      }
      if (System.currentTimeMillis() > deadline) {
        throw new WorkloadException("k2bench.start_file: no start time in " + startFile + " after "
            + startTimeoutMs + " ms");
      }
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new WorkloadException("interrupted while waiting for " + startFile);
      }
    }
    if (recorder != null) {
      recorder.alignTo(startAtMs);
    }
    if (runMs > 0) {
      endAtMs = startAtMs + runMs;
    }
    return startAtMs;
  }

  /** Stops at the end of the run ({@code k2bench.run_s} after the start), or when YCSB asks. */
  @Override
  public boolean isStopRequested() {
    SessionGroup.Member m = member.get();
    return stopping() && (m == null || m.mayStop());
  }

  /** Whether the run is over (a grouped thread stops once its group has recorded everything). */
  boolean stopping() {
    return super.isStopRequested() || System.currentTimeMillis() >= endAtMs;
  }

  /** Milliseconds to the end of the run, or a second when the end is not set. */
  long msUntilEnd() {
    return endAtMs == Long.MAX_VALUE ? 1_000 : endAtMs - System.currentTimeMillis();
  }

  /** {@code count} distinct keys by Zipf rank (or YCSB's scrambled Zipfian), the last {@code writes} to be written. */
  List<String> chooseKeys(Session s, int count, int writes) {
    if (partitioned != null) {
      return partitioned.choose(s.rng, s.partitionRanks, count, writes);
    }
    Set<String> out = new LinkedHashSet<>();
    while (out.size() < count) {
      long id;
      if (scrambled != null) {
        // Unseeded: YCSB draws from its ThreadLocalRandom, so key sequences differ between runs.
        id = Math.floorMod(scrambled.nextValue(), keys.size()); // its hash is Math.abs: MIN_VALUE stays < 0
      } else {
        id = keys.idOfRank(s.ranks.sample());
      }
      if (locality > 0 && s.rng.nextDouble() < locality) {
        id = (id + s.localShift) % keys.size(); // the datacenter's own hot set
      }
      out.add(KeySpace.key(id));
    }
    return new ArrayList<>(out);
  }

  Row randomRow(UniformRandomProvider rng) {
    Row.Builder r = Row.newBuilder();
    int n = columns.sample(rng);
    for (int c = 0; c < n; c++) {
      byte[] b = new byte[valueBytes.sample(rng)];
      rng.nextBytes(b);
      r.addColumns(Column.newBuilder().setName("field" + c).setValue(ByteString.copyFrom(b)));
    }
    return r.build();
  }

  /**
   * Writes the next key of this loader's share (retrying a failed write twice); false
   * once the share is done, which ends the YCSB thread.
   */
  @Override
  public boolean doInsert(DB db, Object state) {
    Session s = (Session) state;
    org.k2bench.core.topology.Placement placement = loadLocal ? K2BenchDB.placement() : null;
    while (true) {
      long id = nextLoad.getAndIncrement();
      if (id >= loadEnd) {
        return false;
      }
      String key = KeySpace.key(id);
      if (placement != null && placement.replicaDcs(key)[0] != K2BenchDB.localDc()) {
        continue; // another datacenter's loader writes it locally
      }
      for (int attempt = 0; attempt < 3; attempt++) {
        long start = System.nanoTime();
        try {
          long version = s.client.write(key, randomRow(s.rng)).version();
          loaded.incrementAndGet();
          log(s, "load", start, System.nanoTime(), null, Map.of(key, version), -1, null);
          return true;
        } catch (RuntimeException e) {
          log(s, "load", start, System.nanoTime(), null, nullVersions(List.of(key)), -1,
              String.valueOf(e.getMessage()));
          if (attempt == 2) {
            loadFailures.incrementAndGet();
            return true; // counted; the report tells the orchestrator
          }
        }
      }
    }
  }

  @Override
  public boolean doTransaction(DB db, Object state) {
    if (state instanceof SessionGroup.Member m) {
      return m.step();
    }
    Session s = (Session) state;
    Op op = next(s);
    try {
      Object result = execute(s, op);
      completed(s, op, result, System.nanoTime());
    } catch (RuntimeException e) {
      failed(s, op, e, System.nanoTime());
      if (s.intendedNanos == 0) {
        // Unpaced, a thread whose server is dead would spin on failures that come at once
        // (a reset connection): back off as a driver does before it tries again.
        backOff();
      }
    }
    return true;
  }

  /**
   * One operation of a session: its kind (rot, rwt, wot, write), its keys and those it
   * writes, its start for latency (the intended one when paced) and its actual start.
   */
  record Op(String kind, List<String> keys, List<String> written, long start, long began) {}

  /** The session's next operation, drawn now (and the process's first-operation line). */
  Op next(Session s) {
    if (startFile != null && !firstOpSeen.get() && firstOpSeen.compareAndSet(false, true)) {
      long now = System.currentTimeMillis();
      System.out.println(FIRST_OP_LINE + now);
      System.out.flush();
    }
    long intended = Measurements.getMeasurements().getIntendedtartTimeNs();
    long start = intended > 0 ? intended : System.nanoTime();
    s.intendedNanos = Math.max(0, intended);
    String op;
    if (rwFraction > 0 && s.rng.nextDouble() < rwFraction) { // no draw without them: same streams as before
      op = "rwt";
    } else if (s.rng.nextDouble() < writeFraction) {
      op = s.rng.nextDouble() < wotFraction ? "wot" : "write";
    } else {
      op = "rot";
    }
    s.useServingClient();
    long began = System.nanoTime(); // the history's times are actual, not intended
    if (intended > 0) {
      // How late the operation started against the pacing schedule: a thread still busy
      // with earlier operations (a slow system, a saturated machine, a cold start) makes
      // the next ones queue, and their latency from the intended start includes that wait.
      record("schedule_lag", Math.max(0, began - intended) / 1000);
    }
    List<String> keys = chooseKeys(s, op.equals("write") ? 1 : keysPerOp.sample(s.rng),
        op.equals("rwt") ? rwWrites : 0);
    // The keys an operation writes: all but a read-only transaction's; a read-write
    // transaction's last rwWrites (it reads the others first).
    List<String> written = switch (op) {
      case "rot" -> List.of();
      case "rwt" -> keys.subList(keys.size() - rwWrites, keys.size());
      default -> keys;
    };
    return new Op(op, keys, written, start, began);
  }

  /** A read-write transaction's outcome: what it read, the version it wrote. */
  private record RwtResult(ReadResult read, long version) {}

  /** Runs {@code op} on the calling thread: a ReadResult, RwtResult or WriteResult. */
  private Object execute(Session s, Op op) {
    return switch (op.kind()) {
      case "rot" -> s.client.readTxn(op.keys());
      case "rwt" -> {
        org.k2bench.core.api.ReadWriteTxn txn = s.client.begin();
        ReadResult r = txn.read(op.keys().subList(0, op.keys().size() - rwWrites));
        txn.write(rows(s, op.written()));
        yield new RwtResult(r, txn.commit().version());
      }
      case "wot" -> s.client.writeTxn(rows(s, op.keys()));
      default -> s.client.write(op.keys().get(0), randomRow(s.rng));
    };
  }

  /** Starts {@code op} without blocking (a session of a {@link SessionGroup}; no rwt there). */
  java.util.concurrent.CompletableFuture<?> start(Session s, Op op) {
    return op.kind().equals("rot") ? s.client.readTxnAsync(op.keys()) : s.client.writeTxnAsync(rows(s, op.keys()));
  }

  private Map<String, Row> rows(Session s, List<String> keys) {
    Map<String, Row> writes = new LinkedHashMap<>();
    for (String k : keys) {
      writes.put(k, randomRow(s.rng));
    }
    return writes;
  }

  /**
   * Records and logs an operation that finished at {@code endNanos} (its last reply, not
   * when a driving thread got to it); {@code result} as {@link #execute} returns it.
   */
  void completed(Session s, Op op, Object result, long endNanos) {
    long latency = (endNanos - op.start()) / 1000;
    switch (op.kind()) {
      case "rot" -> {
        ReadResult r = (ReadResult) result;
        record("rot", latency);
        recordRead("rot", r);
        for (int i = 0; i < r.nonReplicaKeys(); i++) {
          record("cache_miss", i < r.remoteKeys() ? 1 : 0); // mean over a window = miss rate
        }
        log(s, "rot", op.began(), endNanos, r.versions(), null, r.wanRounds(), null);
      }
      case "rwt" -> {
        RwtResult r = (RwtResult) result;
        record("rwt", latency);
        recordRead("rwt", r.read()); // snapshot_lag: PaRiS, how far the UST lags
        log(s, "rwt", op.began(), endNanos, r.read().versions(), sameVersion(op.written(), r.version()),
            r.read().wanRounds(), null);
      }
      default -> {
        long version = ((WriteResult) result).version();
        record(op.kind(), latency);
        log(s, op.kind(), op.began(), endNanos, null, sameVersion(op.keys(), version), -1, null);
      }
    }
  }

  private void recordRead(String kind, ReadResult r) {
    record(kind + "_rounds", r.wanRounds());
    if (!Double.isNaN(r.snapshotLagMs())) {
      record("snapshot_lag", Math.round(r.snapshotLagMs() * 1000));
    }
    for (double ms : r.stalenessMs().values()) {
      record("staleness", Math.round(ms * 1000));
    }
  }

  /** Records and logs an operation that failed at {@code endNanos} (the thread or session goes on). */
  void failed(Session s, Op op, Throwable e, long endNanos) {
    record(op.kind() + "_error", (endNanos - op.start()) / 1000);
    log(s, op.kind(), op.began(), endNanos, null, op.written().isEmpty() ? null : nullVersions(op.written()), -1,
        String.valueOf(e.getMessage()));
  }

  /** How long an unpaced thread waits after a failed operation. */
  static final long FAILURE_BACKOFF_MS = 100;

  private static void backOff() {
    try {
      Thread.sleep(FAILURE_BACKOFF_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** One operation into the history, if one is being kept (k2bench.history). */
  private void log(Session s, String op, long startNanos, long endNanos, Map<String, Long> reads,
      Map<String, Long> writes, int rounds, String error) {
    if (history != null) {
      history.record(s.client.id(), s.nextOp++, op, startNanos, endNanos, reads, writes, rounds, error,
          s.intendedNanos);
    }
  }

  private static Map<String, Long> sameVersion(List<String> keys, long version) {
    Map<String, Long> m = new LinkedHashMap<>();
    keys.forEach(k -> m.put(k, version));
    return m;
  }

  /** The keys of a failed write: whether it committed, and at which version, is unknown. */
  private static Map<String, Long> nullVersions(List<String> keys) {
    Map<String, Long> m = new LinkedHashMap<>();
    keys.forEach(k -> m.put(k, null));
    return m;
  }

  private void record(String tag, long value) {
    if (recorder != null) {
      recorder.record(tag, value);
    }
  }

  @Override
  public void cleanup() throws WorkloadException {
    if (recorder != null) {
      org.k2bench.core.metrics.ProcessMetrics.release(recorder);
      recorder.close();
    }
    if (history != null) {
      try {
        history.close();
      } catch (IOException e) {
        throw new WorkloadException("k2bench.history: cannot finish " + e.getMessage());
      }
    }
    if (loadReport != null) {
      try {
        java.nio.file.Files.writeString(Path.of(loadReport),
            "{\"loaded\": " + loaded.get() + ", \"failed\": " + loadFailures.get() + "}\n");
      } catch (IOException e) {
        throw new WorkloadException("k2bench.load_report: cannot write " + loadReport + ": " + e.getMessage());
      }
    }
  }
}
