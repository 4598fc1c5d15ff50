package org.k2bench.ycsb;

import com.google.protobuf.ByteString;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicInteger;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.OperationFailedException;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.RunSpec;
import org.k2bench.core.api.Systems;
import org.k2bench.core.data.Column;
import org.k2bench.core.data.Row;
import org.k2bench.core.topology.ConfigException;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.transport.Transport;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * The YCSB binding for every bundled system, chosen by name. YCSB creates one instance per
 * client thread; each is one client session ({@link KvClient}) located in the configured
 * datacenter. The sessions of a process share one transport.
 *
 * <p>YCSB hands workloads a measuring wrapper around the binding, so the transactional
 * workload reaches the session through {@link #current()} (init and the workload's
 * per-thread setup run on the same client thread). The plain YCSB operations also work:
 * read = a one-key read-only transaction, insert/update = a single write.
 *
 * <p>The system, its options, the topology file and the RPC timeout are the trial's spec's
 * ({@code k2bench.spec}: its spec.json on this host). Properties, what is this process's own:
 * {@code k2bench.dc}, {@code k2bench.client_id_base} (ids of this process's sessions start
 * there), {@code k2bench.redirect_id_base} (ids of the sessions opened when a redirect sends
 * this datacenter's clients to another's servers; default right after the threads' and the
 * warm-up's), {@code k2bench.colocated}.
 */
public final class K2BenchDB extends DB {
  private static final ThreadLocal<KvClient> CURRENT = new ThreadLocal<>();
  private static final Object SHARED_LOCK = new Object();
  private static Transport shared;
  private static Topology topology;
  /** Its placement, built once (a partition placement is a table). */
  private static org.k2bench.core.topology.Placement placement;
  private static volatile int localDc = -1;
  private static int users;
  private static final AtomicInteger NEXT_SESSION = new AtomicInteger();
  private static final AtomicInteger NEXT_REDIRECTED = new AtomicInteger();
  private static final ThreadLocal<K2BenchDB> SELF = new ThreadLocal<>();

  private KvClient client;
  private StoreSystem system;
  private ServerOptions options;
  private Transport transport;
  private int redirectIdBase;
  /** This thread's sessions by the datacenter whose servers they use (its own, redirects). */
  private final Map<Integer, KvClient> byServingDc = new HashMap<>();

  /** The session of the calling YCSB client thread. */
  public static KvClient current() {
    KvClient c = CURRENT.get();
    if (c == null) {
      throw new IllegalStateException("no k2bench session on this thread; is db=" + K2BenchDB.class.getName() + "?");
    }
    return c;
  }

  /** The calling thread's binding, or null outside a YCSB client thread (tests). */
  static K2BenchDB self() {
    return SELF.get();
  }

  /** The trial's spec, from the file {@code k2bench.spec} names; a one-line ConfigException otherwise. */
  static RunSpec spec(Properties p) {
    return RunSpec.read(Path.of(required(p, "k2bench.spec")));
  }

  /** What a session is configured with: all of it from the trial's spec. */
  record Config(StoreSystem system, ServerOptions options, Path topology) {}

  static Config config(Properties p) {
    RunSpec spec = spec(p);
    org.k2bench.core.testing.Mutants.select(spec); // before any system code runs
    StoreSystem system = Systems.byName(spec.file() + ": system.name", spec.system().name());
    // the run's keys, timeouts and the system's options: the client library's share of them
    return new Config(system, spec.serverOptions(system), spec.resolve(spec.files().topology()));
  }

  /** The placement of this process's topology, once a session exists. */
  static org.k2bench.core.topology.Placement placement() {
    synchronized (SHARED_LOCK) {
      return placement;
    }
  }

  /** The datacenter this process's sessions are in. */
  static int localDc() {
    return localDc;
  }

  static String required(Properties p, String name) {
    String v = p.getProperty(name);
    if (v == null || v.isBlank()) {
      throw new ConfigException(name, "missing; set it with -p " + name + "=...");
    }
    return v;
  }

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    try {
      Config config = config(p);
      StoreSystem system = config.system();
      ServerOptions options = config.options();
      long timeout = options.rpcTimeoutMs();
      int base = Integer.parseInt(p.getProperty("k2bench.client_id_base", String.valueOf(Topology.firstClientId())));
      int threadCount = Integer.parseInt(p.getProperty("threadcount", "1"));
      // after the threads' ids and the warm-up's (connectToEveryServer)
      redirectIdBase = Integer.parseInt(p.getProperty("k2bench.redirect_id_base",
          String.valueOf(base + threadCount + 1)));
      Transport t;
      int dc;
      synchronized (SHARED_LOCK) {
        if (shared == null && colocated(p)) {
          // Inside a server process: its servers' transport. Messages to the servers it runs
          // stay in process; to others (a JVM per datacenter) they cross gRPC, once they are
          // up: the orchestrator starts clients only after every server's ready line.
          Transport hosting = Transport.hostingClients();
          if (hosting == null) {
            throw new DBException("k2bench.colocated: this process runs no servers; run the client "
                + "in its own process (k2bench.colocated=false)");
          }
          topology = hosting.topology();
          system.requirePlacement(topology);
          placement = org.k2bench.core.topology.Placement.of(topology);
          shared = hosting;
        } else if (shared == null) {
          topology = TopologyLoader.load(config.topology());
          system.requirePlacement(topology); // before connecting to any server
          placement = org.k2bench.core.topology.Placement.of(topology);
          dc = topology.dcIndex("k2bench.dc", required(p, "k2bench.dc"));
          shared = new Transport(topology);
          shared.useClock(system.clock());
          int threads = Integer.parseInt(p.getProperty("threadcount", "1"));
          connectToEveryServer(shared, topology, base + threads, dc, timeout, START_PATIENCE_MS);
        }
        users++;
        t = shared;
      }
      dc = topology.dcIndex("k2bench.dc", required(p, "k2bench.dc"));
      localDc = dc;
      client = system.newClient(t, base + NEXT_SESSION.getAndIncrement(), dc, options);
      CURRENT.set(client);
      this.system = system;
      this.options = options;
      this.transport = t;
      byServingDc.put(dc, client);
      SELF.set(this);
    } catch (ConfigException e) {
      throw new DBException(e.getMessage());
    } catch (NumberFormatException e) {
      throw new DBException("k2bench.client_id_base/redirect_id_base/threadcount: not a number: "
          + e.getMessage());
    }
  }

  /**
   * The session the calling thread's next operation uses instead of {@code now}: {@code now}
   * unless a redirect in the faults file sends this datacenter's clients to another
   * datacenter's servers (a kill with {@code clients: redirect}: the replica-placement
   * paper's application servers sending "requests ... to the closest DC", §VIII-E). Then a
   * session of that datacenter, opened on first use with an id of its own and located here,
   * so each of its messages crosses the wide area between the two.
   */
  static KvClient serving(K2BenchDB db, KvClient now) {
    if (db == null) {
      return now;
    }
    int to = db.transport.links().servingDc(localDc);
    if (to == now.dc()) {
      return now;
    }
    return db.byServingDc.computeIfAbsent(to, dc -> {
      int id = db.redirectIdBase + NEXT_REDIRECTED.getAndIncrement();
      db.transport.locateClient(id, localDc);
      return db.system.newClient(db.transport, id, dc, db.options);
    });
  }

  /**
   * How long a client waits at start-up for every server to answer its pings, at least: a
   * machine starting a dozen JVMs at once (every datacenter's servers and clients on two
   * cores) left a ready server unanswered for over 2 s, the RPC timeout of a fault test.
   */
  static final long START_PATIENCE_MS = 60_000;

  /**
   * Opens this process's connections to every server and exercises the transport before
   * the first operation, so connection set-up and a cold JVM's first messages (seconds on
   * a loaded machine) are not measured; also fails, naming the server, if one is
   * unreachable for max(RPC timeout, {@code startPatienceMs}: {@link #START_PATIENCE_MS}) (the orchestrator waits
   * longer for its clients). Uses one client id past the sessions' ids ({@code base + threadcount}).
   */
  static void connectToEveryServer(Transport t, Topology topology, int warmUpId, int dc, long timeoutMs,
      long startPatienceMs) throws DBException {
    org.k2bench.core.transport.Endpoint ep = t.openClient(warmUpId, dc, Runnable::run, m -> { });
    long patienceMs = Math.max(timeoutMs, startPatienceMs);
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(patienceMs);
    try {
      for (int round = 0; round < 3; round++) {
        List<java.util.concurrent.CompletableFuture<Long>> pings = new java.util.ArrayList<>();
        for (int server = 0; server < topology.numServers(); server++) {
          pings.add(ep.ping(server, 0));
        }
        for (int server = 0; server < topology.numServers(); server++) {
          try {
            awaitPing(ep, server, pings.get(server), deadline);
          } catch (java.util.concurrent.TimeoutException e) {
            throw new DBException(topology.addressField(server) + ": server " + topology.address(server)
                + " did not answer a ping within " + patienceMs + " ms");
          } catch (java.util.concurrent.ExecutionException e) {
            throw new DBException(topology.addressField(server) + ": server " + topology.address(server)
                + (e.getCause() instanceof org.k2bench.core.transport.ConnectionLostException
                ? " refused the connection for " + patienceMs + " ms: " : " answered a ping with an error: ")
                + e.getCause().getMessage());
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new DBException("interrupted while connecting to the servers");
          }
        }
      }
    } finally {
      ep.close();
    }
  }

  /**
   * Waits for {@code ping} until {@code deadline} (System.nanoTime). A server of this
   * datacenter that is not listening yet refuses the connection at once
   * (Transport.openStream), so it is asked again every 100 ms until then.
   */
  private static void awaitPing(org.k2bench.core.transport.Endpoint ep, int server,
      java.util.concurrent.CompletableFuture<Long> ping, long deadline)
      throws java.util.concurrent.ExecutionException, java.util.concurrent.TimeoutException, InterruptedException {
    while (true) {
      try {
        ping.get(Math.max(0, deadline - System.nanoTime()), java.util.concurrent.TimeUnit.NANOSECONDS);
        return;
      } catch (java.util.concurrent.ExecutionException e) {
        if (!(e.getCause() instanceof org.k2bench.core.transport.ConnectionLostException)
            || System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(100);
        ping = ep.ping(server, 0);
      }
    }
  }

  @Override
  public void cleanup() throws DBException {
    if (client != null) {
      byServingDc.values().forEach(KvClient::close);
      byServingDc.clear();
      CURRENT.remove();
      SELF.remove();
    }
    synchronized (SHARED_LOCK) {
      if (--users == 0 && shared != null) {
        if (shared != Transport.hostingClients()) {
          shared.close(); // the servers' own transport stays open
        }
        shared = null;
      }
    }
  }

  /** {@code k2bench.colocated}: this client runs inside the servers' process (default false). */
  static boolean colocated(Properties p) {
    return Boolean.parseBoolean(p.getProperty("k2bench.colocated", "false"));
  }

  static Row toRow(Map<String, ByteIterator> values) {
    Row.Builder r = Row.newBuilder();
    values.forEach((k, v) -> r.addColumns(Column.newBuilder().setName(k).setValue(ByteString.copyFrom(v.toArray()))));
    return r.build();
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      Row row = client.readTxn(List.of(key)).rows().get(key);
      for (Column c : row.getColumnsList()) {
        if (fields == null || fields.contains(c.getName())) {
          result.put(c.getName(), new ByteArrayByteIterator(c.getValue().toByteArray()));
        }
      }
      return Status.OK;
    } catch (OperationFailedException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      client.write(key, toRow(values));
      return Status.OK;
    } catch (OperationFailedException e) {
      return Status.ERROR;
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    return update(table, key, values);
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    return Status.NOT_IMPLEMENTED;
  }

  @Override
  public Status delete(String table, String key) {
    return Status.NOT_IMPLEMENTED;
  }
}
