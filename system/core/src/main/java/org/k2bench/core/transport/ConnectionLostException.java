package org.k2bench.core.transport;

/**
 * A client's connection to a server of its datacenter ended with calls unanswered: the
 * server's process died (or is not listening yet), so the calls failed at once.
 */
public final class ConnectionLostException extends RuntimeException {
  public ConnectionLostException(String message) {
    super(message);
  }
}
