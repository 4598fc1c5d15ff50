package org.k2bench.core.transport;

import io.grpc.stub.StreamObserver;
import org.k2bench.core.transport.proto.Envelope;

/**
 * One directed channel (sender node -> receiver node). Applies the emulated delay at the
 * sender, as netem does on egress, with {@code due = max(now + delay, last due)} so jitter
 * never reorders, and writes envelopes to a single gRPC stream so they arrive in order.
 */
final class OutChannel {
  private final Transport transport;
  private final Endpoint owner;
  private final int to;
  private final int fromDc;
  private final int toDc;
  private final Dispatcher dispatcher;
  private final boolean toServer;
  private StreamObserver<Envelope> sink;
  private long lastDueNanos = Long.MIN_VALUE;
  private long seq;
  private int queued;
  private boolean closed;

  OutChannel(Transport transport, Endpoint owner, int to, int fromDc, int toDc) {
    this.transport = transport;
    this.owner = owner;
    this.to = to;
    this.fromDc = fromDc;
    this.toDc = toDc;
    this.toServer = transport.topology().isServer(to);
    this.dispatcher = transport.dispatcherFor(owner.id(), to);
  }

  synchronized void send(Envelope.Builder b) {
    if (closed) {
      return;
    }
    b.setSeq(++seq);
    Envelope env = b.build();
    long now = System.nanoTime();
    long due = Math.max(now + transport.links().sampleDelayNanos(fromDc, toDc), lastDueNanos);
    lastDueNanos = due;
    if (due <= now && queued == 0) {
      write(env);
    } else {
      queued++;
      dispatcher.schedule(due, () -> release(env));
    }
  }

  private synchronized void release(Envelope env) {
    queued--;
    if (!closed) {
      write(env);
    }
  }

  private void write(Envelope env) {
    if (sink == null) {
      if (!toServer) {
        Transport.LOG.debug("node {}: no stream to client {}, dropping {}", owner.id(), to, env.getSeq());
        return;
      }
      sink = transport.openStream(owner, to, this);
    }
    try {
      sink.onNext(env);
    } catch (RuntimeException e) {
      Transport.LOG.debug("node {}: stream to {} failed: {}", owner.id(), to, e.toString());
      sink = null;
    }
  }

  /** Uses a client's incoming stream as this channel's way back to it. */
  synchronized void attach(StreamObserver<Envelope> s) {
    sink = s;
  }

  /** The stream broke; the next message opens a new one (servers) or waits for the client. */
  synchronized void detach(StreamObserver<Envelope> s) {
    if (sink == s) {
      sink = null;
    }
  }

  synchronized void close() {
    closed = true;
    if (sink != null && toServer) {
      try {
        sink.onCompleted();
      } catch (RuntimeException ignored) {
        // already broken
      }
    }
    sink = null;
  }
}
