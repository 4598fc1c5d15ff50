package org.k2bench.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.OperationFailedException;
import org.k2bench.core.api.ReadResult;
import org.k2bench.core.api.WriteResult;
import org.k2bench.core.data.Row;

/** Sessions driven together by one thread: one operation at a time each, all recorded, the end awaited. */
class SessionGroupTest {
  @TempDir
  Path dir;

  private final ScheduledExecutorService replies = Executors.newSingleThreadScheduledExecutor();
  /** Operations under way over all sessions, and the most at once. */
  private final AtomicInteger underWay = new AtomicInteger();
  private final AtomicInteger mostUnderWay = new AtomicInteger();
  private final Set<String> startingThreads = ConcurrentHashMap.newKeySet();
  private long stopNanos;

  @AfterEach
  void stop() {
    replies.shutdownNow();
  }

  /** A non-blocking client whose replies come 0-3 ms later on another thread; counts overlaps of its own operations. */
  class AsyncClient extends TxnWorkloadTest.FakeClient {
    final int id;
    final AtomicInteger mine = new AtomicInteger();
    final AtomicInteger overlaps = new AtomicInteger();
    final AtomicInteger started = new AtomicInteger();
    /** When the last operation started (System.nanoTime). */
    volatile long lastStart;
    final boolean failing;

    AsyncClient(int id, boolean failing) {
      this.id = id;
      this.failing = failing;
    }

    @Override
    public boolean nonBlocking() {
      return true;
    }

    private <T> CompletableFuture<T> later(java.util.function.Supplier<T> result) {
      startingThreads.add(Thread.currentThread().getName());
      started.incrementAndGet();
      lastStart = System.nanoTime();
      if (mine.incrementAndGet() > 1) {
        overlaps.incrementAndGet();
      }
      mostUnderWay.accumulateAndGet(underWay.incrementAndGet(), Math::max);
      CompletableFuture<T> f = new CompletableFuture<>();
      replies.schedule(() -> {
        mine.decrementAndGet();
        underWay.decrementAndGet();
        if (failing) {
          f.completeExceptionally(new OperationFailedException("server gone", null));
        } else {
          f.complete(result.get());
        }
      }, ThreadLocalRandom.current().nextInt(3_000), TimeUnit.MICROSECONDS);
      return f;
    }

    @Override
    public CompletableFuture<ReadResult> readTxnAsync(Collection<String> keys) {
      return later(() -> readTxn(keys));
    }

    @Override
    public CompletableFuture<WriteResult> writeTxnAsync(Map<String, Row> writes) {
      return later(() -> writeTxn(writes));
    }

    @Override
    public int id() {
      return id;
    }
  }

  private Properties props(int perThread) throws Exception {
    Properties p = new Properties();
    p.setProperty("k2bench.spec", org.k2bench.core.testing.SpecFixtures.write(dir,
        Map.of("workload.keys", 10_000, "workload.write_fraction", 0.2)).toString());
    p.setProperty("k2bench.sessions_per_thread", String.valueOf(perThread));
    p.setProperty("k2bench.history", dir.resolve("h.jsonl").toString());
    return p;
  }

  /** Runs {@code clients} as YCSB's threads do, for {@code ms}, through the workload's own state and stop. */
  private TxnWorkload run(Properties p, List<AsyncClient> clients, long ms, List<Long> memberEnds) throws Exception {
    TxnWorkload w = TxnWorkloadTest.workload(p);
    List<Thread> threads = new ArrayList<>();
    AtomicInteger failures = new AtomicInteger();
    for (int i = 0; i < clients.size(); i++) {
      int id = i;
      Thread t = new Thread(() -> {
        try {
          Object state = w.state(p, TxnWorkloadTest.session(clients.get(id), 0), id, clients.size());
          while (!w.isStopRequested()) {
            w.doTransaction(null, state);
          }
          if (id % Integer.parseInt(p.getProperty("k2bench.sessions_per_thread")) != 0) {
            synchronized (memberEnds) {
              memberEnds.add((long) underWay.get());
            }
          }
        } catch (RuntimeException e) {
          failures.incrementAndGet();
        }
      }, "client-" + i);
      threads.add(t);
      t.start();
    }
    Thread.sleep(ms);
    stopNanos = System.nanoTime();
    w.requestStop();
    for (Thread t : threads) {
      t.join(10_000);
      assertTrue(!t.isAlive(), t.getName() + " ended");
    }
    assertEquals(0, failures.get());
    w.cleanup();
    return w;
  }

  @Test
  void eachSessionHasOneOperationAtATimeAndEveryOneIsRecordedBeforeAnyThreadEnds() throws Exception {
    List<AsyncClient> clients = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      clients.add(new AsyncClient(5_000 + i, false));
    }
    List<Long> memberEnds = new ArrayList<>();
    run(props(8), clients, 600, memberEnds);

    int started = clients.stream().mapToInt(c -> c.started.get()).sum();
    assertTrue(started > 8 * 50, "the sessions ran: " + started + " operations");
    assertTrue(mostUnderWay.get() >= 6, "sessions overlapped: " + mostUnderWay.get() + " at once");
    assertEquals(0, clients.stream().mapToInt(c -> c.overlaps.get()).sum(), "no session had two operations at once");
    assertEquals(Set.of("client-0"), startingThreads, "the group's first thread starts every operation");
    List<String> history = Files.readAllLines(dir.resolve("h.jsonl"));
    assertEquals(started, history.stream().filter(l -> l.contains("\"ok\":true")).count(),
        "every operation started is in the history, the last ones too");
    assertEquals(7, memberEnds.size());
    assertTrue(memberEnds.stream().allMatch(n -> n == 0), "members end after the group's last operation: " + memberEnds);
  }

  @Test
  void aFailedOperationPausesItsSessionAsAThreadBacksOff() throws Exception {
    List<AsyncClient> clients = List.of(new AsyncClient(5_000, true), new AsyncClient(5_001, true));
    run(props(2), clients, 1_000, new ArrayList<>());
    for (AsyncClient c : clients) {
      // one at once, then one per 100 ms back-off and its 0-3 ms reply: 9-11 in a second
      int n = c.started.get();
      assertTrue(n >= 7 && n <= 12, "attempts in 1 s with a 100 ms back-off: " + n);
      // a pause that ends after the run's end starts nothing (the driver may be mid-issue at the stop)
      long late = (c.lastStart - stopNanos) / 1_000_000;
      assertTrue(late < 20, "an operation started " + late + " ms after the end");
    }
    List<String> history = Files.readAllLines(dir.resolve("h.jsonl"));
    assertTrue(history.size() >= 14 && history.stream().allMatch(l -> l.contains("server gone")),
        "failures are recorded with their error: " + history.size());
  }

  @Test
  void blockingClientsPacedRunsAndLoadsKeepAThreadPerSession() throws Exception {
    Properties p = props(4);
    TxnWorkload w = TxnWorkloadTest.workload(p);
    Session async = TxnWorkloadTest.session(new AsyncClient(5_000, false), 0);
    assertInstanceOf(SessionGroup.Member.class, w.state(p, async, 0, 4));
    Session blocking = TxnWorkloadTest.session(new TxnWorkloadTest.FakeClient(), 0);
    assertSame(blocking, w.state(p, blocking, 1, 4), "a client that blocks keeps its thread");
    p.setProperty("target", "100");
    assertSame(async, w.state(p, async, 2, 4), "a paced session keeps its thread");
    p.remove("target");
    p.setProperty("dotransactions", "false");
    assertSame(async, w.state(p, async, 3, 4), "a loader keeps its thread");
    p.setProperty("dotransactions", "true");
    p.setProperty("k2bench.sessions_per_thread", "1");
    assertSame(async, TxnWorkloadTest.workload(p).state(p, async, 0, 4), "1: a thread per session");
  }
}
