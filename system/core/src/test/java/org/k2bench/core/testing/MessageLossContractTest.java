package org.k2bench.core.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.k2bench.core.testing.Clusters.SG;
import static org.k2bench.core.testing.Clusters.TYO;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.Systems;
import org.k2bench.core.cluster.LocalCluster;

/**
 * What a system that accepts {@code drop} partitions ({@link StoreSystem#toleratesMessageLoss})
 * guarantees: a partition that drops every message between VA and TYO for ~3 s while
 * sessions write (single writes, write-only transactions where the system has them, and a
 * dependency chain: a session in SG reads VA's writes and writes after them), then heals;
 * within a deadline every write that succeeded is read in every datacenter and no
 * replication or commit state is left pending. A system that does not accept drop mode is
 * skipped here, and must say so where the orchestrator looks (it then refuses drop
 * partitions for it).
 */
public abstract class MessageLossContractTest {
  protected static final long FAILOVER_MS = 300;
  protected static final long RPC_TIMEOUT_MS = 2_000;
  protected static final long PARTITION_MS = 3_000;
  /** From the heal: every write visible everywhere and nothing pending by then. */
  protected static final long DEADLINE_MS = 30_000;
  private final java.util.concurrent.atomic.AtomicInteger nextKey = new java.util.concurrent.atomic.AtomicInteger();

  protected abstract StoreSystem system();

  protected ServerOptions options() {
    return TestOptions.defaults().withFailoverTimeoutMs(FAILOVER_MS).withRpcTimeoutMs(RPC_TIMEOUT_MS);
  }

  protected LocalCluster startCluster(ServerOptions options) {
    return Clusters.start(system(), options);
  }

  /** Waits until what {@code writer} wrote has left the session (Karma: its put queues drain); false if not by then. */
  protected boolean drain(KvClient writer, long ms) {
    return true;
  }

  /** The gauges that must be back to 0 in every datacenter (a gauge a system lacks counts as 0). */
  protected List<String> pendingGauges() {
    return List.of("pending_replicated_txns", "incoming_writes", "replicating", "waiting_remote_reads",
        "pending_client_txns", "waiting", "retransmit_pending", "pending_calls");
  }

  /**
   * A system that recovers from lost messages does, once a drop partition heals; one that
   * does not refuses drop mode, and so does its registered descriptor (what the orchestrator
   * reads: k2bench systems --json, message_loss). One test, not two that each skip half the
   * systems.
   */
  @Test
  void everyWriteReachesEveryDatacenterOnceADropPartitionHealsOrDropModeIsRefused() {
    StoreSystem registered = Systems.available().get(system().name());
    if (registered != null) {
      assertEquals(system().toleratesMessageLoss(), registered.toleratesMessageLoss(),
          "the registered " + system().name() + " says the same about drop mode");
    }
    if (system().toleratesMessageLoss()) {
      assertNull(afterADropPartition("loss", DEADLINE_MS));
    }
  }

  /**
   * The scenario; null if every recorded write was read in every datacenter and every
   * pending gauge was 0 within {@code deadlineMs} of the heal, else what was not.
   */
  protected String afterADropPartition(String prefix, long deadlineMs) {
    try (LocalCluster cluster = startCluster(options())) {
      return scenario(cluster, prefix, deadlineMs);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private String scenario(LocalCluster cluster, String prefix, long deadlineMs) throws InterruptedException {
    awaitStartUp(cluster, prefix);
    Map<String, String> written = new ConcurrentHashMap<>();
    AtomicBoolean stop = new AtomicBoolean();
    List<KvClient> writers = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    List<String> va = Collections.synchronizedList(new ArrayList<>());
    cluster.transport().links().partition(VA, TYO, Long.MAX_VALUE, true);
    long cut = System.currentTimeMillis();
    for (int dc : new int[] {VA, TYO}) {
      KvClient c = cluster.client(dc);
      writers.add(c);
      threads.add(new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          String v = prefix + "-" + dc + "-" + i;
          try {
            if (system().writeOnlyTransactions() && i % 4 == 3) {
              Map<String, org.k2bench.core.data.Row> w = new LinkedHashMap<>();
              for (int j = 0; j < 3; j++) {
                w.put(fresh(prefix + "-t" + dc), row(v));
              }
              c.writeTxn(w);
              w.keySet().forEach(k -> written.put(k, v));
            } else {
              String k = fresh(prefix + "-w" + dc);
              c.write(k, row(v));
              written.put(k, v);
              if (dc == VA) {
                va.add(k);
              }
            }
          } catch (RuntimeException e) {
            // not recorded: only writes that succeeded must show up
          }
          Clusters.sleep(10);
        }
      }, "writer-" + dc));
    }
    // The chain: SG reads a write of VA's and writes after it, so its write depends on one
    // TYO has lost (for K2: a key TYO replicates, whose dependency check waits there).
    KvClient sg = cluster.client(SG);
    writers.add(sg);
    threads.add(new Thread(() -> {
      for (int i = 0; !stop.get(); i++) {
        try {
          String read = null;
          synchronized (va) {
            if (!va.isEmpty()) {
              read = va.get(va.size() - 1);
            }
          }
          if (read != null) {
            Clusters.awaitValue(sg, read, written.get(read), 2_000);
            String k = fresh(prefix + "-dep");
            while (!contains(cluster.placement().replicaDcs(k), TYO)) {
              k = fresh(prefix + "-dep");
            }
            String v = prefix + "-dep-" + i;
            sg.write(k, row(v));
            written.put(k, v);
          }
        } catch (RuntimeException | AssertionError e) {
          // as above
        }
        Clusters.sleep(50);
      }
    }, "writer-sg"));
    threads.forEach(Thread::start);
    Clusters.sleep(Math.max(0, PARTITION_MS - (System.currentTimeMillis() - cut)));
    stop.set(true);
    for (Thread t : threads) {
      t.join(30_000);
    }
    cluster.transport().links().partition(VA, TYO, 0, false);
    long healed = System.currentTimeMillis();
    long deadline = healed + deadlineMs;
    System.out.printf("%s: %d writes recorded during a %d ms drop partition VA-TYO%n", system().name(),
        written.size(), PARTITION_MS);
    for (KvClient w : writers) {
      if (!drain(w, Math.max(1, deadline - System.currentTimeMillis()))) {
        return "session " + w.id() + " in dc " + w.dc() + " still holds writes " + deadlineMs + " ms after the heal";
      }
    }
    String missing = awaitEverywhere(cluster, written, deadline);
    String pending = awaitNothingPending(cluster, deadline);
    System.out.printf("%s: %d ms after the heal: %s; %s; retransmits %d, abandoned %d, commit_resends %d%n",
        system().name(), System.currentTimeMillis() - healed, missing == null ? "every write everywhere" : missing,
        pending == null ? "nothing pending" : pending, cluster.stat(-1, "retransmits"),
        cluster.stat(-1, "retransmits_abandoned"), cluster.stat(-1, "commit_resends"));
    if (missing != null || pending != null) {
      return (missing == null ? "" : missing + "; ") + (pending == null ? "" : pending);
    }
    if (cluster.stat(-1, "retransmits_abandoned") != 0) {
      return cluster.stat(-1, "retransmits_abandoned") + " retransmissions abandoned";
    }
    return null;
  }

  /** A key no one wrote yet. */
  private String fresh(String prefix) {
    return prefix + "-" + nextKey.incrementAndGet();
  }

  private static boolean contains(int[] a, int x) {
    for (int y : a) {
      if (y == x) {
        return true;
      }
    }
    return false;
  }

  /** Every server heard from every datacenter (where it counts), and a write reaches every datacenter. */
  private void awaitStartUp(LocalCluster cluster, String prefix) {
    long deadline = System.currentTimeMillis() + 20_000;
    while (cluster.stat(-1, "dcs_never_answered") != 0) {
      if (System.currentTimeMillis() > deadline) {
        throw new AssertionError("some server never heard from some datacenter");
      }
      Clusters.sleep(20);
    }
    KvClient c = cluster.client(VA);
    String k = fresh(prefix + "-start");
    c.write(k, row("start"));
    drain(c, 10_000);
    for (int dc = 0; dc < cluster.topology().numDcs(); dc++) {
      Clusters.awaitValue(cluster.client(dc), k, "start", 10_000);
    }
  }

  /** Null once a session in every datacenter reads every write's value; else what it did not read by the deadline. */
  private String awaitEverywhere(LocalCluster cluster, Map<String, String> written, long deadline) {
    StringBuilder out = new StringBuilder();
    for (int dc = 0; dc < cluster.topology().numDcs(); dc++) {
      KvClient reader = cluster.client(dc);
      List<String> left = new ArrayList<>(written.keySet());
      Collections.sort(left);
      // One pass at least: a datacenter checked after the deadline is still checked.
      for (boolean first = true; !left.isEmpty() && (first || System.currentTimeMillis() < deadline); first = false) {
        List<String> next = new ArrayList<>();
        for (int from = 0; from < left.size(); from += 25) {
          List<String> batch = left.subList(from, Math.min(left.size(), from + 25));
          try {
            Clusters.advance(reader);
            ReadResult r = reader.readTxn(batch);
            for (String k : batch) {
              if (!written.get(k).equals(str(r.rows().get(k)))) {
                next.add(k);
              }
            }
          } catch (RuntimeException e) {
            next.addAll(batch); // a read that failed: ask again
          }
        }
        left = next;
        if (!left.isEmpty()) {
          Clusters.sleep(100);
        }
      }
      if (!left.isEmpty()) {
        out.append(cluster.topology().dcName(dc)).append(" misses ").append(left.size()).append(" of ")
            .append(written.size()).append(" writes (e.g. ").append(left.get(0)).append(") ");
      }
    }
    return out.length() == 0 ? null : out.toString().trim();
  }

  /** Null once every pending gauge is 0 in every datacenter; else the last values seen at the deadline. */
  private String awaitNothingPending(LocalCluster cluster, long deadline) {
    while (true) {
      StringBuilder out = new StringBuilder();
      for (int dc = 0; dc < cluster.topology().numDcs(); dc++) {
        for (String g : pendingGauges()) {
          long n = cluster.stat(dc, g);
          if (n != 0) {
            out.append(cluster.topology().dcName(dc)).append(' ').append(g).append('=').append(n).append(' ');
          }
        }
      }
      if (out.length() == 0) {
        return null;
      }
      if (System.currentTimeMillis() >= deadline) {
        return "pending: " + out.toString().trim();
      }
      Clusters.sleep(200);
    }
  }
}
