package org.k2bench.core.api;

/** An operation did not complete (timeout, unreachable server, server-side error). */
public final class OperationFailedException extends RuntimeException {
  public OperationFailedException(String message, Throwable cause) {
    super(message, cause);
  }
}
