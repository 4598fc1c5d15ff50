package org.k2bench.core.api;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Blocking on a call from a client session, with the failure turned into an operation error. */
public final class Calls {
  private Calls() {}

  public static <T> T await(CompletableFuture<T> f, String what, long timeoutMs) {
    try {
      return f.get(timeoutMs, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      f.cancel(false);
      throw new OperationFailedException(what + " timed out after " + timeoutMs + " ms", e);
    } catch (ExecutionException e) {
      throw new OperationFailedException(what + " failed: " + e.getCause().getMessage(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new OperationFailedException(what + " interrupted", e);
    }
  }
}
