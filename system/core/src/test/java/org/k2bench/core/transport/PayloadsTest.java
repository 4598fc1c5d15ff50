package org.k2bench.core.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import org.junit.jupiter.api.Test;
import org.k2bench.core.transport.proto.Ping;
import org.k2bench.core.transport.proto.Pong;
import org.k2bench.core.txn.proto.Prepare;
import org.k2bench.core.txn.proto.Prepared;

/** The cached type test and unpacking agree with protobuf's own {@link Any#is}/{@link Any#unpack}. */
class PayloadsTest {
  @Test
  void matchesExactlyTheMessageTypeAsAnyIsDoes() {
    Any prepared = Any.pack(Prepared.getDefaultInstance());
    assertTrue(Payloads.is(prepared, Prepared.class));
    // "k2bench.txn.Prepare" is a prefix of "k2bench.txn.Prepared": a prefix is no match
    assertFalse(Payloads.is(prepared, Prepare.class));
    assertFalse(Payloads.is(Any.pack(Prepare.getDefaultInstance()), Prepared.class));
    assertFalse(Payloads.is(prepared, Ping.class));
    for (Any any : new Any[] {prepared, Any.pack(Ping.getDefaultInstance()),
        Any.pack(Pong.getDefaultInstance(), "example.org/prefix"),
        Any.newBuilder().setTypeUrl("k2bench.transport.Pong").build(),
        Any.newBuilder().setTypeUrl("x/k2bench.transport.Pongs").build(),
        Any.newBuilder().setTypeUrl("a/b/k2bench.transport.Pong").build(),
        Any.newBuilder().setTypeUrl("/k2bench.transport.Pong").build()}) {
      for (Class<? extends com.google.protobuf.Message> c : java.util.List.of(Prepared.class, Prepare.class,
          Ping.class, Pong.class)) {
        assertEquals(any.is(c), Payloads.is(any, c), any.getTypeUrl() + " is " + c.getSimpleName());
      }
    }
  }

  @Test
  void unpacksTheValueAndRefusesAnotherType() throws InvalidProtocolBufferException {
    Ping ping = Ping.newBuilder().setSentNanos(42).build();
    Any any = Any.pack(ping);
    assertEquals(ping, Payloads.unpack(any, Ping.class));
    assertThrows(InvalidProtocolBufferException.class, () -> Payloads.unpack(any, Pong.class));
    Any garbage = Any.newBuilder().setTypeUrl(any.getTypeUrl())
        .setValue(com.google.protobuf.ByteString.copyFrom(new byte[] {(byte) 0xff})).build();
    assertThrows(InvalidProtocolBufferException.class, () -> Payloads.unpack(garbage, Ping.class));
  }

  @Test
  void packsAsAnyPackDoes() {
    Ping ping = Ping.newBuilder().setSentNanos(7).build();
    for (com.google.protobuf.Message m : java.util.List.of(ping, Prepared.getDefaultInstance(),
        Prepare.getDefaultInstance(), ping, Pong.getDefaultInstance())) {
      assertEquals(Any.pack(m), Payloads.pack(m), m.getClass().getSimpleName());
    }
  }
}
