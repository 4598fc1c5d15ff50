package org.k2bench.core.transport;

/** A message that does not parse as the type its envelope names. */
public final class MalformedMessageException extends RuntimeException {
  public MalformedMessageException(String message) {
    super(message);
  }
}
