package org.k2bench.ycsb;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.htrace.core.HTraceConfiguration;
import org.apache.htrace.core.Tracer;
import site.ycsb.ClientThread;
import site.ycsb.DB;
import site.ycsb.DBFactory;
import site.ycsb.StatusThread;
import site.ycsb.Workload;
import site.ycsb.measurements.Measurements;

/**
 * YCSB's client run inside another process (the server process of a local run, see the
 * launcher's ColocatedClients): the same YCSB ClientThreads, pacing, DB and workload as
 * {@code site.ycsb.Client}, without its {@code System.exit}. Each instance is loaded by its
 * own class loader, so YCSB's and this package's statics are its own.
 *
 * <p>Arguments are YCSB's, the subset the orchestrator passes: {@code -t} or {@code -load},
 * {@code -s}, {@code -P file}, {@code -p name=value}, {@code -threads n}, {@code -target n}.
 */
public final class InProcessClient {
  /**
   * Client threads run below the servers' and the WAN emulation's threads when they share
   * the cores (the paper's clients had machines of their own): the orchestrator starts
   * every JVM with -XX:ThreadPriorityPolicy=1 and this priority mapped to nice 4
   * (k2bench/trial/jvm.py, PRIORITY_JVM_ARGS); without those flags it changes nothing.
   */
  static final int CLIENT_PRIORITY = Thread.MIN_PRIORITY;

  private InProcessClient() {}

  /** Runs the client to its end; the process exit code YCSB's Client would have given. */
  public static int run(String[] args) throws Exception {
    Properties props = new Properties();
    boolean transactions = true;
    boolean status = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "-t" -> transactions = true;
        case "-load" -> transactions = false;
        case "-s" -> status = true;
        case "-P" -> {
          try (InputStream in = Files.newInputStream(Path.of(value(args, ++i, "-P")))) {
            Properties file = new Properties();
            file.load(in);
            file.forEach(props::putIfAbsent);
          } catch (IOException e) {
            System.err.println("-P: cannot read " + args[i] + ": " + e.getMessage());
            return 1;
          }
        }
        case "-p" -> {
          String kv = value(args, ++i, "-p");
          int eq = kv.indexOf('=');
          if (eq < 1) {
            System.err.println("-p: '" + kv + "' is not name=value");
            return 1;
          }
          props.setProperty(kv.substring(0, eq), kv.substring(eq + 1));
        }
        case "-threads" -> props.setProperty("threadcount", value(args, ++i, "-threads"));
        case "-target" -> props.setProperty("target", value(args, ++i, "-target"));
        default -> {
          System.err.println(args[i] + ": not an option of the in-process client (-t, -load, -s, -P, -p, "
              + "-threads, -target)");
          return 1;
        }
      }
    }
    props.setProperty("dotransactions", String.valueOf(transactions));
    int threads = Integer.parseInt(props.getProperty("threadcount", "1"));
    int target = Integer.parseInt(props.getProperty("target", "0"));
    double perThreadPerMs = target > 0 ? target / 1000.0 / threads : -1;
    long opcount = Long.parseLong(props.getProperty(transactions ? "operationcount" : "insertcount",
        props.getProperty("recordcount", "0")));

    Measurements.setProperties(props);
    Workload workload = (Workload) Class.forName(props.getProperty("workload"), true,
        InProcessClient.class.getClassLoader()).getDeclaredConstructor().newInstance();
    workload.init(props);
    Tracer tracer = new Tracer.Builder("YCSB in process")
        .conf(HTraceConfiguration.EMPTY).build();
    CountDownLatch complete = new CountDownLatch(threads);
    List<ClientThread> clients = new ArrayList<>();
    int opsPerThread = (int) Math.min(Integer.MAX_VALUE, opcount / threads);
    for (int id = 0; id < threads; id++) {
      DB db = DBFactory.newDB(props.getProperty("db"), props, tracer);
      int ops = opsPerThread + (id < opcount % threads ? 1 : 0);
      ClientThread c = new ClientThread(db, transactions, workload, props, ops, perThreadPerMs, complete);
      c.setThreadId(id);
      c.setThreadCount(threads);
      clients.add(c);
    }
    StatusThread statusThread = null;
    if (status) {
      statusThread = new StatusThread(complete, clients, "", false,
          Integer.parseInt(props.getProperty("status.interval", "10")), false);
      statusThread.start();
    }
    List<Thread> running = new ArrayList<>();
    for (ClientThread c : clients) {
      Thread t = new Thread(c, "ClientThread");
      t.setPriority(CLIENT_PRIORITY);
      running.add(t);
      t.start();
    }
    for (Thread t : running) {
      t.join();
    }
    if (statusThread != null) {
      statusThread.interrupt();
      statusThread.join();
    }
    workload.cleanup();
    return 0;
  }

  private static String value(String[] args, int i, String option) {
    if (i >= args.length) {
      throw new IllegalArgumentException(option + " needs a value");
    }
    return args[i];
  }
}
