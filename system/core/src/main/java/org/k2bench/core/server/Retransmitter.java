package org.k2bench.core.server;

import com.google.protobuf.Any;
import com.google.protobuf.Message;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.IntPredicate;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.RemoteException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends a server's replication and commit messages to other datacenters again until they
 * are answered, so a message lost on a link (a partition in {@code drop} mode) is not lost
 * for good. The K2 paper asks for it (§VI-A): transient failures "do not result in data
 * loss", and a datacenter "should replicate its pending updates ... once it is restored";
 * the receivers drop what they have already, so a resend costs a duplicate, never a second
 * effect.
 *
 * <p>Each entry has one attempt in flight: a call whose timeout is the backoff, from the
 * fail-over timeout (well above the largest round trip) doubling up to the RPC timeout,
 * with jitter. An entry ends on a reply, on an error reply (the receiver handled it: e.g.
 * the version was committed there and collected since), when the server closes, or when
 * the per-datacenter memory caps abandon it. Entries for a datacenter that is not
 * answering are parked (no call, no timer) until it answers again: with a failure
 * detector, while it suspects the datacenter ({@link #kick} on trust); without one, once
 * no answer came from there for an RPC timeout, with one entry left as the probe.
 *
 * <p>Runs on its server's thread, like the rest of the server: no locks.
 */
public final class Retransmitter {
  private static final Logger LOG = LoggerFactory.getLogger(Retransmitter.class);
  /** At most this many entries per destination datacenter; past it the oldest is abandoned. */
  public static final int MAX_ENTRIES_PER_DC = 100_000;
  /** At most this many bytes of messages per destination datacenter (the same). */
  public static final long MAX_BYTES_PER_DC = 32L << 20;
  /**
   * Resends in flight per destination server at most (a heal flushes at this pace). A first
   * send is never held back: fault-free replication goes out as it did without this class.
   */
  public static final int WINDOW = 64;

  /** An entry being sent until answered. */
  public final class Handle {
    final int to;
    final int dc;
    final Message m;
    final long bytes;
    final Consumer<Any> onAck;
    final Consumer<RemoteException> onRefused;
    long backoffMs = baseMs;
    /** When its first attempt went out (ms), 0 before. */
    long firstSentMs;
    /** Attempts made; a reply or timeout of an older one is ignored. */
    int attempts;
    boolean inFlight;
    /** Its attempt in flight counts in the window (a resend, or a first send after parking). */
    boolean windowed;
    /** It was parked once (its first send after that counts in the window too). */
    boolean wasParked;
    boolean parked;
    boolean queued;
    boolean done;
    CompletableFuture<Any> call;
    ServerActor.Timer timeout;

    Handle(int to, Message m, Consumer<Any> onAck, Consumer<RemoteException> onRefused) {
      this.to = to;
      this.dc = topology.dcOfServer(to);
      this.m = m;
      this.bytes = m.getSerializedSize();
      this.onAck = onAck;
      this.onRefused = onRefused;
    }

    /** Stops sending it (the sender no longer needs an answer). */
    public void cancel() {
      finish(this);
    }

    public boolean done() {
      return done;
    }

    /** Attempts made so far. */
    public int attempts() {
      return attempts;
    }

    /** The timeout of the next (or current) attempt, before jitter. */
    public long backoffMs() {
      return backoffMs;
    }

    public boolean parked() {
      return parked;
    }
  }

  /** Per destination datacenter. */
  private static final class Dest {
    final LinkedHashSet<Handle> entries = new LinkedHashSet<>();
    long bytes;
    int parked;
    boolean warned;
    /** Breaker mode: when the datacenter last answered anything (ms). */
    long lastHeardMs;
    boolean broken;
    Handle probe;
  }

  private final ServerActor server;
  private final Topology topology;
  private final long baseMs;
  private final long capMs;
  /** Null: breaker mode. */
  private final IntPredicate suspected;
  private final Dest[] dests;
  private final int maxEntries;
  private final long maxBytes;
  private final Map<Integer, Integer> inFlight = new HashMap<>();
  private final Map<Integer, ArrayDeque<Handle>> queuedFor = new HashMap<>();

  /**
   * @param suspectedDc whether the server's failure detector suspects a datacenter (entries
   *     for it wait until {@link #kick}); null for a server without one (breaker mode)
   */
  public Retransmitter(ServerActor server, IntPredicate suspectedDc) {
    this(server, server.options.failoverTimeoutMs(), server.options.rpcTimeoutMs(), suspectedDc);
  }

  /** As above with the first attempt's timeout {@code baseMs} and the largest {@code capMs}. */
  public Retransmitter(ServerActor server, long baseMs, long capMs, IntPredicate suspectedDc) {
    this(server, baseMs, capMs, suspectedDc, MAX_ENTRIES_PER_DC, MAX_BYTES_PER_DC);
  }

  /** As above with other caps per destination datacenter (tests). */
  Retransmitter(ServerActor server, long baseMs, long capMs, IntPredicate suspectedDc, int maxEntries,
      long maxBytes) {
    this.server = server;
    this.maxEntries = maxEntries;
    this.maxBytes = maxBytes;
    this.topology = server.topology;
    this.baseMs = Math.max(1, Math.min(baseMs, capMs));
    this.capMs = capMs;
    this.suspected = suspectedDc;
    this.dests = new Dest[topology.numDcs()];
    for (int d = 0; d < dests.length; d++) {
      dests[d] = new Dest();
    }
  }

  /**
   * Sends {@code m} to server {@code to} as a call, again and again until it is answered:
   * {@code onAck} with the reply, or {@code onRefused} with an error reply (the receiver
   * handled it and said no; it is not sent again).
   */
  public Handle call(int to, Message m, Consumer<Any> onAck, Consumer<RemoteException> onRefused) {
    Handle h = new Handle(to, m, onAck, onRefused);
    Dest d = dests[h.dc];
    d.entries.add(h);
    d.bytes += h.bytes;
    while (d.entries.size() > maxEntries || d.bytes > maxBytes) {
      abandon(d.entries.iterator().next());
    }
    if (!h.done) {
      attempt(h);
    }
    return h;
  }

  /** As above, ignoring the answer. */
  public Handle call(int to, Message m) {
    return call(to, m, a -> { }, e -> { });
  }

  /**
   * Sends the one-way {@code m} to {@code to} now and again, with the same backoff, for as
   * long as {@code stillNeeded} (the sender waits for an answer that comes as a message of
   * its own). Holds no state beyond its timer: the waiting sender holds the rest.
   */
  public void repeat(int to, Message m, BooleanSupplier stillNeeded) {
    server.ep.send(to, m);
    repeatLater(to, m, stillNeeded, baseMs);
  }

  private void repeatLater(int to, Message m, BooleanSupplier stillNeeded, long backoffMs) {
    server.later(jitter(backoffMs), () -> {
      if (!stillNeeded.getAsBoolean()
          || org.k2bench.core.testing.Mutants.active(org.k2bench.core.testing.Mutants.NO_RETRANSMISSION)) {
        return;
      }
      server.count("retransmits");
      if (suspected == null || !suspected.test(topology.dcOfServer(to))) {
        server.ep.send(to, m);
      }
      repeatLater(to, m, stillNeeded, Math.min(2 * backoffMs, capMs));
    });
  }

  /** Datacenter {@code dc} answers again: its parked entries are sent now, from the first backoff. */
  public void kick(int dc) {
    Dest d = dests[dc];
    d.broken = false;
    d.probe = null;
    if (d.parked == 0) {
      return;
    }
    for (Handle h : new ArrayList<>(d.entries)) {
      if (h.parked) {
        h.parked = false;
        d.parked--;
        h.backoffMs = baseMs;
        attempt(h);
      }
    }
  }

  private void attempt(Handle h) {
    Dest d = dests[h.dc];
    if (h.done || h.inFlight || h.queued || h.parked) {
      return;
    }
    boolean once = org.k2bench.core.testing.Mutants.active(org.k2bench.core.testing.Mutants.NO_RETRANSMISSION);
    if (once && h.attempts > 0) {
      finish(h); // the mutant: sent once, as before this class
      return;
    }
    boolean down = !once && (suspected != null ? suspected.test(h.dc) : d.broken && d.probe != h);
    if (down) {
      h.parked = true;
      h.wasParked = true;
      d.parked++;
      return;
    }
    h.windowed = h.attempts > 0 || h.wasParked;
    if (h.windowed) {
      int n = inFlight.getOrDefault(h.to, 0);
      if (n >= WINDOW) {
        h.queued = true;
        queuedFor.computeIfAbsent(h.to, k -> new ArrayDeque<>()).addLast(h);
        return;
      }
      inFlight.put(h.to, n + 1);
    }
    if (h.attempts > 0) {
      server.count("retransmits");
    }
    if (h.attempts == 0) {
      h.firstSentMs = System.currentTimeMillis();
    }
    int attempt = ++h.attempts;
    h.inFlight = true;
    h.call = server.ep.call(h.to, h.m);
    h.timeout = server.later(jitter(h.backoffMs), () -> ended(h, attempt, null, null));
    h.call.whenCompleteAsync((reply, err) -> ended(h, attempt, reply, err), server.thread);
  }

  /** An attempt ended: {@code reply}, {@code err}, or neither (its timeout). */
  private void ended(Handle h, int attempt, Any reply, Throwable err) {
    if (attempt != h.attempts || !h.inFlight) {
      return; // an older attempt's, or the entry ended meanwhile
    }
    h.inFlight = false;
    h.timeout.cancel();
    h.call.cancel(false); // forgets the call at the endpoint (a timeout)
    if (h.windowed) {
      release(h.to);
    }
    Dest d = dests[h.dc];
    Throwable cause = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
    if (reply != null || cause instanceof RemoteException) {
      heardFrom(h.dc);
      finish(h);
      if (reply != null) {
        h.onAck.accept(reply);
      } else {
        server.count("retransmits_refused");
        h.onRefused.accept((RemoteException) cause);
      }
      return;
    }
    // No answer within the backoff: ask again, with twice the patience.
    h.backoffMs = Math.min(2 * h.backoffMs, capMs);
    long now = System.currentTimeMillis();
    if (suspected == null && !d.broken && now - h.firstSentMs >= capMs && d.lastHeardMs < h.firstSentMs) {
      // Breaker: nothing came back from there while this waited an RPC timeout; one probe goes on.
      d.broken = true;
      d.probe = h;
      LOG.info("server {}: {} has not answered for {} ms; retransmissions wait for it", server.ep.id(),
          topology.dcName(h.dc), capMs);
    }
    attempt(h);
  }

  private void heardFrom(int dc) {
    Dest d = dests[dc];
    d.lastHeardMs = System.currentTimeMillis();
    if (suspected == null && d.broken) {
      kick(dc);
    }
  }

  private void release(int to) {
    int n = inFlight.getOrDefault(to, 1) - 1;
    if (n <= 0) {
      inFlight.remove(to);
    } else {
      inFlight.put(to, n);
    }
    ArrayDeque<Handle> q = queuedFor.get(to);
    while (q != null && !q.isEmpty() && inFlight.getOrDefault(to, 0) < WINDOW) {
      Handle next = q.pollFirst();
      next.queued = false;
      attempt(next);
    }
    if (q != null && q.isEmpty()) {
      queuedFor.remove(to);
    }
  }

  private void finish(Handle h) {
    if (h.done) {
      return;
    }
    h.done = true;
    Dest d = dests[h.dc];
    if (d.entries.remove(h)) {
      d.bytes -= h.bytes;
    }
    if (h.parked) {
      h.parked = false;
      d.parked--;
    }
    if (h.queued) {
      h.queued = false;
      ArrayDeque<Handle> q = queuedFor.get(h.to);
      if (q != null) {
        q.remove(h);
      }
    }
    if (h.inFlight) {
      h.inFlight = false;
      h.timeout.cancel();
      h.call.cancel(false);
      if (h.windowed) {
        release(h.to);
      }
    }
    if (d.probe == h) {
      // The probe is gone: the oldest parked entry probes instead.
      d.probe = null;
      for (Handle other : d.entries) {
        if (other.parked) {
          d.probe = other;
          other.parked = false;
          d.parked--;
          attempt(other);
          break;
        }
      }
    }
  }

  private void abandon(Handle h) {
    Dest d = dests[h.dc];
    server.count("retransmits_abandoned");
    if (!d.warned) {
      d.warned = true;
      LOG.warn("server {}: more than {} messages or {} bytes to {} wait for an answer; the oldest are given up",
          server.ep.id(), maxEntries, maxBytes, topology.dcName(h.dc));
    }
    finish(h);
  }

  private long jitter(long ms) {
    long j = Math.round(ms * (0.9 + 0.2 * ThreadLocalRandom.current().nextDouble()));
    return Math.max(1, Math.min(j, capMs));
  }

  /** Entries of datacenter {@code dc} (tests). */
  public int entries(int dc) {
    return dests[dc].entries.size();
  }

  /** {@code retransmit_pending} (entries being sent), {@code retransmit_parked}, {@code retransmit_bytes}. */
  public Map<String, Long> gauges() {
    long pending = 0;
    long parked = 0;
    long bytes = 0;
    for (Dest d : dests) {
      pending += d.entries.size() - d.parked;
      parked += d.parked;
      bytes += d.bytes;
    }
    return Map.of("retransmit_pending", pending, "retransmit_parked", parked, "retransmit_bytes", bytes);
  }

  /** The entries of a datacenter in the order they were made (tests). */
  List<Handle> entriesOf(int dc) {
    return new ArrayList<>(dests[dc].entries);
  }
}
