package org.k2bench.ycsb;

import java.util.ArrayDeque;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Sessions driven together by one client thread ({@code k2bench.sessions_per_thread}): the
 * same closed loop per session as a thread of its own (one operation at a time, the next
 * drawn when the last is done), but a session waits for its replies without a thread. With
 * a thread per session every round of every operation wakes that thread; on a machine that
 * hosts every datacenter's clients beside the servers those wake-ups took a third of the
 * clients' CPU. Only for systems whose clients never block ({@code KvClient#nonBlocking}) and
 * unpaced runs without read-write transactions; the others keep a thread per session.
 *
 * <p>YCSB still starts a thread per session, each with its own client, seed and id: the
 * first thread of every {@code sessions_per_thread} drives the group, the others hand their
 * session over and wait for the end. Operations start and are recorded on the driving
 * thread; their steps between rounds run on the threads that deliver the replies.
 */
final class SessionGroup {
  /** How long the end of a run waits for the group's operations under way. */
  static final long DRAIN_MS = 120_000;

  private final TxnWorkload workload;
  private final ConcurrentLinkedQueue<Session> joining = new ConcurrentLinkedQueue<>();
  private final LinkedBlockingQueue<Done> done = new LinkedBlockingQueue<>();
  /** Sessions pausing after a failure, in order of their end (the pause is the same for all). */
  private final ArrayDeque<Resting> resting = new ArrayDeque<>();
  private final CountDownLatch drained = new CountDownLatch(1);
  /** Operations started and not yet recorded; on the driving thread only. */
  private int inFlight;
  private volatile boolean finished;

  /** An operation's outcome, at the time its last reply came (latency and history end there). */
  private record Done(Session session, TxnWorkload.Op op, Object result, Throwable error, long endNanos) {}

  private record Resting(Session session, long untilNanos) {}

  SessionGroup(TxnWorkload workload) {
    this.workload = workload;
  }

  /** Why a run's sessions each need a thread of their own, or null when they may be grouped. */
  static String whyThreadPerSession(java.util.Properties p, double rwFraction, org.k2bench.core.api.KvClient client) {
    if (!Boolean.parseBoolean(p.getProperty("dotransactions", "true"))) {
      return "loading";
    }
    if (Double.parseDouble(p.getProperty("target", "0")) > 0) {
      return "paced by a target rate";
    }
    if (rwFraction > 0) {
      return "read-write transactions";
    }
    return client.nonBlocking() ? null : "this system's client blocks on its calls";
  }

  /** A YCSB thread's state: the driver's or a member's handle on its group. */
  final class Member {
    private final boolean drives;
    private boolean released;

    private Member(boolean drives) {
      this.drives = drives;
    }

    /** One finished operation for YCSB to count (the driver), or the wait for the end (the others). */
    boolean step() {
      if (drives) {
        return drive();
      }
      awaitEnd();
      released = true;
      return true;
    }

    /** Whether YCSB may stop this thread: not before its group recorded every operation. */
    boolean mayStop() {
      return drives ? finished : released;
    }
  }

  /** Adds a thread's session; the group's first thread drives it. */
  Member join(Session s, boolean drives) {
    joining.add(s);
    return new Member(drives);
  }

  private boolean drive() {
    try {
      while (true) {
        if (workload.stopping()) { // before starting anything: no operation begins after the end
          drain();
          return true;
        }
        Session s;
        while ((s = joining.poll()) != null) {
          issue(s);
        }
        long now = System.nanoTime();
        while (!resting.isEmpty() && resting.peek().untilNanos() <= now) {
          issue(resting.poll().session());
        }
        long waitNs = resting.isEmpty() ? TimeUnit.MILLISECONDS.toNanos(100)
            : Math.min(TimeUnit.MILLISECONDS.toNanos(100), resting.peek().untilNanos() - now);
        Done d = done.poll(Math.max(0, waitNs), TimeUnit.NANOSECONDS);
        if (d != null) {
          record(d);
          if (!workload.stopping()) {
            if (d.error() != null) {
              // as an unpaced thread backs off after a failure (a dead server fails calls at once)
              resting.add(new Resting(d.session(), System.nanoTime()
                  + TimeUnit.MILLISECONDS.toNanos(TxnWorkload.FAILURE_BACKOFF_MS)));
            } else {
              issue(d.session());
            }
          }
          return true;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      finished = true;
      drained.countDown();
      return true;
    }
  }

  private void issue(Session s) {
    TxnWorkload.Op op = workload.next(s);
    inFlight++;
    try {
      workload.start(s, op).whenComplete((r, e) -> done.add(new Done(s, op, r, e, System.nanoTime())));
    } catch (RuntimeException e) {
      done.add(new Done(s, op, null, e, System.nanoTime()));
    }
  }

  private void record(Done d) {
    inFlight--;
    if (d.error() == null) {
      workload.completed(d.session(), d.op(), d.result(), d.endNanos());
    } else {
      Throwable e = d.error() instanceof CompletionException && d.error().getCause() != null
          ? d.error().getCause() : d.error();
      workload.failed(d.session(), d.op(), e, d.endNanos());
    }
  }

  /** At the end: records the operations still under way (each ends by its timeouts), then lets the members go. */
  private void drain() throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DRAIN_MS);
    while (inFlight > 0) {
      Done d = done.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
      if (d == null) {
        System.err.println("k2bench: " + inFlight + " operations still under way " + DRAIN_MS
            + " ms after the end; not in the history");
        break;
      }
      record(d);
    }
    finished = true;
    drained.countDown();
  }

  /** A member's thread: until the run ends and the driver has recorded the group's last operations. */
  private void awaitEnd() {
    try {
      while (!workload.stopping()) {
        Thread.sleep(Math.max(1, Math.min(1_000, workload.msUntilEnd())));
      }
      drained.await(DRAIN_MS + 10_000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
