package org.k2bench.core.api;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.k2bench.core.topology.ConfigException;

/**
 * The values given for one system's declared options ({@link SystemOption}), checked; an
 * option not given reads as its default. Immutable.
 */
public final class SystemOptions {
  /** No option given: every option reads as its default. */
  public static final SystemOptions NONE = new SystemOptions(Map.of());

  private final Map<String, Double> given;

  private SystemOptions(Map<String, Double> given) {
    this.given = Map.copyOf(given);
  }

  /**
   * Checks {@code given} (name -> value as text) against what {@code system} declares; a
   * one-line {@link ConfigException} on {@code field + name} for a name it does not
   * declare (listing those it does) or a value out of type or range.
   */
  public static SystemOptions parse(StoreSystem system, Map<String, String> given, String field) {
    if (given == null || given.isEmpty()) {
      return NONE;
    }
    Map<String, SystemOption> declared = system.options().stream()
        .collect(Collectors.toMap(SystemOption::name, o -> o));
    Map<String, Double> values = new TreeMap<>();
    for (Map.Entry<String, String> e : given.entrySet()) {
      SystemOption o = declared.get(e.getKey());
      if (o == null) {
        throw new ConfigException(field + e.getKey(), system.name() + " has no option '" + e.getKey() + "'; "
            + (declared.isEmpty() ? "it declares none" : "its options: " + String.join(", ", new TreeMap<>(declared).keySet())));
      }
      values.put(o.name(), o.parse(field + e.getKey(), e.getValue()));
    }
    return new SystemOptions(values);
  }

  public double number(SystemOption o) {
    return given.getOrDefault(o.name(), o.defaultValue());
  }

  public long integer(SystemOption o) {
    return (long) number(o);
  }

  public boolean flag(SystemOption o) {
    return number(o) != 0;
  }

  /** A {@link SystemOption.Type#CHOICE} option's value: the name of the choice in force. */
  public String choice(SystemOption o) {
    if (o.type() != SystemOption.Type.CHOICE) {
      throw new IllegalArgumentException(o.name() + " is not a choice option");
    }
    return o.show(number(o));
  }

  /** Every declared option of {@code declared} with the value in force, as a user writes it. */
  public Map<String, String> inForce(List<SystemOption> declared) {
    Map<String, String> out = new TreeMap<>();
    for (SystemOption o : declared) {
      out.put(o.name(), o.show(number(o)));
    }
    return out;
  }

  @Override
  public boolean equals(Object other) {
    return other instanceof SystemOptions s && s.given.equals(given);
  }

  @Override
  public int hashCode() {
    return given.hashCode();
  }

  @Override
  public String toString() {
    return given.toString();
  }
}
