package org.k2bench.core.transport;

import org.k2bench.core.metrics.ProcessMetrics;
import org.k2bench.core.transport.proto.Envelope;

/**
 * The receiving half of one directed channel: the WAN emulation. Each envelope
 * is handed to its node at {@code due = max(send time + delay, previous due)}: the delay of
 * its datacenter link (RTT/2 + extra + jitter, see {@link LinkConditions}), and the clamp
 * keeps the channel FIFO however the jitter falls.
 *
 * <p>The delay is counted from the sender's send time when both ends read the same clock
 * ({@link ClockDomain}: any two processes on one machine), so the time the envelope spent
 * in gRPC, Netty and the kernel on its way here is part of the emulated delay rather than
 * added to it, as the wire's own latency is on a real link. Between machines the delay
 * counts from arrival instead, like netem on a real network.
 */
final class InChannel {
  private final Transport transport;
  private final Endpoint node;
  private Dispatcher dispatcher;
  private long lastDueNanos = Long.MIN_VALUE;
  /** Whether the message that set lastDueNanos was held or slowed by a fault. */
  private boolean lastFaulted;
  private int queued;
  /**
   * Sender in this process: hand over on the sender's thread only what merely queues work
   * for the receiver's own thread or completes a client's call ({@link Endpoint#takesInPlace}).
   * A ping answered in place would run the receiver's code under the sender's channel
   * lock, and two nodes answering each other would deadlock; the dispatcher releases those.
   * Handing over a due message directly saves a dispatcher wake-up per local message, the
   * largest kernel cost when every datacenter's clients share the servers' process.
   */
  private final boolean inProcess;

  InChannel(Transport transport, Endpoint node) {
    this(transport, node, false);
  }

  InChannel(Transport transport, Endpoint node, boolean inProcess) {
    this.transport = transport;
    this.node = node;
    this.inProcess = inProcess;
  }

  boolean isClosed() {
    return node.isClosed();
  }

  /** Called for every envelope of the channel, in arrival (= send) order. */
  synchronized void arrive(Envelope env) {
    if (transport.links().dropping(env.getFromDc(), node.dc())) {
      return; // a partition in drop mode: the message is lost
    }
    if (node.isClosed()) {
      return; // not delivered, as receive() would drop it (a closed server takes no timer)
    }
    long now = System.nanoTime();
    long sent = env.getClockDomain() == ClockDomain.ID ? Math.min(env.getSentNanos(), now) : now;
    LinkConditions links = transport.links();
    long own = sent + links.sampleDelayNanos(env.getFromDc(), node.dc());
    // A message held by a partition or slowed by a delay fault, or queued behind one on its
    // channel (FIFO), is late by design: its lateness is recorded apart, not judged.
    boolean behind = own < lastDueNanos;
    long due = behind ? lastDueNanos : own;
    boolean faulted = links.faulted(env.getFromDc(), node.dc()) || (behind && lastFaulted);
    lastDueNanos = due;
    lastFaulted = faulted;
    if (due <= now && queued == 0 && (!inProcess || node.takesInPlace(env))) {
      recordDelivery(env, now - due, faulted, BY_ARRIVAL);
      node.receive(env);
      return;
    }
    queued++;
    TimedInbox timed = node.timedInbox();
    if (timed != null && node.queuesOnly(env)) {
      // The server's thread waits for it itself (TimedInbox): a dispatcher would wake up
      // only to wake that thread. Pings and pongs still go through a dispatcher, answered
      // off the protocol's thread; they measure the link, so may pass a request (or not).
      waiting.add(new Waiting(env, due, faulted));
      try {
        timed.at(due, () -> releaseHere(timed));
      } catch (java.util.concurrent.RejectedExecutionException closedMeanwhile) {
        waiting.pollLast(); // the server closed after the check above: dropped, as receive() would
        queued--;
      }
      return;
    }
    if (dispatcher == null) {
      dispatcher = transport.dispatcherFor(env.getFrom(), node.id());
    }
    dispatcher.schedule(due, () -> release(env, due, faulted));
  }

  /** A message held in a server's {@link TimedInbox}, in the channel's order. */
  private record Waiting(Envelope env, long due, boolean faulted) {}

  private final java.util.ArrayDeque<Waiting> waiting = new java.util.ArrayDeque<>();

  /**
   * On the server's thread, when a message's timer fires: releases the channel's oldest
   * waiting message, not necessarily that one. The inbox takes delays, not due times, so
   * two messages due at the same nanosecond may fire in either order; the k-th timer to
   * fire is never before the k-th due time (they never decrease), so no message is early.
   * The channel's lock only for the queue: the handler does not run under it (it may send
   * to a node of this process, whose channel back here it would lock); a due arrival that
   * now skips the queue is queued behind this task on the same thread, so cannot overtake.
   */
  private void releaseHere(TimedInbox timed) {
    long now = System.nanoTime();
    Waiting w;
    synchronized (this) {
      w = waiting.poll();
      queued--;
      recordDelivery(w.env, timed.lateNanos(w.due, now), w.faulted, BY_TIMER);
    }
    node.receiveHere(w.env);
  }

  /**
   * Under the channel's lock, so an arrival that is already due cannot overtake it; not a
   * ping or pong, which may pass other messages. A ping is answered in place: under this
   * lock, sending the pong would wait for the reverse channel, whose sender (a server
   * completing a client's call in place, see Endpoint#takesInPlace) may be sending on
   * this channel from the client's callback: each would wait for the other for good.
   */
  private void release(Envelope env, long due, boolean faulted) {
    synchronized (this) {
      queued--;
      recordDelivery(env, System.nanoTime() - due, faulted, BY_DISPATCHER);
      if (!Endpoint.isPingOrPong(env)) {
        node.receive(env);
        return;
      }
    }
    node.receive(env);
  }

  /**
   * One delivered message: what it was (below) and the emulation's error for it, how long
   * after its due time it reached its node, in microseconds (0 when on time), tagged by the
   * link's class and the path that delivered it, {@code lateness:<class>:<path>}: class
   * {@code wan} between datacenters, {@code local} inside one (due after the topology's
   * intra-datacenter delay, usually 0: there any transit time is lateness); path
   * {@code arrival} (already due when it arrived, nothing queued), {@code timer} (held by its
   * node's own thread, a server's {@link TimedInbox}) or {@code dispatcher} (held by a WAN
   * dispatcher). Each path waits for a different thread, so a late class names the one to
   * look at; one record per message, as a class alone was. {@code lateness:faulted} for a
   * message a partition or delay fault held back.
   */
  private void recordDelivery(Envelope env, long lateNanos, boolean faulted, String[] pathTags) {
    if (node.isClosed()) {
      return; // not delivered
    }
    boolean local = env.getFromDc() == node.dc();
    ProcessMetrics.record(faulted ? FAULTED : pathTags[local ? 0 : 1], Math.max(0, lateNanos) / 1000);
    // and what was delivered: msg:<local|wan>:<payload type>, its payload's size in bytes
    // (summary.json's messages: count and bytes per type, the traffic an operation costs)
    String url = env.getPayload().getTypeUrl();
    String[] tags = MESSAGE_TAGS.computeIfAbsent(url, u -> {
      String type = u.substring(u.lastIndexOf('.') + 1);
      return new String[] {"msg:local:" + type, "msg:wan:" + type};
    });
    ProcessMetrics.record(tags[local ? 0 : 1], env.getPayload().getValue().size());
  }

  static final String FAULTED = "lateness:faulted";
  /** {local, wan} tags of each delivery path (recordDelivery). */
  static final String[] BY_ARRIVAL = pathTags("arrival");
  static final String[] BY_TIMER = pathTags("timer");
  static final String[] BY_DISPATCHER = pathTags("dispatcher");

  private static String[] pathTags(String path) {
    return new String[] {"lateness:local:" + path, "lateness:wan:" + path};
  }
  /** Type URL -> its two message tags (local, wan), made once per type. */
  private static final java.util.concurrent.ConcurrentHashMap<String, String[]> MESSAGE_TAGS =
      new java.util.concurrent.ConcurrentHashMap<>();
}
