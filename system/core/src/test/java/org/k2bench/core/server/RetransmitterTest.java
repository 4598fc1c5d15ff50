package org.k2bench.core.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.IntPredicate;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.Transport;
import org.k2bench.core.txn.proto.Notify;
import org.k2bench.core.txn.proto.ReplicateAck;
import org.k2bench.core.testing.TestOptions;

/**
 * The retransmitter between VA and TYO over the emulated WAN (RTT 16 ms at 1/10 of the
 * paper's matrix), with links that drop: sent until answered, one call in flight per entry
 * with a growing timeout, parked while the peer is suspected, abandoned past the caps,
 * and never sent again once the receiver answered with an error.
 */
@Tag("alone") // bounds on timing from above: run with no other test class beside it (system/pom.xml)
class RetransmitterTest {
  static final int VA = 0;
  static final int TYO = 4;
  static final long BASE_MS = 50;
  static final long CAP_MS = 400;
  Transport transport;
  Probe sender;
  Probe receiver;
  final AtomicInteger received = new AtomicInteger();
  /** How the receiver answers: "ack", "error" or "none". */
  volatile String answer = "ack";

  final class Probe extends ServerActor {
    Probe(Transport transport, int id, boolean receives) {
      super("probe", transport, id, TestOptions.defaults(), key -> false);
      start();
    }

    @Override
    protected void handle(Incoming m) {
      received.incrementAndGet();
      if (m.expectsReply()) {
        switch (answer) {
          case "ack" -> m.reply(ReplicateAck.getDefaultInstance());
          case "error" -> m.replyError("committed and collected here");
          default -> { }
        }
      }
    }

    /** Runs {@code s} on the server thread and returns its result. */
    <T> T on(Supplier<T> s) {
      try {
        return thread.submit(s::get).get(5, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    }
  }

  @BeforeEach
  void start() {
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000).withRttScale(0.1));
    transport = new Transport(t);
    sender = new Probe(transport, t.serverId(VA, 0), false);
    receiver = new Probe(transport, t.serverId(TYO, 0), true);
  }

  @AfterEach
  void stop() {
    sender.close();
    receiver.close();
    transport.close();
  }

  Retransmitter retx(IntPredicate suspected) {
    return new Retransmitter(sender, BASE_MS, CAP_MS, suspected);
  }

  int to() {
    return transport.topology().serverId(TYO, 0);
  }

  static Notify msg(long v) {
    return Notify.newBuilder().setVersion(v).build();
  }

  void drop(boolean on) {
    transport.links().partition(VA, TYO, on ? Long.MAX_VALUE : 0, on);
  }

  long stat(String name) {
    return sender.stats().getOrDefault(name, 0L);
  }

  static void await(BooleanSupplier c, long ms, String what) {
    long deadline = System.currentTimeMillis() + ms;
    while (!c.getAsBoolean()) {
      assertTrue(System.currentTimeMillis() < deadline, what);
      sleep(10);
    }
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aMessageLostOnADroppingLinkIsSentUntilAcknowledgedWithOneCallInFlight() {
    Retransmitter r = retx(null);
    drop(true);
    AtomicInteger acks = new AtomicInteger();
    Retransmitter.Handle h = sender.on(() -> r.call(to(), msg(1), a -> acks.incrementAndGet(), e -> { }));
    List<Integer> inFlight = new ArrayList<>();
    long end = System.currentTimeMillis() + 1_300;
    while (System.currentTimeMillis() < end) {
      inFlight.add(sender.on(() -> sender.ep.pendingCalls()));
      sleep(5);
    }
    assertEquals(0, received.get(), "nothing crosses the dropping link");
    assertTrue(inFlight.stream().allMatch(n -> n <= 1), "one call in flight at a time: " + inFlight);
    int attempts = sender.on(h::attempts);
    // 50, 100, 200, 400, 400 ms ...: about 5 attempts in 1.3 s, not 26 at a fixed 50 ms.
    assertTrue(attempts >= 3 && attempts <= 8, "the timeout doubles: " + attempts + " attempts");
    assertEquals(CAP_MS, (long) sender.on(h::backoffMs), "up to the cap");
    assertEquals(attempts - 1, stat("retransmits"));
    assertEquals(1L, sender.on(() -> r.gauges().get("retransmit_pending")));
    drop(false);
    await(() -> acks.get() == 1, 3 * CAP_MS, "acknowledged once the link heals");
    sleep(3 * CAP_MS);
    assertEquals(1, acks.get(), "answered once");
    assertTrue(sender.on(h::done));
    assertEquals(0L, sender.on(() -> r.gauges().get("retransmit_pending")));
    assertEquals(0, (int) sender.on(() -> sender.ep.pendingCalls()), "no call left at the endpoint");
    assertEquals(1, received.get(), "not sent again after the ack");
  }

  @Test
  void aLostAckIsRepairedByTheNextAttempt() {
    Retransmitter r = retx(null);
    answer = "none"; // the receiver gets it but its ack is lost
    AtomicInteger acks = new AtomicInteger();
    sender.on(() -> r.call(to(), msg(2), a -> acks.incrementAndGet(), e -> { }));
    await(() -> received.get() >= 3, 3_000, "the receiver gets it again and again");
    answer = "ack";
    await(() -> acks.get() == 1, 3 * CAP_MS, "the next attempt is acknowledged");
  }

  @Test
  void anErrorReplyEndsTheEntry() {
    Retransmitter r = retx(null);
    answer = "error";
    AtomicInteger refused = new AtomicInteger();
    AtomicInteger acks = new AtomicInteger();
    Retransmitter.Handle h = sender.on(() -> r.call(to(), msg(3), a -> acks.incrementAndGet(),
        e -> refused.incrementAndGet()));
    await(() -> refused.get() == 1, 2_000, "refused");
    sleep(3 * CAP_MS);
    assertEquals(1, received.get(), "the receiver handled it: not sent again");
    assertEquals(0, acks.get());
    assertTrue(sender.on(h::done));
    assertEquals(1, stat("retransmits_refused"));
    assertEquals(0L, sender.on(() -> r.gauges().get("retransmit_pending")));
  }

  @Test
  void entriesForASuspectedDatacenterWaitParkedUntilKicked() {
    AtomicBoolean suspected = new AtomicBoolean(true);
    Retransmitter r = retx(dc -> dc == TYO && suspected.get());
    AtomicInteger acks = new AtomicInteger();
    List<Retransmitter.Handle> hs = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      long v = i;
      hs.add(sender.on(() -> r.call(to(), msg(v), a -> acks.incrementAndGet(), e -> { })));
    }
    sleep(3 * CAP_MS);
    assertEquals(0, received.get(), "nothing is sent to a suspected datacenter");
    assertEquals(0, (int) sender.on(() -> sender.ep.pendingCalls()), "no call is open toward it");
    assertEquals(5L, sender.on(() -> r.gauges().get("retransmit_parked")));
    assertEquals(0L, sender.on(() -> r.gauges().get("retransmit_pending")));
    assertTrue(hs.stream().allMatch(h -> sender.on(h::parked)));
    suspected.set(false);
    sender.on(() -> {
      r.kick(TYO);
      return null;
    });
    await(() -> acks.get() == 5, 2_000, "all five sent and acknowledged once trusted again");
    assertEquals(0L, sender.on(() -> r.gauges().get("retransmit_parked")));
  }

  @Test
  void withoutADetectorADatacenterSilentForTheCapGetsOneProbe() {
    Retransmitter r = retx(null);
    drop(true);
    AtomicInteger acks = new AtomicInteger();
    sender.on(() -> r.call(to(), msg(10), a -> acks.incrementAndGet(), e -> { }));
    sleep(2 * CAP_MS + 200); // silent for longer than the cap: the breaker opens
    for (int i = 0; i < 4; i++) {
      long v = 11 + i;
      sender.on(() -> r.call(to(), msg(v), a -> acks.incrementAndGet(), e -> { }));
    }
    sleep(CAP_MS);
    assertEquals(4L, sender.on(() -> r.gauges().get("retransmit_parked")), "all but the probe wait");
    assertTrue(sender.on(() -> sender.ep.pendingCalls()) <= 1, "only the probe is in flight");
    drop(false);
    await(() -> acks.get() == 5, 4 * CAP_MS, "the probe's answer sends the others");
    assertEquals(0L, sender.on(() -> r.gauges().get("retransmit_parked")));
    assertEquals(0L, sender.on(() -> r.gauges().get("retransmit_pending")));
  }

  @Test
  void pastTheCapsTheOldestEntriesAreAbandoned() {
    Retransmitter r = new Retransmitter(sender, BASE_MS, CAP_MS, null, 3, Long.MAX_VALUE);
    drop(true);
    List<Retransmitter.Handle> hs = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      long v = i;
      hs.add(sender.on(() -> r.call(to(), msg(v))));
    }
    assertEquals(2, stat("retransmits_abandoned"));
    assertEquals(3, (int) sender.on(() -> r.entries(TYO)));
    assertTrue(sender.on(() -> hs.get(0).done() && hs.get(1).done() && !hs.get(2).done()), "the oldest two");
    Retransmitter bytes = new Retransmitter(sender, BASE_MS, CAP_MS, null, 1_000, 3L * msg(100).getSerializedSize());
    for (int i = 0; i < 4; i++) {
      long v = 100 + i;
      sender.on(() -> bytes.call(to(), msg(v)));
    }
    assertEquals(3, stat("retransmits_abandoned"), "the byte cap too");
    assertEquals(3, (int) sender.on(() -> bytes.entries(TYO)));
  }

  @Test
  void aRepeatIsSentWhileStillNeeded() {
    Retransmitter r = retx(null);
    drop(true);
    AtomicBoolean needed = new AtomicBoolean(true);
    sender.on(() -> {
      r.repeat(to(), msg(20), needed::get);
      return null;
    });
    sleep(2 * CAP_MS);
    assertEquals(0, received.get());
    drop(false);
    await(() -> received.get() >= 1, 3 * CAP_MS, "a repeat after the heal gets through");
    needed.set(false);
    sleep(2 * CAP_MS); // a repeat already on the wire may land
    int n = received.get();
    sleep(3 * CAP_MS);
    assertEquals(n, received.get(), "no repeat once no longer needed");
  }

  @Test
  void closingTheServerStopsIt() {
    Retransmitter r = retx(null);
    drop(true);
    sender.on(() -> r.call(to(), msg(30)));
    sleep(BASE_MS * 2);
    sender.close();
    long before = stat("retransmits");
    drop(false);
    sleep(3 * CAP_MS);
    assertEquals(before, stat("retransmits"));
    assertEquals(0, received.get());
    assertFalse(received.get() > 0);
  }
}
