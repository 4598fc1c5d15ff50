package org.k2bench.core.api;

import java.util.Map;
import org.k2bench.core.transport.Endpoint;

/** A running server of some system. */
public interface ServerNode extends AutoCloseable {
  Endpoint endpoint();

  /**
   * Protocol counters for tests and metrics (e.g. {@code remote_reads_served},
   * {@code remote_read_waits}, {@code gc_removed}). Safe to call from any thread.
   */
  Map<String, Long> stats();

  @Override
  void close();
}
