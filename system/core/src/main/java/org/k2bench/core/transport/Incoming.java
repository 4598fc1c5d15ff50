package org.k2bench.core.transport;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;

/** A message delivered to a node: its sender, payload, and a way to answer it. */
public final class Incoming {
  private final Endpoint endpoint;
  private final int from;
  private final long rpcId;
  private final Any payload;

  Incoming(Endpoint endpoint, int from, long rpcId, Any payload) {
    this.endpoint = endpoint;
    this.from = from;
    this.rpcId = rpcId;
    this.payload = payload;
  }

  public int from() {
    return from;
  }

  public boolean is(Class<? extends Message> type) {
    return Payloads.is(payload, type);
  }

  public String typeName() {
    String url = payload.getTypeUrl();
    return url.substring(url.lastIndexOf('/') + 1);
  }

  public <T extends Message> T as(Class<T> type) {
    try {
      return Payloads.unpack(payload, type);
    } catch (InvalidProtocolBufferException e) {
      throw new MalformedMessageException("malformed " + typeName() + " from node " + from + ": "
          + e.getMessage());
    }
  }

  /** Whether the sender waits for an answer. */
  public boolean expectsReply() {
    return rpcId != 0;
  }

  public void reply(Message message) {
    endpoint.sendReply(from, rpcId, message, null);
  }

  public void replyError(String error) {
    endpoint.sendReply(from, rpcId, null, error);
  }

  @Override
  public String toString() {
    return typeName() + " from " + from;
  }
}
