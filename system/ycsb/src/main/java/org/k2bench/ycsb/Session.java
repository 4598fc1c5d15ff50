package org.k2bench.ycsb;

import java.util.HashMap;
import java.util.Map;
import org.apache.commons.rng.UniformRandomProvider;
import org.apache.commons.rng.sampling.distribution.RejectionInversionZipfSampler;
import org.k2bench.core.api.KvClient;

/** One client session of the workload: its client, random streams and history position. */
final class Session {
  KvClient client;
  /** The YCSB thread's binding the session came from (null in tests): where a redirect opens clients. */
  private final K2BenchDB db = K2BenchDB.self();
  final UniformRandomProvider rng;
  final RejectionInversionZipfSampler ranks;
  final PartitionedKeys.Samplers partitionRanks = new PartitionedKeys.Samplers();
  /** How far the session's datacenter's own popularity order is shifted (workload locality). */
  final long localShift;
  /** Index of the session's next operation in its history. */
  long nextOp;
  /** The paced start of the operation under way (System.nanoTime), 0 when unpaced. */
  long intendedNanos;
  /** The next index of each client this session used before (a redirect opens new ones). */
  private final Map<Integer, Long> nextOpOf = new HashMap<>();

  Session(KvClient client, UniformRandomProvider rng, RejectionInversionZipfSampler ranks, long localShift) {
    this.client = client;
    this.rng = rng;
    this.ranks = ranks;
    this.localShift = localShift;
  }

  /**
   * The client for the next operation: the session's own, or while its datacenter's
   * clients are redirected another datacenter's ({@link K2BenchDB#serving}); the keys it
   * draws stay its own datacenter's. Each client is a session of its own in the history.
   */
  void useServingClient() {
    KvClient next = K2BenchDB.serving(db, client);
    if (next != client) {
      nextOpOf.put(client.id(), nextOp);
      nextOp = nextOpOf.getOrDefault(next.id(), 0L);
      client = next;
    }
  }
}
