package org.k2bench.launcher;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * YCSB clients inside the server process of a local run (the orchestrator's co-located
 * clients): messages between them and the servers are delivered in process, with the same
 * emulated delays, instead of through gRPC and the kernel, which cost more CPU than the
 * protocols on a 2-core machine.
 *
 * <p>The orchestrator writes {@code <dir>/<name>.args} (YCSB's arguments, one per line,
 * written atomically); a client starts for each, in its own class loader (YCSB's and the
 * binding's statics are its own: one client per datacenter as in separate processes) and
 * thread group, whose standard output and error go to {@code <name>.stdout} and
 * {@code <name>.stderr}; its exit code lands in {@code <name>.exit} when it ends.
 */
final class ColocatedClients implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ColocatedClients.class);
  /** Packages each client loads itself; everything else (the transport, protocols) is shared. */
  private static final List<String> OWN = List.of("site.ycsb.", "org.k2bench.ycsb.");
  private static final Map<ThreadGroup, PrintStream[]> ROUTES = new ConcurrentHashMap<>();

  private final Path dir;
  private final URL[] classPath;
  private final Set<String> started = ConcurrentHashMap.newKeySet();
  private final Thread watcher;
  private volatile boolean closed;

  ColocatedClients(Path dir) throws IOException {
    this.dir = dir;
    Files.createDirectories(dir);
    this.classPath = new URL[] {ColocatedClients.class.getProtectionDomain().getCodeSource().getLocation()};
    routeStandardStreams();
    this.watcher = new Thread(this::watch, "k2bench-colocated-clients");
    watcher.setDaemon(true);
    watcher.start();
  }

  private void watch() {
    while (!closed) {
      try (var files = Files.list(dir)) {
        files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".args"))
            .map(n -> n.substring(0, n.length() - ".args".length()))
            .filter(started::add).forEach(this::start);
        Thread.sleep(20);
      } catch (IOException e) {
        LOG.warn("cannot list {}: {}", dir, e.toString());
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private void start(String name) {
    String[] args;
    PrintStream out;
    PrintStream err;
    try {
      args = Files.readAllLines(dir.resolve(name + ".args")).stream().filter(s -> !s.isEmpty())
          .toArray(String[]::new);
      out = new PrintStream(new FileOutputStream(dir.resolve(name + ".stdout").toFile()), true, StandardCharsets.UTF_8);
      err = new PrintStream(new FileOutputStream(dir.resolve(name + ".stderr").toFile()), true, StandardCharsets.UTF_8);
    } catch (IOException e) {
      LOG.error("client {}: {}", name, e.toString());
      exit(name, 1);
      return;
    }
    ThreadGroup group = new ThreadGroup("client-" + name);
    ROUTES.put(group, new PrintStream[] {out, err});
    Thread main = new Thread(group, () -> {
      int code = 1;
      try (URLClassLoader loader = new OwnPackagesFirst(classPath, ColocatedClients.class.getClassLoader())) {
        Class<?> client = loader.loadClass("org.k2bench.ycsb.InProcessClient");
        code = (int) client.getMethod("run", String[].class).invoke(null, (Object) args);
      } catch (java.lang.reflect.InvocationTargetException e) {
        e.getCause().printStackTrace();
      } catch (Exception | LinkageError e) {
        e.printStackTrace();
      } finally {
        out.flush();
        err.flush();
        exit(name, code);
      }
    }, "client-" + name);
    // below the servers, as its ClientThreads (InProcessClient.CLIENT_PRIORITY): every thread
    // the client starts inherits it. Nothing may raise one back (that needs root, so the
    // outcome would depend on the user): threads doing server or emulation work are made by
    // the launcher's main thread, before any client starts (the e2e test checks their nice).
    main.setPriority(Thread.MIN_PRIORITY);
    main.start();
  }

  private void exit(String name, int code) {
    try {
      Path tmp = dir.resolve(name + ".exit.tmp");
      Files.writeString(tmp, code + "\n");
      Files.move(tmp, dir.resolve(name + ".exit"), StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      LOG.error("client {}: cannot write its exit code: {}", name, e.toString());
    }
  }

  @Override
  public void close() {
    closed = true;
    watcher.interrupt();
  }

  /** Replaces System.out and System.err, once, by streams that route by thread group. */
  private static synchronized void routeStandardStreams() {
    if (System.out instanceof Routed) {
      return;
    }
    System.setOut(new Routed(System.out, 0));
    System.setErr(new Routed(System.err, 1));
  }

  /** Writes to the stream of the writing thread's client, or to the process's own. */
  private static final class Routed extends PrintStream {
    Routed(PrintStream fallback, int which) {
      super(new OutputStream() {
        private PrintStream target() {
          for (ThreadGroup g = Thread.currentThread().getThreadGroup(); g != null; g = g.getParent()) {
            PrintStream[] r = ROUTES.get(g);
            if (r != null) {
              return r[which];
            }
          }
          return fallback;
        }

        @Override
        public void write(int b) {
          try {
            target().write(b);
          } catch (RuntimeException e) {
            // a closed stream: nothing to do
          }
        }

        @Override
        public void write(byte[] b, int off, int len) {
          target().write(b, off, len);
        }

        @Override
        public void flush() {
          target().flush();
        }
      }, true, StandardCharsets.UTF_8);
    }
  }

  /** Loads the client's own packages itself, everything else from the parent. */
  private static final class OwnPackagesFirst extends URLClassLoader {
    OwnPackagesFirst(URL[] urls, ClassLoader parent) {
      super(urls, parent);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (OWN.stream().noneMatch(name::startsWith)) {
        return super.loadClass(name, resolve);
      }
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null) {
          c = findClass(name);
        }
        if (resolve) {
          resolveClass(c);
        }
        return c;
      }
    }
  }
}
