package org.k2bench.core.transport;

import io.grpc.stub.StreamObserver;
import org.k2bench.core.transport.proto.Envelope;

/**
 * The sending half of one directed channel (sender node -> receiver node): stamps each
 * envelope with its sequence number and send time and writes it at once to the channel's
 * single gRPC stream, so envelopes arrive in send order. The emulated delay is applied by
 * the receiver ({@link InChannel}), measured from the send time stamped here.
 *
 * <p>A receiver in the same process (all servers of a host share one transport) gets the
 * envelope object itself through its {@link InChannel}: no framing, no socket, no parsing
 * of the envelope (the payload is still packed), the same emulated delay and FIFO order
 * (see {@link Transport#localEndpoint}).
 */
final class OutChannel {
  private final Transport transport;
  private final Endpoint owner;
  private final int to;
  private final boolean toServer;
  private StreamObserver<Envelope> sink;
  /** The receiver's side when the receiver is a node of this process (no gRPC), else null. */
  private InChannel local;
  private long seq;
  private boolean closed;

  OutChannel(Transport transport, Endpoint owner, int to) {
    this.transport = transport;
    this.owner = owner;
    this.to = to;
    this.toServer = transport.topology().isServer(to);
  }

  synchronized void send(Envelope.Builder b) {
    if (closed) {
      return;
    }
    Envelope env = b.setSeq(++seq).setSentNanos(System.nanoTime()).setClockDomain(ClockDomain.ID).build();
    if ((local == null && sink == null) || (local != null && local.isClosed())) {
      // Only while no gRPC stream carries the channel: messages already on a stream would
      // arrive after later in-process ones (a server that started before its peer opened).
      Endpoint dest = transport.localEndpoint(to);
      local = dest == null ? null : new InChannel(transport, dest, true);
    }
    if (local != null) {
      local.arrive(env); // same delay, order and lateness accounting as over gRPC
      return;
    }
    if (sink == null) {
      if (!toServer) {
        Transport.LOG.debug("node {}: no stream to client {}, dropping {}", owner.id(), to, env.getSeq());
        return;
      }
      sink = transport.openStream(owner, to, this);
      if (sink == null) {
        return; // the server is down: the stream failed at once, and with it this call
      }
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
