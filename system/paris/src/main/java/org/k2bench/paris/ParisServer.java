package org.k2bench.paris;

import com.google.protobuf.Message;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.k2bench.core.api.ServerOptions;
import org.k2bench.core.clock.LamportClock;
import org.k2bench.core.server.FailureDetector;
import org.k2bench.core.server.ServerActor;
import org.k2bench.core.testing.Mutants;
import org.k2bench.core.transport.Incoming;
import org.k2bench.core.transport.MalformedMessageException;
import org.k2bench.core.transport.Transport;
import org.k2bench.paris.proto.CommitAck;
import org.k2bench.paris.proto.CommitReq;
import org.k2bench.paris.proto.CommitResp;
import org.k2bench.paris.proto.CommitTx;
import org.k2bench.paris.proto.DcStable;
import org.k2bench.paris.proto.Heartbeat;
import org.k2bench.paris.proto.Item;
import org.k2bench.paris.proto.KeyRow;
import org.k2bench.paris.proto.PrepareReq;
import org.k2bench.paris.proto.PrepareResp;
import org.k2bench.paris.proto.ReadReq;
import org.k2bench.paris.proto.ReadResp;
import org.k2bench.paris.proto.ReadSliceReq;
import org.k2bench.paris.proto.ReadSliceResp;
import org.k2bench.paris.proto.Replicate;
import org.k2bench.paris.proto.StableReport;
import org.k2bench.paris.proto.StartTxReq;
import org.k2bench.paris.proto.StartTxResp;
import org.k2bench.paris.proto.TxnWrites;
import org.k2bench.paris.proto.UstAnnounce;

/**
 * A server of PaRiS, BPR or NoCC ("PaRiS: Causally Consistent Transactions with Non-blocking
 * Reads and Partial Replication", ICDCS 2019): the replica of one partition in one datacenter
 * (§III: "each server is assigned a single partition"; with the groups placement a server's
 * partition is its group position and shard), coordinator of its clients' transactions
 * (Alg. 2) and cohort of others' (Alg. 3), applying and replicating in commit-time order and
 * taking part in the UST protocol (Alg. 4).
 *
 * <p>Times are hybrid logical clock counters (the endpoint's clock, {@link
 * org.k2bench.core.clock.ClockKind#HYBRID}). A version is a commit time with the
 * coordinator's node id in its low 16 bits; a coordinator never gives two transactions one
 * commit time, so versions are unique and ordered as the paper orders equal timestamps
 * (by transaction).
 */
final class ParisServer extends ServerActor {
  private final Mode mode;
  private final int partition;
  /** The partition's replica datacenters, replica order; this server is replica {@link #me}. */
  private final int[] replicaDcs;
  private final int me;
  /** VV: the latest time received from each replica of the partition; vv[me] is the local snapshot installed. */
  private final long[] vv;
  /** ust_n^m: every partition in every datacenter has installed a snapshot at least this. */
  private long ust;
  /** S_old: no running transaction reads below it (garbage collection). */
  private long sOld;
  private final VersionChains items = new VersionChains();
  private final long replicationMs;
  private final long stabilizationMs;
  /** Remote replicas by round-trip time instead of round-robin (ParisOptions.NEAREST_REPLICA). */
  private final boolean nearestReplica;

  // Coordinator (Alg. 2): TX, each transaction's snapshot, and the client's current one.
  private long nextTxn;
  private long lastCommitTime;
  private final Map<Long, Txn> tx = new HashMap<>();
  private final Map<Integer, Long> currentOfClient = new HashMap<>();

  /** A running transaction: its snapshot, when its client last used it, and the client. */
  private record Txn(long snapshot, long activeMs, int client) {}

  // Cohort (Alg. 3): Prepared (by transaction, and their proposals in order) and Committed by commit time.
  private record TxnKey(int coordinator, long txnId) {}

  private record Pending(long proposed, List<KeyRow> writes) {}

  private final Map<TxnKey, Pending> prepared = new HashMap<>();
  /**
   * Aborts that came before their prepare (ms received): the prepare is refused when it
   * comes, or it would stay prepared, and hold ub, the UST and garbage collection back, for
   * good. A passed-over replica's abort follows its prepare on one link, so this needs a link
   * that lost its order (a stream opened again); kept ten RPC timeouts, long past the
   * coordinator's decision.
   */
  private final Map<TxnKey, Long> abortedUnprepared = new LinkedHashMap<>();
  private final TreeMap<Long, Integer> proposals = new TreeMap<>();
  private final TreeMap<Long, List<TxnWrites>> committed = new TreeMap<>();

  /**
   * BPR: a read at {@code readSnapshot} waiting for the local snapshot to reach {@code
   * snapshot} (its wait target). {@code done} is set, on the server thread, once it is
   * answered or expired: a waiting thread that sees it stops, and the queue drops it when it
   * comes to it (no O(n) removal). {@code cpuNanos}: the server thread's CPU spent blocking
   * and unblocking it.
   */
  private record Blocked(long snapshot, long readSnapshot, long sinceNanos, Runnable answer, Runnable expire,
      java.util.concurrent.atomic.AtomicBoolean done, long[] cpuNanos) {}

  private final PriorityQueue<Blocked> blocked = new PriorityQueue<>((a, b) -> Long.compare(a.snapshot, b.snapshot));
  /**
   * BPR's blocking as its authors ran it (ParisOptions.BPR_BLOCKING thread): each blocked read
   * holds a thread that polls the installed snapshot every {@link #POLL_NANOS}; else (queue)
   * it is an entry the server thread answers when the snapshot advances.
   */
  private final boolean waiterThreads;
  /** The snapshot this partition has installed, for waiting threads (written on the server thread). */
  private volatile long installedNow;
  /** Set when the server closes: waiting threads stop (the snapshot would never advance again). */
  private volatile boolean closing;
  /** The authors' WaitOnTxSlice sleeps 500 µs between looks at the version vector. */
  static final long POLL_NANOS = 500_000;
  private static final java.util.concurrent.ExecutorService WAITERS = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "k2b-bpr-wait"); // k2bench/cpu.py counts these threads' CPU apart
    t.setDaemon(true);
    return t;
  });
  private static final java.lang.management.ThreadMXBean THREAD_CPU =
      java.lang.management.ManagementFactory.getThreadMXBean();
  /**
   * BPR: transactions installed here that no read has yet asked for (a read slice whose
   * snapshot covers them), for the visibility its authors' code records
   * (visibility_at_read:<dc>); at most {@link #UNREAD_CAP}.
   */
  private final PriorityQueue<Installed> unread = new PriorityQueue<>((a, b) -> Long.compare(a.commitTime(),
      b.commitTime()));
  private static final int UNREAD_CAP = 100_000;
  private long readSnapshotMax;
  private final String visibilityAtReadTag;

  /**
   * Transactions installed here and not yet visible to new transactions of this datacenter
   * (commit time, install time by the monotonic clock): PaRiS shows one once the UST passes it, BPR once this
   * partition has installed every replica's updates up to it, NoCC at once. When one becomes
   * visible its visibility latency is recorded as {@code visibility:<dc>}: from its install
   * here to then, as the PaRiS paper's Fig. 5 measures it ("we factor out the latency of the
   * update propagation", §V-E).
   */
  private record Installed(long commitTime, long installedNanos) {}

  private final PriorityQueue<Installed> invisible =
      new PriorityQueue<>((a, b) -> Long.compare(a.commitTime(), b.commitTime()));
  private final String visibilityTag;

  // UST root of the datacenter (server 0 of it): the latest report of each of its servers,
  // and the latest GST and oldest snapshot of each datacenter.
  private final boolean root;
  private final long[] reportMin;
  private final long[] reportOld;
  private final long[] dcGst;
  private final long[] dcOld;

  /** Which other datacenters answer: a coordinator asks their replicas last (see {@link #targets}). */
  private final FailureDetector detector;

  ParisServer(Mode mode, Transport transport, int serverId, ServerOptions options) {
    super(mode.systemName, transport, serverId, options, key -> false);
    this.mode = mode;
    this.partition = placement.partitionOfServer(serverId);
    this.replicaDcs = placement.partitionDcs(partition);
    int mine = -1;
    for (int i = 0; i < replicaDcs.length; i++) {
      if (replicaDcs[i] == dc) {
        mine = i;
      }
    }
    if (mine < 0) { // impossible with either placement: every server holds its partition
      throw new IllegalStateException("server " + serverId + " holds no replica of partition " + partition);
    }
    this.me = mine;
    this.vv = new long[replicaDcs.length];
    this.replicationMs = options.system().integer(ParisOptions.REPLICATION_MS);
    this.stabilizationMs = options.system().integer(ParisOptions.UST_MS);
    this.nearestReplica = options.system().flag(ParisOptions.NEAREST_REPLICA);
    this.root = shard == 0;
    int servers = topology.serversPerDc();
    this.reportMin = new long[root ? servers : 0];
    this.reportOld = new long[root ? servers : 0];
    this.dcGst = new long[root ? topology.numDcs() : 0];
    this.dcOld = new long[root ? topology.numDcs() : 0];
    this.visibilityTag = "visibility:" + topology.dcName(dc);
    this.visibilityAtReadTag = "visibility_at_read:" + topology.dcName(dc);
    this.waiterThreads = mode == Mode.BPR && options.system().choice(ParisOptions.BPR_BLOCKING).equals("thread");
    this.detector = new FailureDetector(ep, topology, shard, Runnable::run, options.failoverTimeoutMs(),
        FailureDetector::monotonicMs, d -> count("dcs_suspected"), d -> count("dcs_trusted_again"));
    start();
    every(replicationMs, TimeUnit.MILLISECONDS, this::applyAndReplicate);
    if (mode == Mode.PARIS) {
      // (mutant paris-slow-gossip: the UST gossip at 10 Δ_G)
      every(stabilizationMs * (Mutants.active(ParisMutants.PARIS_SLOW_GOSSIP) ? 10 : 1), TimeUnit.MILLISECONDS,
          this::report);
    }
  }

  @Override
  protected void handle(Incoming m) {
    if (m.is(StartTxReq.class)) {
      onStart(m, m.as(StartTxReq.class));
    } else if (m.is(ReadReq.class)) {
      onRead(m, m.as(ReadReq.class));
    } else if (m.is(CommitReq.class)) {
      onCommit(m, m.as(CommitReq.class));
    } else if (m.is(ReadSliceReq.class)) {
      onReadSlice(m, m.as(ReadSliceReq.class));
    } else if (m.is(PrepareReq.class)) {
      onPrepare(m, m.as(PrepareReq.class));
    } else if (m.is(CommitTx.class)) {
      onCommitTx(m.as(CommitTx.class));
      if (m.expectsReply()) {
        m.reply(CommitAck.getDefaultInstance());
      }
    } else if (m.is(Replicate.class)) {
      onReplicate(m, m.as(Replicate.class));
    } else if (m.is(Heartbeat.class)) {
      setVv(replicaOf(m.from()), m.as(Heartbeat.class).getTime());
    } else if (m.is(StableReport.class)) {
      onReport(topology.shardOfServer(m.from()), m.as(StableReport.class));
    } else if (m.is(DcStable.class)) {
      DcStable s = m.as(DcStable.class);
      dcGst[s.getDc()] = Math.max(dcGst[s.getDc()], s.getGst());
      dcOld[s.getDc()] = Math.max(dcOld[s.getDc()], s.getOldestSnapshot());
    } else if (m.is(UstAnnounce.class)) {
      UstAnnounce a = m.as(UstAnnounce.class);
      advanceUst(a.getUst(), a.getSOld());
    } else {
      throw new MalformedMessageException(mode.systemName + " server does not handle " + m.typeName());
    }
  }

  // ---------------------------------------------------------------- coordinator (Alg. 2)

  private void onStart(Incoming m, StartTxReq r) {
    long snapshot;
    if (mode == Mode.BPR || Mutants.active(ParisMutants.PARIS_ABOVE_UST)) {
      // §V: the maximum of the client's highest snapshot seen and the coordinator's clock.
      // (The mutant reads there too, without BPR's blocking.)
      snapshot = Math.max(r.getClientSnapshot(), clock.counter());
      if (mode == Mode.BPR) {
        seenSnapshot(r.getClientSnapshot());
      }
    } else {
      advanceUst(r.getClientSnapshot(), sOld); // Alg. 2 line 2
      snapshot = ust;
    }
    long id = ++nextTxn;
    // A session runs one transaction at a time: its previous one (a read-only transaction
    // never commits) ends here, and its context with it.
    Long previous = currentOfClient.put(m.from(), id);
    if (previous != null) {
      tx.remove(previous);
    }
    tx.put(id, new Txn(snapshot, System.currentTimeMillis(), m.from()));
    m.reply(StartTxResp.newBuilder().setTxnId(id).setSnapshot(snapshot).build());
  }

  private void onRead(Incoming m, ReadReq r) {
    long snapshot;
    if (r.getLatest()) {
      snapshot = Long.MAX_VALUE >>> LamportClock.NODE_BITS;
    } else {
      Txn t = tx.get(r.getTxnId());
      if (t == null) {
        m.replyError("no transaction " + r.getTxnId() + " at coordinator " + ep.id()
            + " (finished, or older than the transaction timeout)");
        return;
      }
      snapshot = t.snapshot();
      // Its context expires a timeout after its client last used it, not after its start: a
      // BPR read phase may block for most of the cohort wait, and a second one must find it.
      tx.put(r.getTxnId(), new Txn(snapshot, System.currentTimeMillis(), t.client()));
    }
    Map<Integer, List<String>> byPartition = new LinkedHashMap<>();
    for (String key : r.getKeysList()) {
      byPartition.computeIfAbsent(placement.partitionOf(key), p -> new ArrayList<>()).add(key);
    }
    // A BPR read blocks at a replica that is alive and behind: its slow answer is no reason to
    // ask another replica, which would block as well; only a suspected datacenter is skipped.
    long failoverMs = mode == Mode.BPR && !r.getLatest() ? Long.MAX_VALUE : failoverWaitMs();
    List<CompletableFuture<Answer<ReadSliceResp>>> slices = new ArrayList<>();
    List<Asked> askedAll = new ArrayList<>();
    for (Map.Entry<Integer, List<String>> e : byPartition.entrySet()) {
      ReadSliceReq slice = ReadSliceReq.newBuilder().addAllKeys(e.getValue()).setSnapshot(snapshot)
          .setLatest(r.getLatest()).build();
      Asked asked = new Asked("read", null);
      askedAll.add(asked);
      slices.add(callReplicas(targets(e.getKey()), slice, ReadSliceResp.class, failoverMs, asked));
    }
    CompletableFuture<Void> all = CompletableFuture.allOf(slices.toArray(CompletableFuture[]::new));
    onServer(all, cohortWaitMs(), (ok, err) -> {
      askedAll.forEach(a -> a.decided = true); // answered or given up: no slice fails over after it
      if (err != null) {
        m.replyError("read failed: " + err);
        return;
      }
      ReadResp.Builder out = ReadResp.newBuilder();
      double blocked = 0;
      for (CompletableFuture<Answer<ReadSliceResp>> f : slices) {
        Answer<ReadSliceResp> a = f.join();
        out.addAllItems(a.reply().getItemsList());
        blocked = Math.max(blocked, a.reply().getBlockedMs());
        out.setWanRounds(Math.max(out.getWanRounds(), a.wanRounds()));
      }
      m.reply(out.setBlockedMs(blocked).build());
    });
  }

  private void onCommit(Incoming m, CommitReq r) {
    long receivedNanos = System.nanoTime();
    long snapshot = 0;
    if (!r.getLatest()) {
      // Alg. 2 line 31 removes the context after the commit; here at its start, which is the
      // same: nothing of the transaction reads it after its commit request, and a commit that
      // fails ends the transaction too.
      Txn t = tx.remove(r.getTxnId());
      if (t == null) {
        m.replyError("no transaction " + r.getTxnId() + " at coordinator " + ep.id());
        return;
      }
      currentOfClient.remove(t.client(), r.getTxnId());
      snapshot = t.snapshot();
    }
    long ht = Mutants.active(ParisMutants.PARIS_NO_HWT) ? snapshot : Math.max(snapshot, r.getHwt()); // Alg. 2 line 19
    Map<Integer, List<KeyRow>> byPartition = new LinkedHashMap<>();
    for (KeyRow w : r.getWritesList()) {
      byPartition.computeIfAbsent(placement.partitionOf(w.getKey()), p -> new ArrayList<>()).add(w);
    }
    if (byPartition.isEmpty()) {
      m.replyError("a commit needs at least one write");
      return;
    }
    long id = r.getLatest() ? ++nextTxn : r.getTxnId();
    // Every server asked to prepare. One passed over for want of an answer may still prepare:
    // it is told to abort at once (after the prepare, on the same FIFO link), so it never holds
    // the transaction pending, even if this coordinator dies before deciding.
    CommitTx abort = CommitTx.newBuilder().setTxnId(id).setCoordinator(ep.id()).setAbort(true).build();
    Asked asked = new Asked("prepare", server -> ep.send(server, abort));
    List<CompletableFuture<Answer<PrepareResp>>> prepares = new ArrayList<>();
    for (Map.Entry<Integer, List<KeyRow>> e : byPartition.entrySet()) {
      prepares.add(callReplicas(targets(e.getKey()), PrepareReq.newBuilder().setTxnId(id).setCoordinator(ep.id())
          .setSnapshot(snapshot).setHt(ht).addAllWrites(e.getValue()).build(), PrepareResp.class,
          failoverWaitMs(), asked));
    }
    onServer(CompletableFuture.allOf(prepares.toArray(CompletableFuture[]::new)), cohortWaitMs(), (ok, err) -> {
      asked.decided = true; // no prepare goes out after the decision
      long tookMs = (System.nanoTime() - receivedNanos) / 1_000_000;
      // Held up past its cohort wait (a paused or stalled server), a coordinator aborts: its
      // client may have given up (it waits twice as long), and a commit it never hears of is
      // missing from its hwt and private cache (Alg. 1 lines 29-31), so its next transaction
      // could commit below it. (The paper's 2PC has no failure path, §IV.)
      String failed = err != null ? "prepare failed: " + err
          : tookMs > cohortWaitMs() ? "decided " + tookMs + " ms after the commit request, past the cohort wait of "
              + cohortWaitMs() + " ms" : null;
      if (failed != null) {
        // Abort at every server asked: one that prepared would otherwise hold the
        // transaction pending, and stop applying past it, for good (a cohort never drops a
        // prepared transaction by itself: the decision may be held back by a network
        // partition and arrive later).
        for (Integer server : asked.servers) {
          ep.send(server, abort);
        }
        count("aborted_commits");
        m.replyError(failed);
        return;
      }
      long ct = 0;
      int wanRounds = 0;
      List<Integer> cohorts = new ArrayList<>();
      for (CompletableFuture<Answer<PrepareResp>> f : prepares) {
        long pt = f.join().reply().getProposed(); // Alg. 2 line 26: the largest (mutant: the smallest)
        ct = ct == 0 || !Mutants.active(ParisMutants.PARIS_COMMIT_MIN_PROPOSAL) ? Math.max(ct, pt) : Math.min(ct, pt);
        cohorts.add(f.join().server());
        wanRounds = Math.max(wanRounds, f.join().wanRounds());
      }
      // One commit time per transaction of this coordinator, so versions (commit time, coordinator)
      // stay unique; still at least every proposal. The coordinator's own clock does not move
      // (Alg. 2 has no HLC update; the cohorts move theirs at commit, Alg. 3 line 16).
      ct = Math.max(ct, lastCommitTime + 1);
      lastCommitTime = ct;
      for (Integer server : cohorts) { // those passed over get the writes by replication
        ep.send(server, CommitTx.newBuilder().setTxnId(id).setCoordinator(ep.id()).setCommitTime(ct).build());
      }
      m.reply(CommitResp.newBuilder().setCommitTime(ct).setVersion(LamportClock.timestamp(ct, ep.id()))
          .setWanRounds(wanRounds).build());
    });
  }

  /**
   * How long a coordinator waits for its cohorts: half its clients' RPC timeout, so that it
   * decides (commits, aborts, or fails a read) while its client still waits for the answer;
   * a commit after the client gave up would leave the session without its own write.
   */
  private long cohortWaitMs() {
    return Math.max(1, options.rpcTimeoutMs() / 2);
  }

  /**
   * How long a coordinator waits for one replica before it asks the partition's next:
   * server.failover_timeout_ms, but at most half the cohort wait, so that a fail-over always
   * has time (a fail-over timeout above the cohort wait would otherwise never fail over).
   */
  private long failoverWaitMs() {
    return Math.min(options.failoverTimeoutMs(), cohortWaitMs() / 2);
  }

  /**
   * The servers a coordinator of this datacenter sends a partition's reads and prepares to,
   * in order: the partition's replica here, if there is one; then its remote replicas, the
   * datacenter's preferred one first, those in datacenters the failure detector suspects
   * last. The paper assigns every client of a datacenter the same preferred replica per
   * partition, round-robin over the datacenters to balance load (§V); here replica (dc + p)
   * mod f among the partition's replicas (with server.options.<system>.nearest_replica, the
   * nearest by round-trip time instead, ties to the lower datacenter). The others are for
   * fail-over: "PaRiS achieves availability in a DC as long as one replica per partition is reachable by the DC", and
   * "remote reads can be performed without blocking by any replica, because the snapshot
   * visible to a transaction is already installed in all DCs" (§III-C, availability among
   * DCs). (The detector watches other datacenters only: a dead server here is passed over
   * after the fail-over wait, every time.)
   */
  private int[] targets(int p) {
    int[] dcs = placement.partitionDcs(p);
    int first = Math.floorMod(dc + p, dcs.length);
    Integer[] order = new Integer[dcs.length];
    for (int i = 0; i < dcs.length; i++) {
      order[i] = dcs[(first + i) % dcs.length];
    }
    if (nearestReplica) {
      Arrays.sort(order, Comparator.<Integer>comparingDouble(d -> topology.rttMs(dc, d)).thenComparingInt(d -> d));
    }
    Arrays.sort(order, Comparator.comparingInt(d -> d == dc ? 0 : detector.suspected(d) ? 2 : 1)); // stable
    return Arrays.stream(order).mapToInt(d -> placement.serverOf(d, p)).toArray();
  }

  /**
   * An answer, the server that gave it, and the wide-area rounds it took: the remote replicas
   * asked in turn up to and including it (a fail-over adds one; the local replica none).
   */
  private record Answer<T>(int server, T reply, int wanRounds) {}

  /**
   * The servers a request went to; once its outcome is decided, it goes to no other. {@code
   * passedOver} runs with each server moved on from ({@code null}: nothing to do).
   */
  private static final class Asked {
    final String what;
    final java.util.function.IntConsumer passedOver;
    final List<Integer> servers = new ArrayList<>();
    boolean decided;

    Asked(String what, java.util.function.IntConsumer passedOver) {
      this.what = what;
      this.passedOver = passedOver;
    }
  }

  /**
   * Sends {@code request} to {@code servers} in order, moving on to the next when one has not
   * answered within {@code failoverMs} (the last one asked gets what is left of the cohort
   * wait), and only while the next one's round trip fits in what is left; records every
   * server asked in {@code asked}. Completes on the server thread.
   */
  private <T extends Message> CompletableFuture<Answer<T>> callReplicas(int[] servers, Message request,
      Class<T> type, long failoverMs, Asked asked) {
    CompletableFuture<Answer<T>> out = new CompletableFuture<>();
    ask(servers, 0, request, type, failoverMs, asked, System.nanoTime() + cohortWaitMs() * 1_000_000L, out);
    return out;
  }

  private <T extends Message> void ask(int[] servers, int i, Message request, Class<T> type, long failoverMs,
      Asked asked, long deadlineNanos, CompletableFuture<Answer<T>> out) {
    boolean last = i == servers.length - 1;
    long left = Math.max(1, (deadlineNanos - System.nanoTime()) / 1_000_000);
    asked.servers.add(servers[i]);
    onServer(ep.call(servers[i], request, type), last ? left : Math.min(left, failoverMs), (reply, err) -> {
      if (err == null) {
        int rounds = 0;
        for (int j = 0; j <= i; j++) {
          rounds += topology.dcOfServer(servers[j]) != dc ? 1 : 0;
        }
        out.complete(new Answer<>(servers[i], reply, rounds));
      } else if (!last && !asked.decided && !answered(err) && (deadlineNanos - System.nanoTime()) / 1e6
          > topology.rttMs(dc, topology.dcOfServer(servers[i + 1])) + 2 * topology.jitterMs()) {
        count(asked.what + "_failovers");
        if (asked.passedOver != null) {
          asked.passedOver.accept(servers[i]);
        }
        ask(servers, i + 1, request, type, failoverMs, asked, deadlineNanos, out);
      } else {
        out.completeExceptionally(err);
      }
    });
  }

  /**
   * Whether a call failed with the replica's own answer (an error it replied with: it is
   * alive), not for want of an answer.
   */
  private static boolean answered(Throwable err) {
    Throwable t = err instanceof java.util.concurrent.CompletionException && err.getCause() != null
        ? err.getCause() : err;
    return t instanceof org.k2bench.core.transport.RemoteException;
  }

  // ---------------------------------------------------------------- cohort (Alg. 3)

  private void onReadSlice(Incoming m, ReadSliceReq r) {
    if (r.getLatest()) {
      answer(m, r, Long.MAX_VALUE >>> LamportClock.NODE_BITS, true, 0);
      return;
    }
    long s = r.getSnapshot();
    if (mode == Mode.PARIS) {
      advanceUst(s, sOld); // Alg. 3 line 2
      answer(m, r, s, false, 0);
      return;
    }
    // BPR (§V): block until this partition has applied everything up to the snapshot.
    // Every slice's blocking time, 0 included, is recorded as read_blocked (µs): BPR's cost per read.
    long since = System.nanoTime();
    seenSnapshot(s);
    long target = bprWaitTarget(s);
    if (installed() >= target) {
      org.k2bench.core.metrics.ProcessMetrics.record("read_blocked", 0);
      answer(m, r, s, false, 0);
      return;
    }
    count("blocked_reads");
    long cpu0 = THREAD_CPU.getCurrentThreadCpuTime();
    Blocked b = new Blocked(target, s, since, () -> {
      long waitedNanos = System.nanoTime() - since;
      org.k2bench.core.metrics.ProcessMetrics.record("read_blocked", waitedNanos / 1000);
      answer(m, r, s, false, waitedNanos / 1e6);
    }, () -> m.replyError("snapshot " + s + " not installed here within " + cohortWaitMs() * 3 / 4 + " ms"),
        new java.util.concurrent.atomic.AtomicBoolean(), new long[1]);
    blocked.add(b);
    if (waiterThreads) {
      WAITERS.execute(() -> waitInThread(b)); // a new thread when none is idle: counted below
    }
    b.cpuNanos()[0] = THREAD_CPU.getCurrentThreadCpuTime() - cpu0;
  }

  /**
   * A blocked read's thread (BPR, blocking: thread): looks at the installed snapshot every
   * {@link #POLL_NANOS} until it covers the read, the read is answered otherwise (expired) or
   * the server closes, then hands the answer to the server thread. read_blocked_cpu_ns is
   * this thread's CPU time plus the server thread's for queueing, starting and answering it.
   */
  private void waitInThread(Blocked b) {
    long cpu0 = THREAD_CPU.getCurrentThreadCpuTime();
    while (!b.done().get() && !closing && installedNow < b.snapshot()) {
      java.util.concurrent.locks.LockSupport.parkNanos(POLL_NANOS);
    }
    long cpu = THREAD_CPU.getCurrentThreadCpuTime() - cpu0;
    if (closing) {
      return;
    }
    try {
      thread.execute(() -> {
        long t0 = THREAD_CPU.getCurrentThreadCpuTime();
        if (b.done().compareAndSet(false, true)) { // the queue drops it when it comes to it
          b.answer().run();
          org.k2bench.core.metrics.ProcessMetrics.record("read_blocked_cpu_ns",
              cpu + b.cpuNanos()[0] + THREAD_CPU.getCurrentThreadCpuTime() - t0);
        }
      });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // the server closed meanwhile: nobody is left to answer
    }
  }

  @Override
  public void close() {
    closing = true;
    super.close();
  }

  /** The oldest blocked read not yet answered, dropping answered ones from the head; null if none. */
  private Blocked oldestBlocked() {
    while (!blocked.isEmpty() && blocked.peek().done().get()) {
      blocked.poll();
    }
    return blocked.peek();
  }

  /**
   * BPR: a snapshot {@code s} arrived with a transaction's start (the client's), a read slice
   * or a prepare. Its authors' code records an update's visibility when the largest snapshot
   * so seen first passes the update's commit time (updateUSTifSmaller, called at those three,
   * runs CheckAndRecordVisibilityLatency), even if the read then blocks.
   */
  private void seenSnapshot(long s) {
    if (s <= readSnapshotMax) {
      return;
    }
    readSnapshotMax = s;
    long now = System.nanoTime();
    while (!unread.isEmpty() && unread.peek().commitTime() <= s) {
      org.k2bench.core.metrics.ProcessMetrics.record(visibilityAtReadTag,
          Math.max(0, now - unread.poll().installedNanos()) / 1000);
    }
  }

  /** Answers a read slice, or with an error if garbage collection removed what it reads. */
  private void answer(Incoming m, ReadSliceReq r, long snapshot, boolean latest, double blockedMs) {
    ReadSliceResp resp = slice(r, snapshot, latest, blockedMs);
    if (resp == null) {
      m.replyError("versions read at snapshot " + snapshot + " were garbage-collected at server " + ep.id()
          + " (a snapshot older than its GC floor)");
    } else {
      m.reply(resp);
    }
  }

  /** The items of a read slice; null if garbage collection removed a version it reads. */
  private ReadSliceResp slice(ReadSliceReq r, long snapshot, boolean latest, double blockedMs) {
    long now = System.currentTimeMillis();
    ReadSliceResp.Builder b = ReadSliceResp.newBuilder().setBlockedMs(blockedMs);
    for (String key : r.getKeysList()) {
      VersionChains.Read read = latest ? items.latest(key) : items.at(key, snapshot, now);
      if (read == null) {
        count("reads_below_gc");
        return null;
      }
      b.addItems(Item.newBuilder().setKey(key).setVersion(read.version().version())
          .setValue(read.version().value()).setStalenessMs(read.stalenessMs()));
    }
    count("slices_read");
    return b.build();
  }

  private void onPrepare(Incoming m, PrepareReq r) {
    long pt;
    if (mode == Mode.NOCC) {
      pt = clock.tick(); // §V: "each participant just proposes its clock value + 1"
    } else {
      long hlc = clock.observeCounter(r.getHt()); // Alg. 3 line 10: max(Clock, ht + 1, HLC + 1)
      advanceUst(r.getSnapshot(), sOld); // line 11
      pt = Math.max(hlc, ust); // line 12
      if (mode == Mode.BPR) {
        seenSnapshot(r.getSnapshot());
      }
    }
    TxnKey key = new TxnKey(r.getCoordinator(), r.getTxnId());
    if (abortedUnprepared.remove(key) != null) {
      count("prepares_after_abort");
      m.replyError("transaction " + r.getTxnId() + " of coordinator " + r.getCoordinator() + " was aborted here before "
          + "its prepare came");
      return;
    }
    prepared.put(key, new Pending(pt, r.getWritesList()));
    proposals.merge(pt, 1, Integer::sum);
    m.reply(PrepareResp.newBuilder().setProposed(pt).build());
  }

  private void onCommitTx(CommitTx c) {
    TxnKey key = new TxnKey(c.getCoordinator(), c.getTxnId());
    Pending p = prepared.remove(key);
    if (p == null) { // a duplicate, or an abort of a transaction that has not prepared here
      if (c.getAbort()) {
        abortedUnprepared.put(key, System.currentTimeMillis());
      }
      return;
    }
    if (c.getAbort()) {
      proposals.computeIfPresent(p.proposed(), (k, n) -> n == 1 ? null : n - 1);
      count("cohort_aborts");
      return;
    }
    count("cohort_commits");
    // Alg. 3 line 16: HLC at least ct. (The clock's receive rule also ticks it by one when it
    // is already past ct, where the paper keeps it: harmless, clocks only need to grow.)
    clock.observeCounter(c.getCommitTime() - 1);
    proposals.computeIfPresent(p.proposed(), (k, n) -> n == 1 ? null : n - 1);
    committed.computeIfAbsent(c.getCommitTime(), k -> new ArrayList<>()).add(TxnWrites.newBuilder()
        .setVersion(LamportClock.timestamp(c.getCommitTime(), c.getCoordinator())).addAllWrites(p.writes()).build());
  }

  // ---------------------------------------------------------------- apply, replicate, UST (Alg. 4)

  /**
   * Every Δ_R: applies the committed transactions below every pending proposal, in
   * commit-time order, replicates each commit time's transactions to the partition's other
   * replicas, and sets the local version clock; with nothing to replicate, sends it as a
   * heartbeat (Alg. 4 lines 5-21).
   */
  /** Idle ticks (mutant paris-slow-heartbeats: a heartbeat every twentieth). */
  private long heartbeatTicks;

  private void applyAndReplicate() {
    // Alg. 4 lines 6-7: below every prepared transaction's proposal, whose commit time will be
    // at least it; with none prepared, up to the clock, which every later proposal exceeds.
    long ub = proposals.isEmpty() || Mutants.active(ParisMutants.PARIS_APPLY_PAST_PREPARED)
        ? clock.counter() : proposals.firstKey() - 1;
    long now = System.currentTimeMillis();
    boolean sent = false;
    // ct <= ub, where Alg. 4 line 11 has ct < ub: ub is below every proposal to come (pending
    // ones by the minus one above; later ones are above the clock and at least the UST, which
    // only grow and bounded every pending proposal), so nothing can still commit at ub;
    // applying it too makes VV[m] = ub mean exactly "everything up to ub applied here".
    while (!committed.isEmpty() && committed.firstKey() <= ub) {
      Map.Entry<Long, List<TxnWrites>> e = committed.pollFirstEntry();
      for (TxnWrites t : e.getValue()) {
        install(t, now);
      }
      Replicate rep = Replicate.newBuilder().setCommitTime(e.getKey()).addAllTxns(e.getValue()).setOriginMs(now).build();
      for (int i = 0; i < replicaDcs.length; i++) {
        if (i != me) {
          ep.send(placement.serverOf(replicaDcs[i], partition), rep);
        }
      }
      sent = true;
    }
    setVv(me, ub);
    if (!sent && (!Mutants.active(ParisMutants.PARIS_SLOW_HEARTBEATS) || ++heartbeatTicks % 20 == 0)) {
      Heartbeat hb = Heartbeat.newBuilder().setTime(ub).build();
      for (int i = 0; i < replicaDcs.length; i++) {
        if (i != me) {
          ep.send(placement.serverOf(replicaDcs[i], partition), hb);
        }
      }
    }
  }

  private void onReplicate(Incoming m, Replicate r) {
    long now = System.currentTimeMillis();
    for (TxnWrites t : r.getTxnsList()) {
      install(t, now);
    }
    if (r.getOriginMs() > 0) {
      org.k2bench.core.metrics.ProcessMetrics.record("replication_lag:"
          + topology.dcName(topology.dcOfServer(m.from())) + ">" + topology.dcName(dc),
          Math.max(0, now - r.getOriginMs()) * 1000);
    }
    setVv(replicaOf(m.from()), r.getCommitTime()); // Alg. 4 line 30
  }

  private void install(TxnWrites t, long nowMs) {
    // PaRiS collects below S_old; BPR and NoCC, without a stabilization protocol, below the GC
    // window's start, and BPR never above a read still blocked here (it reads at its snapshot).
    long floor = mode == Mode.PARIS ? sOld : LamportClock.hybridCounter(nowMs - options.gcWindowMs());
    Blocked oldest = mode == Mode.BPR ? oldestBlocked() : null;
    if (oldest != null) { // blocked reads are in wait-target order, which follows their snapshots
      floor = Math.min(floor, oldest.readSnapshot());
    }
    for (KeyRow w : t.getWritesList()) {
      items.install(w.getKey(), t.getVersion(), w.getValue(), nowMs, floor);
    }
    Installed i = new Installed(LamportClock.counterOf(t.getVersion()), System.nanoTime());
    invisible.add(i);
    if (mode == Mode.BPR) {
      if (unread.size() >= UNREAD_CAP) { // no read has come for a long time: forget the oldest
        unread.poll();
        count("visibility_at_read_dropped");
      }
      unread.add(i);
    }
    showVisible();
  }

  /** Records the visibility latency of every installed transaction new transactions now see. */
  private void showVisible() {
    long upTo = switch (mode) {
      case PARIS -> ust;
      case BPR -> installed();
      case NOCC -> Long.MAX_VALUE;
    };
    long now = System.nanoTime();
    while (!invisible.isEmpty() && invisible.peek().commitTime() <= upTo) {
      org.k2bench.core.metrics.ProcessMetrics.record(visibilityTag,
          Math.max(0, now - invisible.poll().installedNanos()) / 1000);
    }
  }

  private int replicaOf(int server) {
    int from = topology.dcOfServer(server);
    for (int i = 0; i < replicaDcs.length; i++) {
      if (replicaDcs[i] == from) {
        return i;
      }
    }
    throw new MalformedMessageException("server " + server + " holds no replica of partition " + partition);
  }

  private void setVv(int i, long t) {
    vv[i] = Math.max(vv[i], t);
    if (mode == Mode.BPR) {
      long have = installed();
      installedNow = have;
      Blocked b;
      while (!waiterThreads && (b = oldestBlocked()) != null && b.snapshot() <= have) {
        long t0 = THREAD_CPU.getCurrentThreadCpuTime();
        blocked.poll();
        b.done().set(true);
        b.answer().run();
        org.k2bench.core.metrics.ProcessMetrics.record("read_blocked_cpu_ns",
            b.cpuNanos()[0] + THREAD_CPU.getCurrentThreadCpuTime() - t0);
      }
      showVisible();
    }
  }

  private void advanceUst(long to, long sOldTo) {
    if (to > ust) {
      ust = to;
      showVisible();
    }
    sOld = Math.max(sOld, sOldTo);
  }

  /** The snapshot this partition has installed: everything of every replica up to it. */
  private long installed() {
    long m = Long.MAX_VALUE;
    for (long t : vv) {
      m = Math.min(m, t);
    }
    return m;
  }

  /**
   * BPR: what this partition must have installed before a read at {@code snapshot} is
   * answered: the snapshot itself (§V); a blocked read waits for it (Blocked.snapshot), and is
   * released in its order. (Mutant bpr-over-wait: five apply intervals Δ_R past it.)
   */
  private long bprWaitTarget(long snapshot) {
    return Mutants.active(ParisMutants.BPR_OVER_WAIT) ? snapshot + ((5 * replicationMs) << LamportClock.LOGICAL_BITS)
        : snapshot;
  }

  /** The oldest snapshot a transaction this server coordinates may read, or the UST if none. */
  private long oldestSnapshot() {
    long m = ust;
    if (Mutants.active(ParisMutants.PARIS_GC_IGNORES_RUNNING)) {
      return m;
    }
    for (Txn t : tx.values()) {
      m = Math.min(m, t.snapshot());
    }
    return m;
  }

  /**
   * Every Δ_G (Alg. 4 lines 34-38, the tree flattened to a star): each server reports the
   * minimum of its version vector and its oldest snapshot to its datacenter's root (server 0);
   * the root sends its datacenter's GST (the minimum over its servers) to the other roots and
   * announces to its servers the UST (the minimum over every datacenter's GST) and S_old.
   */
  private void report() {
    StableReport r = StableReport.newBuilder().setMinVv(installed()).setOldestSnapshot(oldestSnapshot()).build();
    if (root) {
      onReport(shard, r);
      stabilize();
    } else {
      ep.send(topology.serverId(dc, 0), r);
    }
  }

  private void onReport(int fromShard, StableReport r) {
    reportMin[fromShard] = Math.max(reportMin[fromShard], r.getMinVv());
    reportOld[fromShard] = r.getOldestSnapshot();
  }

  private void stabilize() {
    long gst = Long.MAX_VALUE;
    long old = Long.MAX_VALUE;
    for (int s = 0; s < reportMin.length; s++) {
      gst = Math.min(gst, reportMin[s]);
      old = Math.min(old, reportOld[s]);
    }
    dcGst[dc] = Math.max(dcGst[dc], gst);
    dcOld[dc] = old;
    DcStable mine = DcStable.newBuilder().setDc(dc).setGst(dcGst[dc]).setOldestSnapshot(old).build();
    for (int d = 0; d < topology.numDcs(); d++) {
      if (d != dc) {
        ep.send(topology.serverId(d, 0), mine);
      }
    }
    long u = Long.MAX_VALUE;
    long o = Long.MAX_VALUE;
    for (int d = 0; d < dcGst.length; d++) {
      u = Math.min(u, dcGst[d]);
      o = Math.min(o, dcOld[d]);
    }
    // S_old never passes the UST: a transaction that starts later reads at least the UST.
    UstAnnounce a = UstAnnounce.newBuilder().setUst(u).setSOld(Math.min(o, u)).build();
    for (int s = 0; s < topology.serversPerDc(); s++) {
      if (s == shard) {
        advanceUst(u, Math.min(o, u));
      } else {
        ep.send(topology.serverId(dc, s), a);
      }
    }
  }

  @Override
  protected void tick() {
    super.tick();
    detector.tick(FailureDetector.monotonicMs());
    // Transactions whose client went away: their contexts would hold S_old back for good.
    long now = System.currentTimeMillis();
    // BPR: a read blocked for three quarters of its coordinator's wait is answered with an
    // error (a network partition would otherwise pile them up here), before anyone gives up.
    long nanos = System.nanoTime();
    blocked.removeIf(b -> {
      if (b.done().get()) {
        return true; // answered by its thread
      }
      if (nanos - b.sinceNanos() > cohortWaitMs() * 3 / 4 * 1_000_000L && b.done().compareAndSet(false, true)) {
        b.expire().run();
        return true;
      }
      return false;
    });
    abortedUnprepared.values().removeIf(at -> now - at > 10 * options.rpcTimeoutMs());
    if (tx.values().removeIf(t -> now - t.activeMs() > options.txnTimeoutMs())) {
      currentOfClient.values().removeIf(id -> !tx.containsKey(id));
    }
  }

  @Override
  protected void gauges(Map<String, Long> out) {
    super.gauges(out);
    out.put("ust", ust);
    out.put("installed", installed());
    out.put("prepared", (long) prepared.size());
    out.put("committed_pending", (long) committed.size());
    out.put("blocked", blocked.stream().filter(b -> !b.done().get()).count());
    out.put("open_txns", (long) tx.size());
    out.put("versions_kept", items.kept());
    out.put("versions_collected", items.removed());
    out.put("suspected_dcs", (long) detector.suspectedCount());
    out.put("dcs_never_answered", (long) detector.neverAnsweredCount());
  }
}
