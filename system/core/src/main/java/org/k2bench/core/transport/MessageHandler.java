package org.k2bench.core.transport;

/** A node's protocol logic: receives every non-reply message addressed to the node. */
@FunctionalInterface
public interface MessageHandler {
  void handle(Incoming message);
}
