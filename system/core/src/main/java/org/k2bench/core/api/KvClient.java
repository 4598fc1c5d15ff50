package org.k2bench.core.api;

import java.util.Collection;
import java.util.Map;
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
