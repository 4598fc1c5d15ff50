package org.k2bench.core.topology;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A parsed YAML/JSON node that knows its dotted path, so every type or range error names
 * the exact field. Used instead of plain data binding because binding errors are
 * multi-line and name Java types rather than the user's field.
 */
public final class ConfigNode {
  private final String path;
  private final JsonNode node;

  public ConfigNode(String path, JsonNode node) {
    this.path = path;
    this.node = node;
  }

  public String path() {
    return path;
  }

  public boolean has(String name) {
    return node.has(name) && !node.get(name).isNull();
  }

  private String childPath(String name) {
    return path.isEmpty() ? name : path + "." + name;
  }

  public ConfigNode get(String name) {
    if (!has(name)) {
      throw new ConfigException(childPath(name), "missing; this field is required");
    }
    return new ConfigNode(childPath(name), node.get(name));
  }

  /** Fails on any key not in {@code allowed}, naming it and the allowed ones. */
  public ConfigNode requireOnly(Set<String> allowed) {
    requireObject();
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String f = it.next();
      if (!allowed.contains(f)) {
        throw new ConfigException(childPath(f), "unknown field; allowed here: "
            + new java.util.TreeSet<>(allowed));
      }
    }
    return this;
  }

  public ConfigNode requireObject() {
    if (!node.isObject()) {
      throw new ConfigException(path, "must be a mapping, got " + kind());
    }
    return this;
  }

  public List<Map.Entry<String, ConfigNode>> entries() {
    requireObject();
    List<Map.Entry<String, ConfigNode>> out = new ArrayList<>();
    node.fields().forEachRemaining(e ->
        out.add(Map.entry(e.getKey(), new ConfigNode(childPath(e.getKey()), e.getValue()))));
    return out;
  }

  public List<ConfigNode> elements() {
    if (!node.isArray()) {
      throw new ConfigException(path, "must be a list, got " + kind());
    }
    List<ConfigNode> out = new ArrayList<>();
    for (int i = 0; i < node.size(); i++) {
      out.add(new ConfigNode(path + "[" + i + "]", node.get(i)));
    }
    return out;
  }

  public String asText() {
    if (!node.isTextual()) {
      throw new ConfigException(path, "must be a string, got " + kind());
    }
    return node.asText();
  }

  public double asDouble() {
    if (!node.isNumber()) {
      throw new ConfigException(path, "must be a number, got " + kind());
    }
    return node.asDouble();
  }

  public int asInt() {
    if (!node.isIntegralNumber() || !node.canConvertToInt()) {
      throw new ConfigException(path, "must be an integer, got " + kind());
    }
    return node.asInt();
  }

  public double getDouble(String name, double dflt) {
    return has(name) ? get(name).asDouble() : dflt;
  }

  public int getInt(String name, int dflt) {
    return has(name) ? get(name).asInt() : dflt;
  }

  public String getText(String name, String dflt) {
    return has(name) ? get(name).asText() : dflt;
  }

  private String kind() {
    if (node.isTextual()) {
      return "the string '" + node.asText() + "'";
    }
    if (node.isNumber() || node.isBoolean()) {
      return node.getNodeType().toString().toLowerCase() + " " + node;
    }
    return node.getNodeType().toString().toLowerCase();
  }
}
