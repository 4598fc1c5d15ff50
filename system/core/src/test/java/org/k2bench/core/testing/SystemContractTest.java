package org.k2bench.core.testing;

import static org.k2bench.core.testing.Clusters.SP;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.topology.Placement;

/**
 * What every causally consistent bundled system guarantees, on any placement: no write
 * loses to a value it follows. Last-writer-wins by version resolves concurrent writes of a
 * key; a write that gets a lower version than a value it causally follows, or than one its
 * datacenter already showed when it began, or than the loaded data, never becomes the
 * key's value, and a later read returns the older value (data loss, and a causality
 * violation when the reader follows the write). Each test makes that interleaving possible
 * (the older value's writer has a clock far ahead of the new writer's, as a loader's or a
 * busy session's is) and asserts that every datacenter ends up reading the newer write.
 * A system's module runs them by extending this class ({@link TransactionContractTest}
 * adds the guarantees of systems with write-only transactions on the replica groups).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class SystemContractTest {
  /** How long a write may take to become visible everywhere (matrix / 10, plus completion). */
  private static final long VISIBLE_MS = 10_000;

  protected LocalCluster cluster;
  protected Placement placement;
  protected final List<String> used = new ArrayList<>();

  protected abstract StoreSystem system();

  /** The cluster the tests run on: two servers per datacenter on the replica groups, unless overridden. */
  protected LocalCluster startCluster() {
    return Clusters.start(system(), TestOptions.defaults());
  }

  @BeforeAll
  void start() {
    cluster = startCluster();
    placement = cluster.placement();
  }

  @AfterAll
  void stop() {
    cluster.close();
  }

  @AfterEach
  void healLinks() {
    cluster.transport().links().clearExtraDelays();
  }

  protected String key(String prefix, int shard, int... replicaDcs) {
    return Clusters.key(placement, prefix, shard, replicaDcs, used);
  }

  /** A fresh key, wherever the placement puts it. */
  protected String anyKey(String prefix) {
    return Clusters.key(prefix, k -> true, used);
  }

  protected interface DcBody {
    void run(KvClient client, List<String> failures);
  }

  /** Runs {@code body} in a loop in one session per datacenter, plus {@code extra} threads, for {@code ms}. */
  protected List<String> runEverywhere(long ms, List<Thread> extra, AtomicBoolean stop, DcBody body)
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
      t.join(20_000);
    }
    return failures;
  }

  static String tags(ReadResult r) {
    StringBuilder sb = new StringBuilder();
    r.rows().forEach((k, v) -> sb.append(k).append('=').append(str(v)).append(' '));
    return sb.toString();
  }

  static long num(String s) {
    return s.isEmpty() ? 0 : Long.parseLong(s);
  }

  /** {@code n} writes of keys of the session's own: its clock runs ahead, as a busy session's does. */
  private void busy(KvClient c, int n) {
    for (int i = 0; i < n; i++) {
      c.write("busy-" + c.id() + "-" + (i % 8), row("busy"));
    }
  }

  /** Every datacenter reads {@code expected} for {@code key} (a fresh reader session in each). */
  private void everywhere(String key, String expected) {
    for (int dc = 0; dc < 6; dc++) {
      Clusters.awaitValue(cluster.client(dc), key, expected, VISIBLE_MS);
    }
  }

  /**
   * The load: one session writes many keys before the run, so its clock is far ahead of a
   * session that starts afterwards. A session in each datacenter then writes one loaded key
   * as its very first operation, without reading it. The loaded data precedes every
   * operation of the run, so each of those writes must become the key's value everywhere;
   * a write stamped below the loaded version is lost.
   */
  @Test
  void aWriteOutranksTheLoadedValueOfItsKey() {
    KvClient loader = cluster.client(SP);
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      String k = anyKey("load");
      keys.add(k);
      loader.write(k, row("loaded"));
    }
    List<String> rewritten = keys.subList(keys.size() - 6, keys.size());
    rewritten.forEach(k -> everywhere(k, "loaded"));
    for (int dc = 0; dc < 6; dc++) {
      cluster.client(dc).write(rewritten.get(dc), row("run-" + dc));
    }
    for (int dc = 0; dc < 6; dc++) {
      everywhere(rewritten.get(dc), "run-" + dc);
    }
  }

  /**
   * A busy session in VA writes a key; once a datacenter reads it there, a fresh session of
   * that datacenter, which has read nothing, writes the key. The first value was visible at
   * the second writer's datacenter before the write began, so the write must outrank it.
   */
  @Test
  void aWriteOutranksWhatItsDatacenterShowedBeforeItBegan() {
    rewriteOnceRead("shown", false);
  }

  /**
   * A busy session in VA writes a key; a session elsewhere reads that value and then writes
   * the key: its write causally follows the first and must outrank it.
   */
  @Test
  void aWriteOutranksAValueItCausallyFollows() {
    rewriteOnceRead("follows", true);
  }

  /**
   * For each datacenter but VA: a busy VA session writes a fresh key, a session there reads
   * it, and the reader ({@code readerWrites}) or a fresh session of its datacenter writes it
   * again; every datacenter must end up reading the second write.
   */
  private void rewriteOnceRead(String prefix, boolean readerWrites) {
    KvClient first = cluster.client(VA);
    busy(first, 60);
    for (int dc = 1; dc < 6; dc++) {
      String k = anyKey(prefix);
      first.write(k, row("first"));
      KvClient reader = cluster.client(dc);
      Clusters.awaitValue(reader, k, "first", VISIBLE_MS);
      (readerWrites ? reader : cluster.client(dc)).write(k, row("second-" + dc));
      everywhere(k, "second-" + dc);
    }
  }
}
