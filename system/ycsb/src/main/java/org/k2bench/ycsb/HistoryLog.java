package org.k2bench.ycsb;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The history of a client process: one JSON object per operation, in the order
 * the operations end, for the consistency checker (k2bench/checker.py has the format):
 *
 * <pre>
 * {"s":4097,"i":12,"op":"rot","t0":1795...,"t1":1795...,"ok":true,"r":{"user7":1234},"rounds":1}
 * {"s":4097,"i":13,"op":"wot","t0":...,"t1":...,"ok":true,"w":{"user7":5678,"user9":5678}}
 * {"s":4098,"i":3,"op":"write","t0":...,"t1":...,"ok":false,"w":{"user3":null},"err":"..."}
 * </pre>
 *
 * Times are epoch milliseconds with sub-millisecond precision: t0 the actual start, and for a
 * paced operation that started behind its schedule "ti", the intended one (latency counted
 * from it, as the interval logs count it, includes the wait). Thread-safe.
 */
final class HistoryLog implements AutoCloseable {
  private static final JsonFactory JSON = new JsonFactory();
  private static final long EPOCH_NANOS = System.currentTimeMillis() * 1_000_000L - System.nanoTime();

  private final OutputStream out;
  private final JsonGenerator json;

  HistoryLog(Path file) throws IOException {
    this.out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16);
    this.json = JSON.createGenerator(out, JsonEncoding.UTF8);
    json.setRootValueSeparator(new com.fasterxml.jackson.core.io.SerializedString("\n"));
  }

  /** Epoch milliseconds of a System.nanoTime() reading. */
  static double epochMs(long nanoTime) {
    return (EPOCH_NANOS + nanoTime) / 1e6;
  }

  /**
   * @param reads key -> version read (read-only and read-write transactions), or null
   * @param writes key -> version written (null values: the client never learned it), or null
   * @param rounds wide-area rounds of a read-only transaction or of a read-write transaction's reads, or -1
   * @param error why the operation failed, or null
   * @param intendedNanos the paced start (System.nanoTime), or 0 when unpaced
   */
  synchronized void record(long session, long index, String op, long startNanos, long endNanos,
      Map<String, Long> reads, Map<String, Long> writes, int rounds, String error, long intendedNanos) {
    try {
      json.writeStartObject();
      json.writeNumberField("s", session);
      json.writeNumberField("i", index);
      json.writeStringField("op", op);
      json.writeNumberField("t0", epochMs(startNanos));
      json.writeNumberField("t1", epochMs(endNanos));
      if (intendedNanos > 0 && intendedNanos < startNanos) {
        json.writeNumberField("ti", epochMs(intendedNanos));
      }
      json.writeBooleanField("ok", error == null);
      writeMap("r", reads);
      writeMap("w", writes);
      if (rounds >= 0) {
        json.writeNumberField("rounds", rounds);
      }
      if (error != null) {
        json.writeStringField("err", error);
      }
      json.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void writeMap(String field, Map<String, Long> m) throws IOException {
    if (m == null) {
      return;
    }
    json.writeObjectFieldStart(field);
    for (Map.Entry<String, Long> e : m.entrySet()) {
      if (e.getValue() == null) {
        json.writeNullField(e.getKey());
      } else {
        json.writeNumberField(e.getKey(), e.getValue());
      }
    }
    json.writeEndObject();
  }

  @Override
  public synchronized void close() throws IOException {
    json.writeRaw('\n');
    json.close();
    out.close();
  }
}
