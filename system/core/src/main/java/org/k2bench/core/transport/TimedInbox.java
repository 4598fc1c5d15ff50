package org.k2bench.core.transport;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * A server's single thread that is also the timer of the delayed messages addressed to it.
 *
 * <p>A delayed message released by a WAN dispatcher cost two thread hand-overs: the
 * dispatcher woke at the due time, then woke the server's thread to run it. Here the
 * message waits in the server's own queue until due, so the thread that handles it is the
 * one that waits for it: one hand-over, none when the server is busy at the due time.
 * Tasks run in due order (submission order for equal times), {@link #execute} ones as due
 * now, so each channel's messages, whose due times never decrease, keep their order.
 */
public class TimedInbox extends ScheduledThreadPoolExecutor {
  /**
   * A pause this long between two tasks is the thread idle (or waiting for a CPU), not
   * busy: a task taken after it starts a new busy period.
   */
  static final long GAP_NANOS = 50_000;
  /** When the last task ended and the current busy period began (inbox thread only). */
  private long lastEndNanos = Long.MIN_VALUE;
  private long busySinceNanos = Long.MIN_VALUE;

  public TimedInbox(ThreadFactory threads) {
    super(1, threads);
  }

  /** Runs {@code task} on the inbox's thread once {@code System.nanoTime()} reaches {@code dueNanos}. */
  void at(long dueNanos, Runnable task) {
    schedule(task, dueNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
  }

  /**
   * On the inbox's thread: how late a task due at {@code dueNanos} starts by the timer's
   * fault. Not the time it waited while the thread ran earlier tasks it was already busy
   * with at the due time: that is the server's queue, as it was behind a dispatcher, not
   * the emulation's error. A thread that idled at the due time (or waited for a CPU: a
   * busy period that began after it) owes the whole wait.
   */
  long lateNanos(long dueNanos, long startNanos) {
    return busySinceNanos <= dueNanos ? startNanos - Math.max(dueNanos, lastEndNanos) : startNanos - dueNanos;
  }

  @Override
  protected void beforeExecute(Thread t, Runnable r) {
    long now = System.nanoTime();
    if (now - lastEndNanos > GAP_NANOS) {
      busySinceNanos = now;
    }
  }

  /**
   * Also reports what a task threw to the thread's uncaught-exception handler: this
   * executor keeps it in the task's future, where nobody looks for an {@code execute}.
   */
  @Override
  protected void afterExecute(Runnable r, Throwable t) {
    lastEndNanos = System.nanoTime();
    if (t == null && r instanceof Future<?> f && f.isDone() && !f.isCancelled()) {
      try {
        f.get();
      } catch (ExecutionException e) {
        t = e.getCause();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (t != null) {
      Thread me = Thread.currentThread();
      me.getUncaughtExceptionHandler().uncaughtException(me, t);
    }
  }
}
