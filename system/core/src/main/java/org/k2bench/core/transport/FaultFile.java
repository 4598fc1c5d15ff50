package org.k2bench.core.transport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import org.k2bench.core.topology.Topology;

/**
 * Network faults injected into a running process: the orchestrator writes the
 * faults in force into one JSON file per host, and every transport of that host applies
 * them to its links within a few milliseconds. Selected with
 * {@code -Dk2bench.faults_file=<path>}.
 *
 * <pre>
 * {"links": [{"from": "VA", "to": "LDN", "extra_ms": 200}],           # latency spike, one way
 *  "partitions": [{"a": "VA", "b": "CA", "until_ms": 1795...,         # epoch ms of the heal
 *                  "mode": "hold"}],                                  # hold (deliver at heal) | drop
 *  "redirects": [{"from": "VA", "to": "CA"}]}                        # VA's clients use CA's servers
 * </pre>
 *
 * The file is replaced atomically and always holds the complete set: an empty object
 * heals everything.
 */
final class FaultFile implements AutoCloseable {
  // A change of the file takes effect up to this late (a partition still heals at its
  // until_ms exactly). Every process of a run polls; at 10 ms the poller took about a
  // tenth of the CPU a server spent on protocol and I/O in a smoke run.
  private static final long POLL_MS = 50;

  private final Path file;
  private final Topology topology;
  private final LinkConditions links;
  private final Thread thread;
  private volatile boolean running = true;
  private Object lastSeen;

  FaultFile(Path file, Topology topology, LinkConditions links) {
    this.file = file;
    this.topology = topology;
    this.links = links;
    this.thread = new Thread(this::loop, "k2b-faults");
    thread.setDaemon(true);
    thread.start();
  }

  /** The watcher of {@code k2bench.faults_file}, or null if the property is not set. */
  static FaultFile fromSystemProperty(Topology topology, LinkConditions links) {
    String f = System.getProperty("k2bench.faults_file");
    return f == null || f.isEmpty() ? null : new FaultFile(Path.of(f), topology, links);
  }

  private void loop() {
    while (running) {
      try {
        // The file is replaced by a rename: a new inode, even within the same mtime tick.
        var attrs = Files.readAttributes(file, java.nio.file.attribute.BasicFileAttributes.class);
        Object seen = java.util.List.of(String.valueOf(attrs.fileKey()), attrs.lastModifiedTime());
        if (!seen.equals(lastSeen)) {
          apply(Files.readString(file));
          lastSeen = seen;
        }
      } catch (NoSuchFileException e) {
        // no faults yet
      } catch (IOException | RuntimeException e) {
        Transport.LOG.warn("faults file {}: {}", file, e.toString());
      }
      try {
        Thread.sleep(POLL_MS);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Replaces the faults in force with those of {@code json}. */
  void apply(String json) throws IOException {
    JsonNode root = new ObjectMapper().readTree(json);
    links.clearFaults();
    if (root == null) {
      links.redirect(java.util.Map.of());
      return;
    }
    for (JsonNode l : root.path("links")) {
      links.setExtraDelayMs(dc(l, "from"), dc(l, "to"), l.path("extra_ms").asDouble());
    }
    long nowMs = System.currentTimeMillis();
    long nowNanos = System.nanoTime();
    for (JsonNode p : root.path("partitions")) {
      long until = nowNanos + Math.max(0, p.path("until_ms").asLong() - nowMs) * 1_000_000L;
      links.partition(dc(p, "a"), dc(p, "b"), until, "drop".equals(p.path("mode").asText("hold")));
    }
    java.util.Map<Integer, Integer> redirects = new java.util.HashMap<>();
    for (JsonNode r : root.path("redirects")) {
      redirects.put(dc(r, "from"), dc(r, "to"));
    }
    links.redirect(redirects);
    Transport.LOG.info("faults now in force: {}", json.strip());
  }

  private int dc(JsonNode n, String field) {
    return topology.dcIndex("faults." + field, n.path(field).asText());
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
  }
}
