package org.k2bench.core.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Tag;
import org.k2bench.core.cluster.FreePorts;
import org.k2bench.core.topology.Topology;
import org.k2bench.core.topology.TopologyLoader;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.Transport;

/**
 * The heartbeat failure detector, driven step by step: heartbeats travel the real emulated
 * transport, but time is a fake clock and replies are handled only when the test says, so
 * each interleaving is chosen, not hoped for.
 */
@Tag("alone") // bounds on timing from above: run with no other test class beside it (system/pom.xml)
class FailureDetectorTest {
  static final int VA = 0;
  static final int CA = 1;
  static final long TIMEOUT_MS = 200;
  Transport transport;
  Endpoint va;
  final ConcurrentLinkedQueue<Runnable> replies = new ConcurrentLinkedQueue<>();
  final AtomicLong now = new AtomicLong(1_000_000);
  final List<String> events = new ArrayList<>();
  FailureDetector detector;
  long allowance; // timeout + the VA-CA round trip (6 ms at this scale)

  @BeforeEach
  void start() {
    Topology t = FreePorts.assign(TopologyLoader.paperDefault(1, 2, 7000).withRttScale(0.1));
    transport = new Transport(t);
    va = transport.openServer(t.serverId(VA, 0), Runnable::run, m -> { });
    for (int dc = 1; dc < t.numDcs(); dc++) {
      transport.openServer(t.serverId(dc, 0), Runnable::run, m -> { });
    }
    detector = new FailureDetector(va, t, 0, replies::add, TIMEOUT_MS, now::get,
        d -> events.add("suspect " + d), d -> events.add("trust " + d));
    allowance = TIMEOUT_MS + (long) Math.ceil(t.rttMs(VA, CA));
  }

  @AfterEach
  void stop() {
    transport.close();
  }

  /** Waits (real time) until {@code expected} answers to heartbeats have come back. */
  void awaitReplies(int expected) {
    long deadline = System.currentTimeMillis() + 5_000;
    while (replies.size() < expected) {
      assertTrue(System.currentTimeMillis() < deadline, "replies arrived: " + replies.size() + " of " + expected);
      Thread.onSpinWait();
    }
  }

  /** Records the first {@code n} answers that came back. */
  void handle(int n) {
    for (int i = 0; i < n; i++) {
      replies.poll().run();
    }
  }

  /** Lets every heartbeat in flight come back (real time: the largest RTT is 34 ms), and records the answers. */
  void settle() throws InterruptedException {
    Thread.sleep(150);
    Runnable r;
    while ((r = replies.poll()) != null) {
      r.run();
    }
  }

  /** Every datacenter answers a first heartbeat (past start-up). */
  void answerOnce() throws InterruptedException {
    tickAt(now.get());
    settle();
  }

  void tickAt(long ms) {
    now.set(ms);
    detector.tick(ms);
  }

  /** Ticks every 100 ms of fake time up to {@code ms}, as the server's periodic tick does. */
  void advanceTo(long ms) {
    while (now.get() + 100 <= ms) {
      tickAt(now.get() + 100);
    }
    if (now.get() < ms) {
      tickAt(ms);
    }
  }

  @Test
  void aDatacenterThatAnswersIsNeverSuspected() throws Exception {
    for (int i = 0; i < 20; i++) {
      advanceTo(now.get() + TIMEOUT_MS / 2);
      settle();
    }
    assertEquals(List.of(), events);
    assertEquals(0, detector.suspectedCount());
  }

  @Test
  void silenceLongerThanTheTimeoutPlusTheRoundTripIsSuspectedAndAnAnswerTrustsAgain() throws Exception {
    answerOnce();
    long t = now.get() + 50;
    tickAt(t); // heartbeats out; their answers are held back (not recorded) until settle()
    advanceTo(t + allowance);
    assertFalse(detector.suspected(CA), "not before the allowance is over");
    advanceTo(t + allowance + 1);
    assertTrue(detector.suspected(CA));
    advanceTo(t + TIMEOUT_MS + 35); // past the largest round trip (SP-SG, 33 ms at this scale)
    assertEquals(5, detector.suspectedCount(), "every silent datacenter");
    settle(); // the answers, the newest to a heartbeat sent at the last tick
    tickAt(now.get() + 1);
    assertFalse(detector.suspected(CA));
    assertEquals(0, detector.suspectedCount());
    assertTrue(events.contains("suspect " + CA) && events.contains("trust " + CA), events.toString());
  }

  @Test
  void anAnswerHeldBackLongerThanTheAllowanceDoesNotTrustAgain() throws Exception {
    answerOnce();
    long t = now.get() + 50;
    tickAt(t);
    awaitReplies(5); // back, but not recorded yet
    advanceTo(t + allowance + 1);
    assertTrue(detector.suspected(CA));
    // The answers to the first heartbeats are recorded only now, as after a healed partition.
    handle(5);
    advanceTo(t + allowance + 50);
    assertTrue(detector.suspected(CA), "an answer to a heartbeat sent before the suspicion says nothing about now");
    assertFalse(events.contains("trust " + CA), events.toString());
  }

  @Test
  void aDatacenterThatNeverAnsweredIsGivenTheStartUpAllowance() {
    long t = now.get();
    tickAt(t); // nobody has answered yet, and these answers are held back
    long startup = Math.max(FailureDetector.STARTUP_FLOOR_MS, FailureDetector.STARTUP_TIMEOUTS * allowance);
    advanceTo(t + startup);
    assertFalse(detector.suspected(CA), "a process may still be starting");
    advanceTo(t + startup + 1);
    assertTrue(detector.suspected(CA), "dead from the start");
  }

  @Test
  void aServerThatWasItselfStoppedSuspectsNobodyForIt() throws Exception {
    answerOnce();
    long t = now.get() + 50;
    tickAt(t);
    settle();
    advanceTo(t + 100); // heartbeats out; then this server stops (SIGSTOP) before their answers are recorded
    tickAt(t + 100 + 5_000); // resumed: its own ticks were 5 s apart
    assertEquals(List.of(), events, "a heartbeat unanswered while this server itself was stopped");
    settle();
    while (now.get() < t + 100 + 5_000 + allowance + 100) { // running normally again
      advanceTo(now.get() + 100);
      settle();
    }
    assertEquals(List.of(), events);
  }
}
