package org.k2bench.core.transport;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.topology.HostPort;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.transport.proto.Envelope;
import org.k2bench.core.transport.proto.WireGrpc;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The message transport of one process: gRPC over Netty with the in-process WAN
 * emulation. A process may host many nodes (all servers of a datacenter, or a
 * whole test cluster); they share event loops, dispatcher threads and connections.
 *
 * <p>Each directed pair of nodes uses one long-lived bidirectional stream, so a channel
 * is FIFO; servers reach servers on streams they open themselves and reach clients on the
 * stream the client opened. Delays are applied by the receiver (see {@link InChannel}).
 */
public final class Transport implements AutoCloseable {
  static final Logger LOG = LoggerFactory.getLogger(Transport.class);
  /** Large reads (TAO-like rows, many keys) exceed gRPC's default 4 MB message limit. */
  static final int MAX_MESSAGE_BYTES = 256 << 20;

  private final Topology topology;
  private final LinkConditions links;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;
  private final boolean epoll;
  private final Dispatcher[] dispatchers;
  private final Map<HostPort, ManagedChannel> channels = new ConcurrentHashMap<>();
  private final Map<Integer, Server> servers = new ConcurrentHashMap<>();
  private final Map<Integer, Endpoint> endpoints = new ConcurrentHashMap<>();
  private final List<Endpoint> opened = new CopyOnWriteArrayList<>();
  private final String listenHost;
  private final FaultFile faults;
  private volatile boolean closed;
  private volatile org.k2bench.core.clock.ClockKind clockKind = org.k2bench.core.clock.ClockKind.LAMPORT;

  public Transport(Topology topology) {
    this(topology, null);
  }

  /**
   * @param listenHost where servers listen instead of their topology address (e.g. 0.0.0.0
   *     on a cloud machine whose topology address is a public IP it cannot bind), or null
   */
  public Transport(Topology topology, String listenHost) {
    this(topology, new LinkConditions(topology), 2, listenHost);
  }

  public Transport(Topology topology, LinkConditions links, int dispatcherThreads) {
    this(topology, links, dispatcherThreads, null);
  }

  public Transport(Topology topology, LinkConditions links, int dispatcherThreads, String listenHost) {
    this.listenHost = listenHost;
    this.topology = topology;
    this.links = links;
    // -Dk2bench.io_threads: Netty event loops of this process (default: one per core, at least 2)
    int ioThreads = Integer.getInteger("k2bench.io_threads", Math.max(2, Runtime.getRuntime().availableProcessors()));
    this.epoll = Epoll.isAvailable();
    this.boss = epoll ? new EpollEventLoopGroup(1, daemonThreads("k2b-accept"))
        : new NioEventLoopGroup(1, daemonThreads("k2b-accept"));
    this.workers = epoll ? new EpollEventLoopGroup(ioThreads, daemonThreads("k2b-io"))
        : new NioEventLoopGroup(ioThreads, daemonThreads("k2b-io"));
    // Every event loop's thread starts now, on the constructing thread (the launcher's main
    // thread in a server JVM). Started lazily, a loop's thread would be made by whichever
    // thread first registers a channel on it (a server's protocol thread, nice 2; a co-located
    // client's, nice 4) and carry every later channel's traffic at that priority.
    for (EventLoopGroup g : List.of(boss, workers)) {
      for (io.netty.util.concurrent.EventExecutor e : g) {
        e.submit(() -> { }).syncUninterruptibly();
      }
    }
    this.dispatchers = new Dispatcher[dispatcherThreads];
    for (int i = 0; i < dispatcherThreads; i++) {
      dispatchers[i] = new Dispatcher("k2b-wan-" + i);
    }
    this.faults = FaultFile.fromSystemProperty(topology, links);
  }

  private static java.util.concurrent.ThreadFactory daemonThreads(String prefix) {
    java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  public Topology topology() {
    return topology;
  }

  /** The clock every endpoint of this transport keeps (Lamport unless a system asks otherwise). */
  public org.k2bench.core.clock.ClockKind clockKind() {
    return clockKind;
  }

  /**
   * Makes every endpoint opened from now on keep a clock of this kind (the system's,
   * {@link org.k2bench.core.api.StoreSystem#clock()}); before any endpoint opens, since
   * all nodes of a run must keep the same kind.
   */
  public synchronized void useClock(org.k2bench.core.clock.ClockKind kind) {
    if (kind != clockKind && !opened.isEmpty()) {
      throw new IllegalStateException("endpoints with " + clockKind + " clocks are open; choose the clock first");
    }
    clockKind = kind;
  }

  private static volatile Transport hosting;

  /**
   * The transport of this process's servers, for clients that run inside it (the launcher's
   * co-located YCSB clients): their sessions open on it and reach the servers in process.
   */
  public static void hostClients(Transport transport) {
    hosting = transport;
  }

  /** The transport given to {@link #hostClients}, or null. */
  public static Transport hostingClients() {
    return hosting;
  }

  public LinkConditions links() {
    return links;
  }

  /**
   * Opens a server node on its topology address.
   *
   * @throws ConfigException naming the address field if the port cannot be bound
   */
  public Endpoint openServer(int serverId, Executor inbox, MessageHandler handler) {
    if (!topology.isServer(serverId)) {
      throw new IllegalArgumentException("node " + serverId + " is not a server of the topology");
    }
    Endpoint ep = register(new Endpoint(this, serverId, topology.dcOfServer(serverId), inbox, handler));
    HostPort addr = topology.address(serverId);
    String bindHost = listenHost != null ? listenHost : addr.host();
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress(bindHost, addr.port()))
        .bossEventLoopGroup(boss)
        .workerEventLoopGroup(workers)
        .channelType(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
        .directExecutor()
        .maxInboundMessageSize(MAX_MESSAGE_BYTES)
        .addService(new WireService(ep))
        .build();
    try {
      server.start();
    } catch (IOException e) {
      ep.close();
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      if (cause instanceof BindException || String.valueOf(cause.getMessage()).contains("in use")) {
        throw new ConfigException(topology.addressField(serverId), "port " + addr.port() + " on "
            + bindHost + " is in use; stop what holds it or choose other ports");
      }
      throw new ConfigException(topology.addressField(serverId), "cannot listen on " + bindHost + ":"
          + addr.port() + ": " + cause.getMessage());
    }
    servers.put(serverId, server);
    return ep;
  }

  /**
   * Opens a client node located in datacenter {@code dc}, or where {@link #locateClient}
   * put its id.
   */
  public Endpoint openClient(int clientId, int dc, Executor inbox, MessageHandler handler) {
    if (clientId < Topology.firstClientId() || clientId >= 1 << org.k2bench.core.clock.LamportClock.NODE_BITS) {
      throw new IllegalArgumentException("client id " + clientId + " outside ["
          + Topology.firstClientId() + ", 65536)");
    }
    return register(new Endpoint(this, clientId, located.getOrDefault(clientId, dc), inbox, handler));
  }

  /**
   * Places the client node {@code clientId}, when it opens, in datacenter {@code dc} whatever
   * datacenter its system's client serves it from: a client redirected to another
   * datacenter's servers stays where it is, its messages cross the wide area.
   */
  public void locateClient(int clientId, int dc) {
    located.put(clientId, dc);
  }

  private final java.util.Map<Integer, Integer> located = new java.util.concurrent.ConcurrentHashMap<>();

  private Endpoint register(Endpoint ep) {
    if (closed) {
      throw new IllegalStateException("transport closed");
    }
    if (endpoints.putIfAbsent(ep.id(), ep) != null) {
      throw new IllegalArgumentException("node id " + ep.id() + " is already open in this process");
    }
    opened.add(ep);
    return ep;
  }

  void unregister(Endpoint ep) {
    endpoints.remove(ep.id(), ep);
    opened.remove(ep);
    Server s = servers.remove(ep.id());
    if (s != null) {
      s.shutdownNow();
    }
  }

  /**
   * The node {@code id} if it is open in this process and in-process delivery is on
   * ({@code -Dk2bench.in_process=false} or {@link #wireOnly} send every message through
   * gRPC); else null.
   */
  Endpoint localEndpoint(int id) {
    return inProcess ? endpoints.get(id) : null;
  }

  private volatile boolean inProcess = !"false".equals(System.getProperty("k2bench.in_process"));

  /**
   * Every message over gRPC, also between nodes of this process (the benches measure the
   * wire). Call it before opening endpoints: channels already in use keep their path.
   */
  public Transport wireOnly() {
    inProcess = false;
    return this;
  }

  /**
   * Symmetric: A->B and B->A share a dispatcher. A release answers a ping in place and
   * sends on the reverse channel under the released channel's lock; on one thread two such
   * releases cannot wait for each other.
   */
  Dispatcher dispatcherFor(int from, int to) {
    return dispatchers[Math.floorMod(Math.min(from, to) * 31 + Math.max(from, to), dispatchers.length)];
  }

  /**
   * Opens a stream from {@code owner} to server {@code to}; what comes back goes to {@code owner}.
   * Null when it failed at once (a client's own-datacenter server that is down).
   */
  StreamObserver<Envelope> openStream(Endpoint owner, int to, OutChannel channel) {
    HostPort addr = topology.address(to);
    ManagedChannel ch = channels.computeIfAbsent(addr, a -> NettyChannelBuilder
        .forAddress(a.host(), a.port())
        .eventLoopGroup(workers)
        .channelType(epoll ? EpollSocketChannel.class : NioSocketChannel.class)
        .usePlaintext()
        .directExecutor()
        .maxInboundMessageSize(MAX_MESSAGE_BYTES)
        .build());
    var self = new java.util.concurrent.atomic.AtomicReference<StreamObserver<Envelope>>();
    var ended = new java.util.concurrent.atomic.AtomicBoolean();
    InChannel back = new InChannel(this, owner);
    // A client and a server of its own datacenter are a database driver and its database:
    // the server was up before the client started, and when its process dies the
    // connection resets, so the calls on it fail at once (connectionLost) and new ones do
    // not wait for it to come back; the application goes on, e.g. to the datacenter it is
    // redirected to. The end is noticed where the emulated delay is a local one. Calls to
    // other datacenters, and every server's, keep to the protocols' own timeouts and
    // failure detection (the papers' fail-over) and wait for peers that start later.
    boolean driver = !topology.isServer(owner.id()) && topology.dcOfServer(to) == owner.dc();
    WireGrpc.WireStub stub = WireGrpc.newStub(ch);
    StreamObserver<Envelope> stream = (driver ? stub : stub.withWaitForReady()).connect(new StreamObserver<>() {
      @Override
      public void onNext(Envelope env) {
        back.arrive(env);
      }

      @Override
      public void onError(Throwable t) {
        if (!closed && !owner.isClosed()) {
          LOG.debug("node {}: stream to {} ended: {}", owner.id(), to, t.toString());
        }
        ended(t.toString());
      }

      @Override
      public void onCompleted() {
        ended("closed by the server");
      }

      private void ended(String why) {
        long sent = owner.lastRpcId(); // before detaching: later calls go on a new stream
        ended.set(true);
        StreamObserver<Envelope> s = self.get();
        if (s != null) {
          channel.detach(s);
        }
        if (driver) {
          owner.connectionLost(to, sent, why);
        }
      }
    });
    self.set(stream);
    // Without waitForReady a call to a server that is down fails inside connect(), before
    // the stream is known here: hand back no stream, or the channel would keep a dead one.
    return ended.get() ? null : stream;
  }

  /** The server side of a stream: envelopes from one peer node to one local server. */
  private final class WireService extends WireGrpc.WireImplBase {
    private final Endpoint ep;

    WireService(Endpoint ep) {
      this.ep = ep;
    }

    @Override
    public StreamObserver<Envelope> connect(StreamObserver<Envelope> back) {
      InChannel in = new InChannel(Transport.this, ep);
      return new StreamObserver<>() {
        private int client = -1;

        @Override
        public void onNext(Envelope env) {
          if (client < 0 && !topology.isServer(env.getFrom())) {
            client = env.getFrom();
            ep.attachReturnStream(client, back);
          }
          in.arrive(env);
        }

        @Override
        public void onError(Throwable t) {
          done();
        }

        @Override
        public void onCompleted() {
          done();
          try {
            back.onCompleted();
          } catch (RuntimeException ignored) {
            // the peer is gone
          }
        }

        private void done() {
          if (client >= 0) {
            ep.detachReturnStream(client, back);
          }
        }
      };
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (faults != null) {
      faults.close();
    }
    for (Endpoint ep : opened) {
      ep.close();
    }
    for (Server s : servers.values()) {
      s.shutdownNow();
    }
    for (ManagedChannel ch : channels.values()) {
      ch.shutdownNow();
    }
    for (Dispatcher d : dispatchers) {
      d.close();
    }
    for (ManagedChannel ch : channels.values()) {
      try {
        ch.awaitTermination(2, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    workers.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
  }
}
