package org.k2bench.core.topology;

/**
 * Bad input in a configuration file or flag. The message is one line that names the field
 * (as a dotted path, e.g. {@code rtt_ms.VA.CA}) and says how to fix it; callers print it
 * as is and exit non-zero.
 */
public final class ConfigException extends RuntimeException {
  private final String field;

  public ConfigException(String field, String problem) {
    super(field + ": " + problem);
    this.field = field;
  }

  public String field() {
    return field;
  }
}
