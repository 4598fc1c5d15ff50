package org.k2bench.core.api;

import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;
import org.k2bench.core.topology.ConfigException;

/** Looks up bundled systems by name. */
public final class Systems {
  private Systems() {}

  public static Map<String, StoreSystem> available() {
    Map<String, StoreSystem> out = new TreeMap<>();
    for (StoreSystem s : ServiceLoader.load(StoreSystem.class)) {
      out.put(s.name(), s);
    }
    return out;
  }

  public static StoreSystem byName(String field, String name) {
    Map<String, StoreSystem> all = available();
    StoreSystem s = all.get(name);
    if (s == null) {
      throw new ConfigException(field, "unknown system '" + name + "'; available: "
          + String.join(", ", all.keySet()));
    }
    return s;
  }
}
