package org.k2bench.core.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.testing.TestOptions;

/** A server's timers: on its own thread, never bunched by a busy server, all gone at close. */
class ServerActorTimersTest {
  Transport transport;
  Probe server;

  static final class Probe extends ServerActor {
    Probe(Transport transport) {
      super("probe", transport, 0, TestOptions.defaults(), key -> false);
      start();
    }

    @Override
    protected void handle(Incoming m) {}

    /** Runs {@code r} on the server thread, as a message would. */
    void onItsThread(Runnable r) {
      thread.execute(r);
    }
  }

  @BeforeEach
  void start() {
    transport = new Transport(FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000).withRttScale(0.1)));
    server = new Probe(transport);
  }

  @AfterEach
  void stop() {
    server.close();
    transport.close();
  }

  @Test
  void aTimerRunsOnTheServerThreadUntilCancelled() throws Exception {
    ConcurrentLinkedQueue<String> threads = new ConcurrentLinkedQueue<>();
    CountDownLatch ten = new CountDownLatch(10);
    ServerActor.Timer timer = server.every(5, TimeUnit.MILLISECONDS, () -> {
      threads.add(Thread.currentThread().getName());
      ten.countDown();
    });
    assertTrue(ten.await(10, TimeUnit.SECONDS), "ten runs of a 5 ms timer");
    assertTrue(threads.stream().allMatch(n -> n.equals("srv-0-probe")), "on the server's thread: " + threads);
    timer.cancel();
    Thread.sleep(20); // a run that was already executing may finish
    int before = drain(threads);
    Thread.sleep(50);
    assertEquals(0, drain(threads), "no run after cancel, not even one queued at that moment (" + before + " before)");
    assertEquals(1, server.pendingTimers(), "only the server's own tick is left");
  }

  @Test
  void aBusyServerGetsOneQueuedRunNotABacklog() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    server.every(1, TimeUnit.MILLISECONDS, runs::incrementAndGet);
    CompletableFuture<int[]> atMarker = new CompletableFuture<>();
    server.onItsThread(() -> {
      int before = runs.get();
      sleep(300); // some 300 periods pass while the thread is busy
      // Queued now: the one run the timer queued meanwhile, then this marker.
      server.onItsThread(() -> atMarker.complete(new int[] {before, runs.get()}));
    });
    int[] seen = atMarker.get(10, TimeUnit.SECONDS);
    assertEquals(seen[0] + 1, seen[1], "one run, not one per missed period");
  }

  @Test
  void closingCancelsEveryTimerAndNothingRunsAfterIt() throws Exception {
    AtomicInteger runs = new AtomicInteger();
    AtomicInteger late = new AtomicInteger();
    server.every(2, TimeUnit.MILLISECONDS, runs::incrementAndGet);
    CountDownLatch started = new CountDownLatch(1);
    server.every(1, TimeUnit.MILLISECONDS, started::countDown);
    assertTrue(started.await(10, TimeUnit.SECONDS));
    server.later(10_000, late::incrementAndGet);
    assertEquals(4, server.pendingTimers(), "the tick, two periodic timers and the one-shot");
    server.close();
    assertEquals(0, server.pendingTimers());
    Thread.sleep(20); // a run that was already executing at close may finish
    int atClose = runs.get();
    Thread.sleep(100);
    assertEquals(atClose, runs.get(), "no periodic run after close");
    assertEquals(0, late.get(), "a one-shot due after close never runs");
    assertThrows(IllegalArgumentException.class, () -> server.every(0, TimeUnit.MILLISECONDS, () -> { }));
  }

  private static int drain(ConcurrentLinkedQueue<String> q) {
    int n = 0;
    while (q.poll() != null) {
      n++;
    }
    return n;
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
