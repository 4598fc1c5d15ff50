package org.k2bench.core.topology;

/** A server's listening address. */
public record HostPort(String host, int port) {
  public static HostPort parse(String field, String text) {
    int colon = text == null ? -1 : text.lastIndexOf(':');
    if (colon <= 0 || colon == text.length() - 1) {
      throw new ConfigException(field, "'" + text + "' is not host:port (e.g. 127.0.0.1:7000)");
    }
    int port;
    try {
      port = Integer.parseInt(text.substring(colon + 1));
    } catch (NumberFormatException e) {
      throw new ConfigException(field, "port in '" + text + "' is not a number");
    }
    if (port < 1 || port > 65535) {
      throw new ConfigException(field, "port " + port + " is outside 1..65535");
    }
    return new HostPort(text.substring(0, colon), port);
  }

  @Override
  public String toString() {
    return host + ":" + port;
  }
}
