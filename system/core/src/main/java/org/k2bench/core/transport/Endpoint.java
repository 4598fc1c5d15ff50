package org.k2bench.core.transport;

import com.google.protobuf.Any;
import com.google.protobuf.Message;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.transport.proto.Envelope;
import org.k2bench.core.transport.proto.Ping;
import org.k2bench.core.transport.proto.Pong;

/**
 * One node's attachment to the transport: a server (listening on its topology address) or
 * a client (no address; servers answer it on the stream it opened).
 *
 * <p>Every message to another node goes through one {@link OutChannel} per destination and
 * arrives through an {@link InChannel}, which applies the emulated WAN delay and keeps the
 * channel FIFO. Incoming requests and
 * reply completions run on the node's {@code inbox} executor in arrival order; servers give
 * a single-threaded inbox so protocol code needs no locks. Pings are the exception: they
 * are answered, and their answers taken, on the transport's own threads (see
 * {@link #ping}). The Lamport clock advances on
 * every send and receive here, below the protocols.
 */
public final class Endpoint implements AutoCloseable {
  private final Transport transport;
  private final int id;
  private final int dc;
  private final LamportClock clock;
  private final Executor inbox;
  /** The inbox runs tasks on threads of its own (a server's), never on the caller's. */
  private final boolean ownThread;
  private volatile MessageHandler handler;
  /** Messages that arrived before a handler was installed; touched only on the inbox. */
  private List<Incoming> early = new ArrayList<>();
  private final Map<Integer, OutChannel> out = new ConcurrentHashMap<>();
  private final Map<Long, Call> calls = new ConcurrentHashMap<>();
  private final AtomicLong nextRpcId = new AtomicLong();
  private volatile boolean closed;

  /** A call awaiting its reply: where it went, and its caller's future. */
  private record Call(int to, CompletableFuture<Any> future) {}

  Endpoint(Transport transport, int id, int dc, Executor inbox, MessageHandler handler) {
    this.transport = transport;
    this.id = id;
    this.dc = dc;
    this.clock = transport.clockKind().create(id);
    this.inbox = inbox;
    this.ownThread = inbox instanceof java.util.concurrent.ExecutorService;
    this.handler = handler;
  }

  /**
   * Whether {@link #receive} of {@code env} only queues work for this node's own thread, so
   * a sender in this process may hand it over on its own thread (see InChannel): true for
   * a server's requests and replies, not for pings and pongs, which are answered or
   * completed in place, nor for nodes whose inbox runs on the caller's thread (clients).
   */
  boolean queuesOnly(Envelope env) {
    return ownThread && !isPingOrPong(env);
  }

  /**
   * Whether a sender in this process may hand {@code env} over on its own thread: what
   * {@link #queuesOnly} queues, and a reply to a client, which completes the call its
   * thread waits for. What a client chains on a call runs there too, and sends only
   * requests to servers, which queue them; nothing answers back under the sender's locks,
   * as a ping answered in place would (two nodes pinging each other would deadlock).
   */
  boolean takesInPlace(Envelope env) {
    return !isPingOrPong(env) && (ownThread || env.getIsReply());
  }

  static boolean isPingOrPong(Envelope env) {
    return Payloads.is(env.getPayload(), Ping.class) || Payloads.is(env.getPayload(), Pong.class);
  }

  public int id() {
    return id;
  }

  public int dc() {
    return dc;
  }

  public LamportClock clock() {
    return clock;
  }

  public Transport transport() {
    return transport;
  }

  /**
   * Installs the handler; a server opens its endpoint before its handler exists.
   * Messages that arrived without a handler are handled first, in arrival order.
   */
  public void setHandler(MessageHandler handler) {
    inbox.execute(() -> {
      this.handler = handler;
      List<Incoming> held = early;
      early = new ArrayList<>();
      held.forEach(this::dispatch);
    });
  }

  /** One-way message. */
  public void send(int to, Message message) {
    sendEnvelope(to, Envelope.newBuilder().setPayload(Payloads.pack(message)));
  }

  /** Request/reply; the future completes on this node's inbox. */
  public CompletableFuture<Any> call(int to, Message request) {
    long rpc = nextRpcId.incrementAndGet();
    CompletableFuture<Any> f = new CompletableFuture<>();
    calls.put(rpc, new Call(to, f));
    f.whenComplete((r, e) -> calls.remove(rpc));
    sendEnvelope(to, Envelope.newBuilder().setRpcId(rpc).setPayload(Payloads.pack(request)));
    return f;
  }

  /** Request/reply, unpacking the reply as {@code replyType}. */
  public <T extends Message> CompletableFuture<T> call(int to, Message request, Class<T> replyType) {
    CompletableFuture<Any> reply = call(to, request);
    CompletableFuture<T> out = reply.thenApply(any -> {
      try {
        return Payloads.unpack(any, replyType);
      } catch (com.google.protobuf.InvalidProtocolBufferException e) {
        throw new MalformedMessageException("reply from node " + to + " is not a "
            + replyType.getSimpleName() + ": " + e.getMessage());
      }
    });
    // A caller that gives up (orTimeout) completes only this future: forget the call too,
    // or every request to a dead node would stay in the table for good.
    out.whenComplete((r, e) -> reply.cancel(false));
    return out;
  }

  /**
   * Measures the emulated round trip to {@code to} in nanoseconds. Answered by the other
   * node's transport and completed by this one's, never on either inbox, so it measures
   * the link and the other process, not a busy protocol thread; the returned future may
   * therefore complete on a transport thread, ahead of earlier replies: keep what depends
   * on it short.
   */
  public CompletableFuture<Long> ping(int to, int paddingBytes) {
    long start = System.nanoTime();
    Ping p = Ping.newBuilder().setSentNanos(start)
        .setPadding(com.google.protobuf.ByteString.copyFrom(new byte[paddingBytes])).build();
    CompletableFuture<Any> reply = call(to, p);
    CompletableFuture<Long> out = reply.thenApply(any -> System.nanoTime() - start);
    out.whenComplete((r, e) -> reply.cancel(false)); // a caller that gives up forgets the call
    return out;
  }

  void sendReply(int to, long rpcId, Message message, String error) {
    Envelope.Builder b = Envelope.newBuilder().setRpcId(rpcId).setIsReply(true);
    if (message != null) {
      b.setPayload(Payloads.pack(message));
    }
    if (error != null) {
      b.setError(error);
    }
    sendEnvelope(to, b);
  }

  private void sendEnvelope(int to, Envelope.Builder b) {
    if (closed) {
      return;
    }
    OutChannel ch = out.computeIfAbsent(to, this::openChannel);
    // A Lamport clock ticks on every send and receive, below the protocols; a hybrid logical
    // clock moves only with physical time and where its protocol moves it (the PaRiS paper's
    // HLC: at prepare and commit, Alg. 3), so messages carry it without advancing it.
    b.setFrom(id).setFromDc(dc).setTo(to).setLamport(clock.isHybrid() ? clock.counter() : clock.tick());
    ch.send(b);
  }

  private OutChannel openChannel(int to) {
    return new OutChannel(transport, this, to);
  }

  /** The inbox when it is a server's {@link TimedInbox}, which can hold a message until due; else null. */
  TimedInbox timedInbox() {
    return inbox instanceof TimedInbox t ? t : null;
  }

  /** Called by the transport for every envelope addressed to this node, when it is due. */
  void receive(Envelope env) {
    receive(env, inbox);
  }

  /** {@link #receive}, already on this node's inbox: runs its work here and now. */
  void receiveHere(Envelope env) {
    receive(env, Runnable::run);
  }

  private void receive(Envelope env, Executor run) {
    if (closed) {
      return;
    }
    if (!clock.isHybrid()) {
      clock.observeCounter(env.getLamport());
    }
    if (env.getIsReply()) {
      Call call = calls.get(env.getRpcId());
      if (call == null) {
        return; // the caller gave up (timeout) or closed
      }
      CompletableFuture<Any> f = call.future();
      if (!env.getError().isEmpty()) {
        run.execute(() -> f.completeExceptionally(
            new RemoteException("node " + env.getFrom() + ": " + env.getError())));
      } else if (Payloads.is(env.getPayload(), Pong.class)) {
        // Answered here, off the inbox, as pings are: a ping measures the link and the
        // other process, not how far behind this node's own protocol thread is.
        f.complete(env.getPayload());
      } else {
        run.execute(() -> f.complete(env.getPayload()));
      }
      return;
    }
    if (env.getPayload().is(Ping.class)) {
      // Answered here, off the protocol's inbox, so a ping measures the emulated link only.
      sendReply(env.getFrom(), env.getRpcId(), Pong.newBuilder().build(), null);
      return;
    }
    Incoming in = new Incoming(this, env.getFrom(), env.getRpcId(), env.getPayload());
    run.execute(() -> dispatch(in));
  }

  /** On the inbox. */
  private void dispatch(Incoming in) {
    MessageHandler h = handler;
    if (h == null) {
      early.add(in);
      return;
    }
    try {
      h.handle(in);
    } catch (MalformedMessageException e) {
      Transport.LOG.warn("node {}: {}", id, e.getMessage());
      if (in.expectsReply()) {
        in.replyError(e.getMessage());
      }
    } catch (RuntimeException e) {
      Transport.LOG.error("node {} failed on {}", id, in, e);
      if (in.expectsReply()) {
        in.replyError(e.toString());
      }
    }
  }

  /** A client's stream to this server: answers to that client go back on it. */
  void attachReturnStream(int clientId, StreamObserver<Envelope> sink) {
    out.computeIfAbsent(clientId, this::openChannel).attach(sink);
  }

  void detachReturnStream(int clientId, StreamObserver<Envelope> sink) {
    OutChannel ch = out.get(clientId);
    if (ch != null) {
      ch.detach(sink);
    }
  }

  /** The id of the newest call made so far (calls are numbered in order). */
  long lastRpcId() {
    return nextRpcId.get();
  }

  /**
   * The stream to {@code to} broke (its process died: the kernel reset the connection):
   * the calls to it up to {@code upToRpcId}, sent on that stream, will not be answered, so
   * they fail now, as a database driver's pending requests fail on a reset connection,
   * instead of at their caller's timeout.
   */
  void connectionLost(int to, long upToRpcId, String why) {
    ConnectionLostException lost = new ConnectionLostException("connection to node " + to + " lost: " + why);
    calls.forEach((rpc, call) -> {
      if (call.to() == to && rpc <= upToRpcId) {
        inbox.execute(() -> call.future().completeExceptionally(lost));
      }
    });
  }

  /** Calls sent and not yet answered, timed out or cancelled (for leak checks). */
  public int pendingCalls() {
    return calls.size();
  }

  boolean isClosed() {
    return closed;
  }

  @Override
  public void close() {
    closed = true;
    for (OutChannel ch : out.values()) {
      ch.close();
    }
    RemoteException gone = new RemoteException("endpoint " + id + " closed");
    for (Call call : calls.values()) {
      call.future().completeExceptionally(gone);
    }
    transport.unregister(this);
  }
}
