package org.k2bench.k2;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.k2bench.core.testing.Clusters.CA;
import static org.k2bench.core.testing.Clusters.VA;
import static org.k2bench.core.testing.Clusters.row;
import static org.k2bench.core.testing.Clusters.str;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.KvClient;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.cluster.LocalCluster;
import org.k2bench.core.testing.Clusters;
import org.k2bench.core.topology.Placement;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.transport.RemoteException;
import org.k2bench.k2.proto.ReadByTimeReply;
import org.k2bench.k2.proto.ReadReply;
import org.k2bench.k2.proto.ReadRequest;
import org.k2bench.k2.proto.VersionInfo;
import org.k2bench.core.testing.TestOptions;

/**
 * (f) GC never removes a version an in-flight read-only transaction may still ask for.
 * The GC window is shortened to 200 ms so collection happens within the test; the
 * transaction timeout (which bounds a transaction's life) stays long.
 */
class K2GcTest {
  static final long WINDOW_MS = 200;
  static final long TIMEOUT_MS = 3_000;
  static LocalCluster cluster;
  static Placement placement;
  static Endpoint raw;
  static final List<String> used = new ArrayList<>();

  @BeforeAll
  static void start() {
    cluster = TestCluster.start(TestOptions.defaults().withGc(WINDOW_MS, WINDOW_MS, TIMEOUT_MS));
    placement = cluster.placement();
    raw = cluster.transport().openClient(60_000, VA, Runnable::run, m -> { });
  }

  @AfterAll
  static void stop() {
    cluster.close();
  }

  static String replicaKeyOfVa(String prefix) {
    return Clusters.key(placement, prefix, -1, new int[] {VA, CA}, used);
  }

  static ReadReply firstRound(int server, String key, long readTs) throws Exception {
    return raw.call(server, ReadRequest.newBuilder().addKeys(key).setReadTs(readTs).build(), ReadReply.class)
        .get(5, TimeUnit.SECONDS);
  }

  static ReadByTimeReply secondRound(int server, String key, long ts) throws Exception {
    return TestCluster.readByTime(raw, server, key, ts).get(5, TimeUnit.SECONDS);
  }

  /** Supersedes the key's version and waits past the GC window, then commits again (GC is lazy). */
  static void supersedeAndCollect(KvClient writer, String key) {
    writer.write(key, row("v2"));
    writer.write(key, row("v3"));
    Clusters.sleep(WINDOW_MS * 3);
    writer.write(key, row("v4"));
  }

  @Test
  void aVersionReadInAFirstRoundSurvivesUntilTheSecondRound() throws Exception {
    String key = replicaKeyOfVa("f");
    int server = placement.serverFor(VA, key);
    KvClient writer = cluster.client(VA);
    long v1 = writer.write(key, row("v1")).version();

    // Round one of an in-flight transaction returns v1 (and is the last access to it).
    ReadReply r1 = firstRound(server, key, v1);
    VersionInfo seen = r1.getKeys(0).getVersions(0);
    assertEquals(v1, seen.getVersion());

    supersedeAndCollect(writer, key); // without the read, this removes v1 (the control below)

    // Round two at the time round one chose still finds v1.
    ReadByTimeReply r2 = secondRound(server, key, seen.getEvt());
    assertEquals(v1, r2.getVersion());
    assertEquals("v1", str(r2.getValue()));
  }

  @Test
  void withoutAFirstRoundReadTheSameVersionIsCollected() throws Exception {
    // The control: the same sequence with no first round in between loses v1, so the
    // previous test passes because of the first-round protection, not by accident.
    String key = replicaKeyOfVa("f-ctl");
    int server = placement.serverFor(VA, key);
    KvClient writer = cluster.client(VA);
    long v1 = writer.write(key, row("v1")).version();
    supersedeAndCollect(writer, key);
    ExecutionException e = assertThrows(ExecutionException.class, () -> secondRound(server, key, v1));
    assertTrue(e.getCause() instanceof RemoteException && e.getCause().getMessage().contains("garbage-collected"),
        e.getCause().toString());
  }

  @Test
  void protectionEndsWithTheTransactionTimeout() throws Exception {
    String key = replicaKeyOfVa("f-end");
    int server = placement.serverFor(VA, key);
    KvClient writer = cluster.client(VA);
    long v1 = writer.write(key, row("v1")).version();
    firstRound(server, key, v1);
    writer.write(key, row("v2"));
    Clusters.sleep(TIMEOUT_MS + WINDOW_MS);
    writer.write(key, row("v3"));
    assertThrows(ExecutionException.class, () -> secondRound(server, key, v1),
        "after the timeout no transaction can still ask for v1, so GC may remove it");
  }
}
