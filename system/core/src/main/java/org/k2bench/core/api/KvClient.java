package org.k2bench.core.api;

import java.util.Collection;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.k2bench.core.data.Row;

/**
 * The client-facing API every bundled system implements. One instance is one
 * client session (it tracks that session's causal metadata); use one per thread.
 * Operations block until done and throw {@link OperationFailedException} on failure.
 */
public interface KvClient extends AutoCloseable {
  ReadResult readTxn(Collection<String> keys);

  WriteResult writeTxn(Map<String, Row> writes);

  WriteResult write(String key, Row row);

  /**
   * Whether {@link #readTxnAsync} and {@link #writeTxnAsync} never block the calling thread
   * (the system's client is written as callbacks on its calls). Then one thread may drive
   * many sessions, each with one operation at a time: a thread per session costs a machine
   * that hosts every datacenter's clients a wake-up per round of every operation.
   */
  default boolean nonBlocking() {
    return false;
  }

  /**
   * {@link #readTxn} as a future that fails with {@link OperationFailedException}; it
   * completes on whichever thread delivers the last reply, which must not block. Blocking
   * unless {@link #nonBlocking}.
   */
  default CompletableFuture<ReadResult> readTxnAsync(Collection<String> keys) {
    try {
      return CompletableFuture.completedFuture(readTxn(keys));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /** {@link #writeTxn} as a future, as {@link #readTxnAsync}. */
  default CompletableFuture<WriteResult> writeTxnAsync(Map<String, Row> writes) {
    try {
      return CompletableFuture.completedFuture(writeTxn(writes));
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * Starts an interactive read-write transaction, for systems that declare them
   * ({@link StoreSystem#readWriteTransactions()}); the others throw
   * {@link UnsupportedOperationException}.
   */
  default ReadWriteTxn begin() {
    throw new UnsupportedOperationException("this system has no read-write transactions");
  }

  int id();

  int dc();

  @Override
  void close();
}
