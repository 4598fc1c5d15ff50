package org.k2bench.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.google.protobuf.Any;
import com.google.protobuf.UInt64Value;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.metrics.ProcessMetrics;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.transport.proto.Envelope;

/**
 * The receiver's delay line: a message is due at send time + link delay when the
 * sender shares this machine's clock, so time spent in transit is absorbed instead of added;
 * at arrival + delay otherwise; and never before an earlier message of its channel.
 */
@Tag("alone") // bounds on timing from above: run with no other test class beside it (system/pom.xml)
class InChannelTest {
  private static final long MS = 1_000_000L;
  /** The lateness of a WAN message its server's own thread held (InChannel#recordDelivery). */
  private static final String WAN_LATENESS = "lateness:wan:timer";

  private record Delivery(long value, long atNanos) {}

  /** From server 1 in CA to a client in VA: one-way RTT(VA, CA) / 2. */
  private static Envelope env(long value, long sentNanos, long clockDomain) {
    return env(value, sentNanos, clockDomain, 1);
  }

  /** The same envelope on the link from datacenter {@code fromDc}, whose delay it then takes. */
  private static Envelope env(long value, long sentNanos, long clockDomain, int fromDc) {
    return Envelope.newBuilder().setFrom(1).setFromDc(fromDc).setTo(60_000).setSeq(value)
        .setPayload(Any.pack(UInt64Value.of(value))).setSentNanos(sentNanos).setClockDomain(clockDomain).build();
  }

  /** A metrics sink, in use until released, handing {@code into} what {@code wanted}'s tags record. */
  private static ProcessMetrics.Sink listen(java.util.function.Predicate<String> wanted,
      java.util.function.ObjLongConsumer<String> into) {
    ProcessMetrics.Sink sink = (tag, v) -> {
      if (wanted.test(tag)) {
        into.accept(tag, v);
      }
    };
    ProcessMetrics.use(sink);
    return sink;
  }

  private static void awaitCount(List<?> l, int n) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (l.size() < n && System.nanoTime() < end) {
      Thread.sleep(1);
    }
    assertEquals(n, l.size(), "deliveries");
  }

  @Test
  void delayCountsFromTheSendTimeOnOneClockAndFromArrivalAcrossClocks() throws Exception {
    Topology t = EmulationTest.scaledPaperTopology(0).withRttScale(10); // the paper's matrix
    // The farthest datacenter from VA: the two rules' due times lie 80 ms apart, so a
    // scheduling pause of tens of ms on a busy host cannot make one look like the other.
    int far = 1;
    for (int dc = 1; dc < t.numDcs(); dc++) {
      far = t.rttMs(0, dc) > t.rttMs(0, far) ? dc : far;
    }
    long oneWay = Math.round(t.rttMs(0, far) / 2 * MS);
    long transit = 80 * MS;
    assertTrue(oneWay > transit + 10 * MS, "the farthest link is longer than the transit we fake");
    long slack = transit / 2; // lateness allowed before a release is taken for the other rule's
    try (Transport transport = new Transport(t)) {
      List<Delivery> got = new CopyOnWriteArrayList<>();
      Endpoint node = transport.openClient(60_000, 0, Runnable::run,
          m -> got.add(new Delivery(m.as(UInt64Value.class).getValue(), System.nanoTime())));
      InChannel same = new InChannel(transport, node);
      InChannel other = new InChannel(transport, node);

      // Sent 80 ms ago on this clock (a slow transit): due one-way - 80 ms from now, not one-way.
      long arrive = System.nanoTime();
      same.arrive(env(1, arrive - transit, ClockDomain.ID, far));
      // The same stamp from another machine's clock means nothing here: due one-way from arrival.
      other.arrive(env(2, arrive - transit, ClockDomain.ID + 1, far));
      awaitCount(got, 2);
      long first = got.get(0).atNanos - arrive;
      long second = got.get(1).atNanos - arrive;
      assertEquals(1, got.get(0).value);
      assertTrue(first >= oneWay - transit && first < oneWay - transit + slack,
          "same clock: released at send time + delay (" + (oneWay - transit) / 1e6 + " ms), got "
              + first / 1e6 + " ms after arrival");
      assertTrue(second >= oneWay && second < oneWay + slack,
          "other clock: released at arrival + delay (" + oneWay / 1e6 + " ms), got " + second / 1e6
              + " ms after arrival");
    }
  }

  @Test
  void aMessageAlreadyDueIsDeliveredAtOnceButNeverBeforeAnEarlierOneOfItsChannel() throws Exception {
    // The paper's matrix (30 ms one way here): with the scaled one (3 ms) a cold JVM could
    // reach the check after message 2 was due, and find messages 2 and 3 delivered.
    Topology t = EmulationTest.scaledPaperTopology(0).withRttScale(10);
    long oneWay = Math.round(t.rttMs(0, 1) / 2 * MS);
    try (Transport transport = new Transport(t)) {
      List<Delivery> got = new CopyOnWriteArrayList<>();
      Endpoint node = transport.openClient(60_000, 0, Runnable::run,
          m -> got.add(new Delivery(m.as(UInt64Value.class).getValue(), System.nanoTime())));
      InChannel ch = new InChannel(transport, node);

      long now = System.nanoTime();
      ch.arrive(env(1, now - oneWay - MS, ClockDomain.ID)); // transit took longer than the link
      assertEquals(1, got.size(), "overdue and nothing queued: delivered inside arrive()");

      ch.arrive(env(2, System.nanoTime(), ClockDomain.ID)); // due in one delay
      ch.arrive(env(3, 0, ClockDomain.ID)); // long overdue, but behind message 2
      assertEquals(1, got.size(), "message 3 waits for message 2");
      awaitCount(got, 3);
      assertEquals(List.of(1L, 2L, 3L), got.stream().map(Delivery::value).toList(), "FIFO");
      assertTrue(got.get(2).atNanos >= got.get(1).atNanos);
    }
  }

  /** An executor of its own thread that notes which thread handed it each task. */
  private static final class NotingExecutor extends java.util.concurrent.ThreadPoolExecutor {
    final List<String> callers = new CopyOnWriteArrayList<>();

    NotingExecutor() {
      super(1, 1, 0, TimeUnit.MILLISECONDS, new java.util.concurrent.LinkedBlockingQueue<>());
    }

    @Override
    public void execute(Runnable task) {
      callers.add(Thread.currentThread().getName());
      super.execute(task);
    }
  }

  @Test
  void inProcessADueMessageForAServerThreadIsQueuedThereBySenderButNeverOvertakes() throws Exception {
    Topology t = EmulationTest.scaledPaperTopology(0);
    try (Transport transport = new Transport(t)) {
      NotingExecutor inbox = new NotingExecutor();
      List<Long> got = new CopyOnWriteArrayList<>();
      Endpoint server = new Endpoint(transport, 0, 0, inbox, m -> got.add(m.as(UInt64Value.class).getValue()));
      InChannel ch = new InChannel(transport, server, true);
      String me = Thread.currentThread().getName();

      ch.arrive(env(1, System.nanoTime(), ClockDomain.ID)); // due in one CA->VA delay
      ch.arrive(env(2, 0, ClockDomain.ID)); // long overdue, but behind message 1: waits for it
      awaitCount(got, 2);
      ch.arrive(env(3, 0, ClockDomain.ID)); // overdue, nothing queued: handed over here
      awaitCount(got, 3);
      assertEquals(List.of(1L, 2L, 3L), got, "FIFO");
      assertTrue(!inbox.callers.get(0).equals(me) && !inbox.callers.get(1).equals(me),
          "the dispatcher released 1 and 2 (2 was not handed over ahead of 1): " + inbox.callers);
      assertEquals(me, inbox.callers.get(2), "3 was queued by its sender, with no dispatcher wake-up");
      inbox.shutdownNow();
    }
  }

  /** A server's timed inbox that notes which thread handed it each task, and how. */
  private static final class NotingTimedInbox extends TimedInbox {
    final List<String> callers = new CopyOnWriteArrayList<>();

    NotingTimedInbox() {
      super(r -> new Thread(r, "srv-timed"));
    }

    @Override
    public java.util.concurrent.ScheduledFuture<?> schedule(Runnable task, long delay, TimeUnit unit) {
      callers.add(Thread.currentThread().getName());
      return super.schedule(task, delay, unit);
    }

    @Override
    public void execute(Runnable task) {
      callers.add(Thread.currentThread().getName()); // super.execute calls schedule: noted once more
      super.execute(task);
    }
  }

  @Test
  void aServersTimedInboxHoldsItsDelayedMessagesItselfInOrderAndOnTime() throws Exception {
    Topology t = EmulationTest.scaledPaperTopology(0).withRttScale(10);
    long oneWay = Math.round(t.rttMs(0, 1) / 2 * MS);
    try (Transport transport = new Transport(t)) {
      NotingTimedInbox inbox = new NotingTimedInbox();
      List<Delivery> got = new CopyOnWriteArrayList<>();
      List<String> threads = new CopyOnWriteArrayList<>();
      Endpoint server = new Endpoint(transport, 0, 0, inbox, m -> {
        got.add(new Delivery(m.as(UInt64Value.class).getValue(), System.nanoTime()));
        threads.add(Thread.currentThread().getName());
      });
      InChannel ch = new InChannel(transport, server);
      String me = Thread.currentThread().getName();

      long sent = System.nanoTime();
      ch.arrive(env(1, sent, ClockDomain.ID)); // due in one CA->VA delay
      for (int v = 2; v <= 21; v++) {
        ch.arrive(env(v, 0, ClockDomain.ID)); // long overdue, but behind message 1: all due with it
      }
      awaitCount(got, 21);
      ch.arrive(env(22, 0, ClockDomain.ID)); // overdue, nothing queued: straight to the inbox
      awaitCount(got, 22);
      assertEquals(java.util.stream.LongStream.rangeClosed(1, 22).boxed().toList(),
          got.stream().map(Delivery::value).toList(), "FIFO, also among messages due at one nanosecond");
      assertEquals(java.util.Collections.nCopies(22, "srv-timed"), threads);
      assertTrue(inbox.callers.stream().allMatch(me::equals),
          "every message went from its arrival straight into the inbox, no dispatcher between: " + inbox.callers);
      long first = got.get(0).atNanos - sent;
      assertTrue(first >= oneWay && first < oneWay + 20 * MS,
          "held until due (" + oneWay / 1e6 + " ms), got " + first / 1e6 + " ms");
      inbox.shutdownNow();
    }
  }

  @Test
  void aTimedInboxThatIdledAtTheDueTimeOwesTheWholeWaitEvenBehindALaterTask() throws Exception {
    TimedInbox inbox = new TimedInbox(r -> new Thread(r, "srv-timed"));
    try {
      inbox.afterExecute(null, null); // the thread's last task ended; it idles
      Thread.sleep(2);
      long due = System.nanoTime();
      Thread.sleep(3); // idle past the due time (waiting for a CPU, say)
      inbox.beforeExecute(null, null); // then another task runs first,
      inbox.afterExecute(null, null);
      inbox.beforeExecute(null, null); // and the due message right after it
      long start = System.nanoTime();
      assertTrue(inbox.lateNanos(due, start) >= 3 * MS, "late by the idle wait, counted "
          + inbox.lateNanos(due, start) / 1e6 + " ms");

      inbox.beforeExecute(null, null);
      Thread.sleep(2); // a task already running at the due time
      due = System.nanoTime();
      Thread.sleep(3);
      inbox.afterExecute(null, null);
      inbox.beforeExecute(null, null);
      start = System.nanoTime();
      long late = inbox.lateNanos(due, start);
      assertTrue(late >= 0 && late < MS, "busy at the due time: not late by that, counted " + late / 1e6 + " ms");
    } finally {
      inbox.shutdownNow();
    }
  }

  @Test
  void aTimedInboxCountsAsLateOnlyWhatItsTimerLostNotItsOwnQueue() throws Exception {
    Topology t = EmulationTest.scaledPaperTopology(0).withRttScale(10);
    long oneWay = Math.round(t.rttMs(0, 1) / 2 * MS);
    List<Long> lateUs = new CopyOnWriteArrayList<>();
    ProcessMetrics.Sink sink = listen(tag -> tag.equals(WAN_LATENESS), (tag, v) -> lateUs.add(v));
    try (Transport transport = new Transport(t)) {
      TimedInbox inbox = new TimedInbox(r -> new Thread(r, "srv-timed"));
      List<Delivery> got = new CopyOnWriteArrayList<>();
      Endpoint server = new Endpoint(transport, 0, 0, inbox,
          m -> got.add(new Delivery(m.as(UInt64Value.class).getValue(), System.nanoTime())));
      InChannel ch = new InChannel(transport, server);

      long sent = System.nanoTime();
      ch.arrive(env(1, sent, ClockDomain.ID));
      long busyMs = oneWay / MS + 40; // the server's own work runs 40 ms past message 1's due time
      inbox.execute(() -> {
        try {
          Thread.sleep(busyMs);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      awaitCount(got, 1);
      assertTrue(got.get(0).atNanos - sent >= busyMs * MS, "message 1 waited for the server's work");
      long waitedUs = (got.get(0).atNanos - sent - oneWay) / 1000;
      assertTrue(lateUs.get(0) < 10_000 && lateUs.get(0) < waitedUs - 25_000,
          "its " + waitedUs + " us behind the server's work are not the emulation's error, counted " + lateUs.get(0));

      sent = System.nanoTime(); // an idle server: its timer's own error, a small one
      ch.arrive(env(2, sent, ClockDomain.ID));
      awaitCount(got, 2);
      long took = got.get(1).atNanos - sent;
      assertTrue(took >= oneWay, "not before due");
      assertEquals(2, lateUs.size());
      assertTrue(lateUs.get(1) <= (took - oneWay) / 1000 + 1 && lateUs.get(1) < 10_000,
          "idle: late by its wake-up only, counted " + lateUs.get(1) + " us of " + (took - oneWay) / 1000);
      inbox.shutdownNow();
    } finally {
      ProcessMetrics.release(sink);
    }
  }

  /** Two servers of VA on timed inboxes that answer every request with its value, and a client there. */
  private static final class Replying implements AutoCloseable {
    final Transport transport = new Transport(FreePorts.assign(TopologyLoader.paperDefault(2, 2, 7000).withRttScale(0.1)));
    final TimedInbox[] inboxes = new TimedInbox[2];
    final Endpoint client;
    /** Open unless a test closes it: the servers answer only once it opens. */
    final java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);

    Replying(boolean gated) {
      if (!gated) {
        gate.countDown();
      }
      for (int s = 0; s < 2; s++) {
        String name = "srv-" + s;
        inboxes[s] = new TimedInbox(r -> {
          Thread t = new Thread(r, name);
          t.setDaemon(true);
          return t;
        });
        transport.openServer(s, inboxes[s], m -> {
          try {
            gate.await();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          m.reply(m.as(UInt64Value.class));
        });
      }
      client = transport.openClient(60_000, 0, Runnable::run, m -> { });
    }

    @Override
    public void close() {
      transport.close();
      for (TimedInbox i : inboxes) {
        i.shutdownNow();
      }
    }
  }

  @Test
  void inProcessAReplyCompletesItsClientsCallOnTheServersThread() throws Exception {
    try (Replying r = new Replying(true)) {
      // the server answers once the callback is attached, so the answer cannot complete the
      // call on this thread before
      var thread = r.client.call(0, UInt64Value.of(1)).thenApply(reply -> Thread.currentThread().getName());
      r.gate.countDown();
      assertEquals("srv-0", thread.get(5, TimeUnit.SECONDS), "completed where the reply was sent, no dispatcher wake-up between");
    }
  }

  @Test
  void inProcessCallsChainedOnCompletionsThatRunOnServerThreadsAllFinishBesidePings() throws Exception {
    // Each completion runs on the replying server's thread, holding its channel to the
    // client, and sends the next request back to that server. Meanwhile the client pings
    // both servers, released by the dispatchers: a ping answered under its channel's lock
    // would wait for the channel back to the client, which the completing server holds
    // while its callback waits for the ping's channel. Each callback first works 50 us, so
    // that overlap comes often.
    Replying r = new Replying(false);
    int chains = 4;
    int calls = 3_000;
    java.util.concurrent.atomic.AtomicBoolean chaining = new java.util.concurrent.atomic.AtomicBoolean(true);
    java.util.concurrent.atomic.AtomicLong pongs = new java.util.concurrent.atomic.AtomicLong();
    java.util.concurrent.Semaphore inFlight = new java.util.concurrent.Semaphore(16);
    Thread pinger = new Thread(() -> {
      for (int i = 0; chaining.get(); i++) {
        try {
          if (!inFlight.tryAcquire(20, TimeUnit.SECONDS)) {
            return; // pongs stopped coming: asserted below
          }
        } catch (InterruptedException e) {
          return;
        }
        r.client.ping(i % 2, 0).whenComplete((rtt, e) -> {
          pongs.incrementAndGet();
          inFlight.release();
        });
      }
    }, "pinger");
    pinger.setDaemon(true);
    pinger.start();
    List<java.util.concurrent.CompletableFuture<Integer>> done = new ArrayList<>();
    for (int c = 0; c < chains; c++) {
      done.add(new java.util.concurrent.CompletableFuture<>());
    }
    Thread starter = new Thread(() -> {
      for (int c = 0; c < chains; c++) {
        chain(r.client, c % 2, 0, calls, done.get(c));
      }
    }, "starter"); // a deadlocked send would hold it, not the test
    starter.setDaemon(true);
    starter.start();
    var all = java.util.concurrent.CompletableFuture.allOf(done.toArray(java.util.concurrent.CompletableFuture[]::new));
    var threads = java.lang.management.ManagementFactory.getThreadMXBean();
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (!all.isDone() && System.nanoTime() < end) {
      long[] stuck = threads.findMonitorDeadlockedThreads();
      if (stuck != null) { // not closed: closing would wait on the same monitors
        fail("deadlocked: " + java.util.Arrays.stream(threads.getThreadInfo(stuck)).map(i -> i.getThreadName()
            + " waits for " + i.getLockName() + " held by " + i.getLockOwnerName()).toList());
      }
      Thread.sleep(20);
    }
    chaining.set(false);
    for (var f : done) {
      assertEquals(calls, f.get(1, TimeUnit.SECONDS), "every call of the chain answered, in turn");
    }
    pinger.join(30_000);
    assertTrue(!pinger.isAlive() && pongs.get() > 100, "the pings were answered throughout: " + pongs.get());
    r.close();
  }

  private static void chain(Endpoint client, int server, int n, int calls,
      java.util.concurrent.CompletableFuture<Integer> end) {
    client.call(server, UInt64Value.of(n)).whenComplete((reply, e) -> {
      long until = System.nanoTime() + 50_000;
      while (System.nanoTime() < until) {
        Thread.onSpinWait();
      }
      if (e != null) {
        end.completeExceptionally(e);
      } else if (n + 1 == calls) {
        end.complete(calls);
      } else {
        chain(client, server, n + 1, calls, end);
      }
    });
  }

  @Test
  void inProcessANonReplyToANodeWhoseInboxRunsOnTheCallerIsReleasedByTheDispatcher() throws Exception {
    Topology t = EmulationTest.scaledPaperTopology(0);
    try (Transport transport = new Transport(t)) {
      List<String> threads = new CopyOnWriteArrayList<>();
      Endpoint client = new Endpoint(transport, 60_000, 0, Runnable::run,
          m -> threads.add(Thread.currentThread().getName()));
      InChannel ch = new InChannel(transport, client, true);
      ch.arrive(env(1, 0, ClockDomain.ID)); // overdue
      awaitCount(threads, 1);
      assertTrue(!threads.get(0).equals(Thread.currentThread().getName()),
          "not run on the sender's thread, under its channel's lock: " + threads);
    }
  }

  @Test
  void eachDeliveryIsRecordedByItsClassAndThePathThatMadeIt() throws Exception {
    Topology t = EmulationTest.scaledPaperTopology(0).withRttScale(10);
    long oneWay = Math.round(t.rttMs(0, 1) / 2 * MS);
    List<String> tags = new CopyOnWriteArrayList<>();
    ProcessMetrics.Sink sink = listen(tag -> tag.startsWith("lateness:"), (tag, v) -> tags.add(tag));
    TimedInbox inbox = new TimedInbox(r -> new Thread(r, "srv-timed"));
    try (Transport transport = new Transport(t)) {
      List<Long> got = new CopyOnWriteArrayList<>();
      Endpoint client = transport.openClient(60_000, 0, Runnable::run,
          m -> got.add(m.as(UInt64Value.class).getValue()));
      InChannel toClient = new InChannel(transport, client);
      toClient.arrive(env(1, System.nanoTime() - oneWay - MS, ClockDomain.ID)); // due already, nothing queued
      toClient.arrive(env(2, System.nanoTime(), ClockDomain.ID)); // held until due by a dispatcher
      awaitCount(got, 2);
      Endpoint server = new Endpoint(transport, 0, 0, inbox, m -> got.add(m.as(UInt64Value.class).getValue()));
      new InChannel(transport, server).arrive(env(3, System.nanoTime(), ClockDomain.ID)); // by its own thread
      awaitCount(got, 3);
      toClient.arrive(env(4, System.nanoTime(), ClockDomain.ID, 0)); // inside the datacenter: due now
      awaitCount(got, 4);
      assertEquals(List.of("lateness:wan:arrival", "lateness:wan:dispatcher", "lateness:wan:timer",
          "lateness:local:arrival"), tags, "one lateness per delivery, by class and path");
    } finally {
      inbox.shutdownNow();
      ProcessMetrics.release(sink);
    }
  }

  @Test
  void aMessageAFaultHeldBackIsLateApartAndSoIsOneQueuedBehindIt() throws Exception {
    Topology t = EmulationTest.scaledPaperTopology(0).withRttScale(10);
    List<String> tags = new CopyOnWriteArrayList<>();
    ProcessMetrics.Sink sink = listen(tag -> tag.startsWith("lateness:"), (tag, v) -> tags.add(tag));
    try (Transport transport = new Transport(t)) {
      List<Delivery> got = new CopyOnWriteArrayList<>();
      Endpoint node = transport.openClient(60_000, 0, Runnable::run,
          m -> got.add(new Delivery(m.as(UInt64Value.class).getValue(), System.nanoTime())));
      InChannel ch = new InChannel(transport, node);
      long now = System.nanoTime();
      ch.arrive(env(1, now, ClockDomain.ID)); // before the partition: judged
      awaitCount(got, 1);
      transport.links().partition(0, 1, System.nanoTime() + 50 * MS, false); // held 50 ms
      ch.arrive(env(2, System.nanoTime(), ClockDomain.ID));
      transport.links().partition(0, 1, 0, false); // healed at once: 3 is not held itself,
      ch.arrive(env(3, System.nanoTime(), ClockDomain.ID)); // but queued behind 2 on its channel
      awaitCount(got, 3);
      Thread.sleep(100);
      ch.arrive(env(4, System.nanoTime(), ClockDomain.ID)); // long after: judged again
      awaitCount(got, 4);
      // (a dispatcher released the others: the node is a client)
      assertEquals(List.of("lateness:wan:dispatcher", "lateness:faulted", "lateness:faulted",
          "lateness:wan:dispatcher"), tags);
    } finally {
      ProcessMetrics.release(sink);
    }
  }
}
