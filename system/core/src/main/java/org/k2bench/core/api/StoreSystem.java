package org.k2bench.core.api;

import org.k2bench.core.transport.Transport;

/**
 * A bundled system: a server-side protocol plus its client library, found by the launcher
 * through {@link java.util.ServiceLoader}. Adding a system means adding a module with one
 * implementation of this interface; no other system changes.
 */
public interface StoreSystem {
  /** The name used on the command line and in experiment files, e.g. {@code k2}. */
  String name();

  String description();

  ServerNode startServer(Transport transport, int serverId, ServerOptions options);

  KvClient newClient(Transport transport, int clientId, int dc, ServerOptions options);
}
