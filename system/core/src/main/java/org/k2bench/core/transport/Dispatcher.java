package org.k2bench.core.transport;

import java.util.PriorityQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Releases delayed messages when they are due. One thread; a channel is always served by
 * the same dispatcher and its due times never decrease, so its messages leave in order.
 */
final class Dispatcher implements AutoCloseable {
  private record Item(long dueNanos, long order, Runnable release) {}

  /**
   * Parking wakes up ~90-200 us late on a typical VM, now and then milliseconds late when
   * the machine idles: park until {@code k2bench.spin_us} (default 120) before the due time
   * and spin the rest, so the emulated delay is usually accurate to a few microseconds
   * (longer spins measured no better: they take the CPU the rest of the transport needs).
   * Spinning costs CPU, so all dispatchers of a process
   * share a budget of {@code k2bench.spin_budget} (a fraction of one core, default 0.05) per
   * second; once it is spent they just park (busy CPUs wake up promptly anyway).
   */
  private static final long SPIN_NANOS = Long.getLong("k2bench.spin_us", 120) * 1000;
  private static final long BUDGET_WINDOW_NANOS = 1_000_000_000L;
  private static final long BUDGET_NANOS = Math.round(
      Double.parseDouble(System.getProperty("k2bench.spin_budget", "0.05")) * BUDGET_WINDOW_NANOS);
  private static final java.util.concurrent.atomic.AtomicLong WINDOW_START =
      new java.util.concurrent.atomic.AtomicLong(System.nanoTime());
  private static final java.util.concurrent.atomic.AtomicLong SPENT = new java.util.concurrent.atomic.AtomicLong();

  private final PriorityQueue<Item> queue = new PriorityQueue<>(
      (a, b) -> a.dueNanos != b.dueNanos ? Long.compare(a.dueNanos, b.dueNanos)
          : Long.compare(a.order, b.order));
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private final Thread thread;
  private long order;
  private volatile boolean running = true;

  Dispatcher(String name) {
    thread = new Thread(this::loop, name);
    thread.setDaemon(true);
    thread.start();
  }

  void schedule(long dueNanos, Runnable release) {
    lock.lock();
    try {
      Item item = new Item(dueNanos, order++, release);
      queue.add(item);
      if (queue.peek() == item) {
        changed.signal();
      }
    } finally {
      lock.unlock();
    }
  }

  private void loop() {
    while (running) {
      Item next;
      lock.lock();
      try {
        next = queue.peek();
        if (next == null) {
          changed.await();
          continue;
        }
        long now = System.nanoTime();
        long windowStart = WINDOW_START.get();
        if (now - windowStart > BUDGET_WINDOW_NANOS && WINDOW_START.compareAndSet(windowStart, now)) {
          SPENT.set(0);
        }
        long spin = SPENT.get() < BUDGET_NANOS ? SPIN_NANOS : 0;
        long wait = next.dueNanos - now;
        if (wait > spin) {
          changed.awaitNanos(wait - spin);
          continue;
        }
        if (wait > 0) {
          lock.unlock();
          try {
            while (System.nanoTime() < next.dueNanos) {
              Thread.onSpinWait();
            }
          } finally {
            lock.lock();
          }
          SPENT.addAndGet(System.nanoTime() - now);
          continue; // an earlier item may have arrived meanwhile
        }
        queue.poll();
      } catch (InterruptedException e) {
        return;
      } finally {
        lock.unlock();
      }
      try {
        next.release.run();
      } catch (RuntimeException e) {
        Transport.LOG.warn("dropping a delayed message: {}", e.toString());
      }
    }
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
    try {
      thread.join(TimeUnit.SECONDS.toMillis(2));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
