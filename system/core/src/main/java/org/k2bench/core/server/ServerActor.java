package org.k2bench.core.server;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import java.util.function.Predicate;
import org.k2bench.core.api.ServerNode;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.data.Row;
import org.k2bench.core.store.MultiVersionStore;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.TimedInbox;
import org.k2bench.core.transport.Transport;

/**
 * What every bundled server is built on: one shard of one datacenter run as an actor.
 * Every message, reply continuation and timer runs on the server's single thread, so
 * protocol state needs no locks; the thread also keeps each channel's messages in order.
 * Holds the multiversion store, the protocol counters, and the lifecycle.
 */
public abstract class ServerActor implements ServerNode {
  /** The value of a key never written (version 0). */
  public static final Row EMPTY_ROW = Row.getDefaultInstance();

  protected final Topology topology;
  protected final Placement placement;
  protected final ServerOptions options;
  protected final int dc;
  protected final int shard;
  protected final ExecutorService thread;
  protected final Endpoint ep;
  protected final LamportClock clock;
  /** When this server's clock reached a logical time (snapshot lag of reads). */
  protected final org.k2bench.core.clock.ClockHistory clockHistory;
  protected final MultiVersionStore<Row> store;
  private final Map<String, LongAdder> counters = new ConcurrentHashMap<>();
  /** One timer thread per process; what it fires runs on each server's own thread. */
  private static final ScheduledExecutorService TIMERS = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "k2bench-server-timers");
    t.setDaemon(true);
    return t;
  });
  /**
   * The protocol threads' priority: below the WAN emulation's dispatchers (normal), so a
   * busy machine queues work at the servers instead of delivering messages late, and above
   * the clients' (minimum). A server times the messages to it itself ({@link TimedInbox}):
   * one due while it is busy waits in its queue, which is not lateness; one due while it
   * idles but waits for a CPU is. Nice 2 when the JVM runs with the orchestrator's priority flags
   * (k2bench/trial/jvm.py, PRIORITY_JVM_ARGS); without them it changes nothing.
   */
  public static final int PROTOCOL_PRIORITY = Thread.NORM_PRIORITY - 1;
  /** How often waits with a deadline are checked (they expire within this much of it). */
  protected static final long TICK_MS = 100;
  /** This server's pending timers ({@link #every}, {@link #later}), cancelled by {@link #close()}. */
  private final java.util.Set<ServerTimer> timers = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /**
   * Opens the server's endpoint; messages wait until the subclass calls {@link #start()}.
   *
   * @param retainsForRemoteReads keys whose superseded versions other datacenters may still
   *     read remotely (kept for the replica retention window instead of the GC window)
   */
  protected ServerActor(String system, Transport transport, int serverId, ServerOptions options,
      Predicate<String> retainsForRemoteReads) {
    this.topology = transport.topology();
    this.placement = Placement.of(topology);
    this.options = options;
    this.dc = topology.dcOfServer(serverId);
    this.shard = topology.shardOfServer(serverId);
    // Also the timer of the delayed messages to this server (TimedInbox: one hand-over each).
    this.thread = new TimedInbox(r -> {
      // srv-<id>-<system>: Linux keeps 15 characters of a thread's name, and the id first
      // keeps each server's thread apart in /proc (k2bench/cpu.py: CPU per server).
      Thread t = new Thread(r, "srv-" + serverId + "-" + system);
      t.setDaemon(true);
      t.setPriority(PROTOCOL_PRIORITY);
      return t;
    });
    this.store = new MultiVersionStore<>(EMPTY_ROW, retainsForRemoteReads, System::currentTimeMillis,
        options.gcWindowMs(), options.replicaRetentionMs(), options.txnTimeoutMs());
    try {
      this.ep = transport.openServer(serverId, thread, null);
    } catch (RuntimeException e) {
      thread.shutdownNow();
      throw e;
    }
    this.clock = ep.clock();
    this.clockHistory = org.k2bench.core.clock.ClockHistory.track(clock);
  }

  /** Starts handling messages (those that arrived meanwhile first, in order). */
  protected final void start() {
    ep.setHandler(this::handle);
    every(TICK_MS, TimeUnit.MILLISECONDS, this::tick);
  }

  /** A timer of a server ({@link #every}, {@link #later}). */
  public interface Timer {
    /** Stops it: no run starts after this, not even one already waiting for the server's thread. */
    void cancel();
  }

  private final class ServerTimer implements Timer {
    private final Runnable task;
    private final boolean periodic;
    /** A run waits for the server's thread: a periodic timer queues no second one. */
    private final java.util.concurrent.atomic.AtomicBoolean queued = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile ScheduledFuture<?> future;
    private volatile boolean cancelled;

    ServerTimer(Runnable task, boolean periodic) {
      this.task = task;
      this.periodic = periodic;
    }

    /** On the timer thread: hands one run to the server's thread. */
    void fire() {
      if (!periodic) {
        timers.remove(this);
      }
      if (cancelled || closed || !queued.compareAndSet(false, true)) {
        return;
      }
      try {
        thread.execute(() -> {
          queued.set(false);
          if (!cancelled && !closed) {
            task.run();
          }
        });
      } catch (java.util.concurrent.RejectedExecutionException e) {
        // the server closed meanwhile
      }
    }

    @Override
    public void cancel() {
      cancelled = true;
      timers.remove(this);
      ScheduledFuture<?> f = future;
      if (f != null) {
        f.cancel(false);
      }
    }
  }

  /**
   * Runs {@code r} on the server thread every {@code period}, from one period after now until
   * the timer is cancelled or the server closes. A protocol's periodic work (heartbeats,
   * replication batches, stabilization gossip) runs here, in turn with the messages, so it
   * needs no locks. A busy server does not pile runs up: while one run waits for the
   * thread, the timer queues no other (it skips, it does not bunch).
   */
  protected final Timer every(long period, TimeUnit unit, Runnable r) {
    if (period <= 0) {
      throw new IllegalArgumentException("a timer's period must be > 0, got " + period + " " + unit);
    }
    ServerTimer t = new ServerTimer(r, true);
    timers.add(t);
    t.future = TIMERS.scheduleWithFixedDelay(t::fire, period, period, unit);
    if (closed) { // close() ran meanwhile and may have missed it
      t.cancel();
    }
    return t;
  }

  /** Runs {@code r} once on the server thread after {@code delayMs}, unless cancelled or closed by then. */
  protected final Timer later(long delayMs, Runnable r) {
    ServerTimer t = new ServerTimer(r, false);
    timers.add(t);
    t.future = TIMERS.schedule(t::fire, delayMs, TimeUnit.MILLISECONDS);
    if (closed) {
      t.cancel();
    }
    return t;
  }

  /** How many timers of this server are pending: periodic ones, and one-shots not yet due (tests). */
  final int pendingTimers() {
    return timers.size();
  }

  /**
   * Runs every {@link #TICK_MS} on the server thread: expires waits whose deadline passed.
   * Subclasses add their own housekeeping and call this.
   */
  protected void tick() {
    // Counted before the expiries answer their askers (a reply may complete in place).
    store.expireWaiters(System.currentTimeMillis(), n -> count("waits_expired", n));
  }

  /** Handles one message on the server thread. */
  protected abstract void handle(Incoming m);

  /** Adds gauges read on the server thread (store sizes and the like) to {@code out}. */
  protected void gauges(Map<String, Long> out) {
    out.put("gc_removed", store.gcRemoved());
    out.put("gc_collected_records", store.collectedRecords());
    out.put("waiting", (long) store.waiterCount());
  }

  public void count(String stat) {
    counters.computeIfAbsent(stat, k -> new LongAdder()).increment();
  }

  /** Adds {@code n} to a counter (a no-op for 0). */
  public void count(String stat, long n) {
    if (n != 0) {
      counters.computeIfAbsent(stat, k -> new LongAdder()).add(n);
    }
  }

  /** Runs {@code then} on the server thread when {@code f} completes or times out. */
  protected <T> void onServer(CompletableFuture<T> f, BiConsumer<T, Throwable> then) {
    onServer(f, options.rpcTimeoutMs(), then);
  }

  /** As above, timing out after {@code timeoutMs}. */
  protected <T> void onServer(CompletableFuture<T> f, long timeoutMs, BiConsumer<T, Throwable> then) {
    f.orTimeout(timeoutMs, TimeUnit.MILLISECONDS).whenCompleteAsync(then, thread);
  }

  @Override
  public Endpoint endpoint() {
    return ep;
  }

  @Override
  public Map<String, Long> stats() {
    Map<String, Long> out = new HashMap<>();
    counters.forEach((k, v) -> out.put(k, v.sum()));
    try {
      thread.submit(() -> gauges(out)).get(5, TimeUnit.SECONDS);
    } catch (Exception e) {
      // closed or stuck: report the counters we have
    }
    return out;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (ServerTimer t : timers) {
      t.cancel();
    }
    clockHistory.close();
    ep.close();
    thread.shutdownNow();
  }
}
