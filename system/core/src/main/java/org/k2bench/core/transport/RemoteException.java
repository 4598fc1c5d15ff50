package org.k2bench.core.transport;

/** The peer answered a call with an error instead of a reply. */
public final class RemoteException extends RuntimeException {
  public RemoteException(String message) {
    super(message);
  }
}
