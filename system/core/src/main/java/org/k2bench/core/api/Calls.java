package org.k2bench.core.api;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A client session's calls, with a failure turned into an operation error: blocking on one
 * ({@link #await}), or the same without blocking ({@link #within}, {@link #join}).
 */
public final class Calls {
  private Calls() {}

  /**
   * {@link #await} without blocking: {@code f}, failing after {@code timeoutMs} or with its
   * own error as the {@link OperationFailedException} await would throw. The timeout
   * completes {@code f} itself, so a typed call forgets its reply as a cancelled one does.
   */
  public static <T> CompletableFuture<T> within(CompletableFuture<T> f, String what, long timeoutMs) {
    return f.orTimeout(timeoutMs, TimeUnit.MILLISECONDS).handle((v, e) -> {
      if (e == null) {
        return v;
      }
      Throwable cause = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
      if (cause instanceof TimeoutException) {
        throw new OperationFailedException(what + " timed out after " + timeoutMs + " ms", cause);
      }
      if (cause instanceof OperationFailedException o) {
        throw o;
      }
      throw new OperationFailedException(what + " failed: " + cause.getMessage(), cause);
    });
  }

  /**
   * The replies of one round, in order, once every call answered; fails with the first call
   * that fails, as awaiting them in turn would (the others end by their own timeouts).
   */
  public static <T> CompletableFuture<java.util.List<T>> all(java.util.List<CompletableFuture<T>> calls) {
    CompletableFuture<java.util.List<T>> out = new CompletableFuture<>();
    java.util.concurrent.atomic.AtomicInteger left = new java.util.concurrent.atomic.AtomicInteger(calls.size());
    for (CompletableFuture<T> c : calls) {
      c.whenComplete((v, e) -> {
        if (e != null) {
          out.completeExceptionally(e);
        } else if (left.decrementAndGet() == 0) {
          out.complete(calls.stream().map(CompletableFuture::join).toList());
        }
      });
    }
    if (calls.isEmpty()) {
      out.complete(java.util.List.of());
    }
    return out;
  }

  /**
   * Waits for an operation made of calls each bounded by {@link #within}, so the wait ends;
   * throws its {@link OperationFailedException} (or any other error) as such.
   */
  public static <T> T join(CompletableFuture<T> f) {
    try {
      return f.join();
    } catch (java.util.concurrent.CompletionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new OperationFailedException(String.valueOf(e.getCause()), e.getCause());
    }
  }

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
