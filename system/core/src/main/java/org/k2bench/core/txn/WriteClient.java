package org.k2bench.core.txn;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.function.ToIntFunction;
import org.k2bench.core.api.Calls;
import org.k2bench.core.data.Row;
import org.k2bench.core.transport.Endpoint;
import org.k2bench.core.txn.proto.KeyValue;
import org.k2bench.core.txn.proto.WotReply;
import org.k2bench.core.txn.proto.WotSubRequest;

/**
 * The client side of a write-only transaction (K2 §III-C, Eiger): one sub-request per
 * participant, a coordinator key picked at random, the session's one-hop dependencies
 * sent to the coordinator only; done when the coordinator answers with the version.
 */
public final class WriteClient {
  private final Endpoint ep;
  private final Random random;
  private final long timeoutMs;
  private long seq;

  public WriteClient(Endpoint ep, long timeoutMs) {
    this.ep = ep;
    this.random = new Random(ep.id());
    this.timeoutMs = timeoutMs;
  }

  /** A committed transaction: its version and the coordinator key (the session's next dependency). */
  public record Committed(long version, String coordinatorKey, List<Integer> participants) {}

  /**
   * Sends the transaction; the future completes on the thread that delivers the coordinator's answer.
   *
   * @param participantOf the server that holds a key for this client (its participant)
   * @param deps the session's one-hop dependencies
   */
  public CompletableFuture<Committed> commitAsync(Map<String, Row> writes, ToIntFunction<String> participantOf,
      OneHopDeps deps) {
    if (writes.isEmpty()) {
      throw new IllegalArgumentException("a write-only transaction needs at least one key");
    }
    List<String> keys = new ArrayList<>(writes.keySet());
    String coordinatorKey = keys.get(random.nextInt(keys.size()));
    int coordinator = participantOf.applyAsInt(coordinatorKey);
    Map<Integer, List<String>> byParticipant = new HashMap<>();
    for (String k : keys) {
      byParticipant.computeIfAbsent(participantOf.applyAsInt(k), s -> new ArrayList<>()).add(k);
    }
    long txnId = (++seq << 16) | ep.id(); // low bits >= 4096: never a server-stamped version
    CompletableFuture<WotReply> reply = null;
    for (Map.Entry<Integer, List<String>> e : byParticipant.entrySet()) {
      WotSubRequest.Builder sub = WotSubRequest.newBuilder().setTxnId(txnId)
          .setCoordinatorKey(coordinatorKey).setCoordinator(coordinator)
          .setNumParticipants(byParticipant.size()).addAllParticipants(byParticipant.keySet());
      for (String k : e.getValue()) {
        sub.addWrites(KeyValue.newBuilder().setKey(k).setValue(writes.get(k)));
      }
      if (e.getKey() == coordinator) {
        sub.addAllDeps(deps.asDeps());
        reply = ep.call(coordinator, sub.build(), WotReply.class);
      } else {
        ep.send(e.getKey(), sub.build());
      }
    }
    List<Integer> participants = List.copyOf(byParticipant.keySet());
    return Calls.within(reply, "write-only transaction", timeoutMs)
        .thenApply(r -> new Committed(r.getVersion(), coordinatorKey, participants));
  }
}
