package org.k2bench.core.api;

import java.util.Locale;
import org.k2bench.core.topology.ConfigException;

/**
 * A protocol parameter one system declares ({@link StoreSystem#options()}): its name in
 * experiment files ({@code server.options.<system>.<name>}) and in a trial's spec
 * ({@code system.options.<name>}), its type, default and allowed range. Values are
 * checked when a server or client starts, and before that by the orchestrator from
 * {@code systems --json}.
 *
 * @param name lower_snake_case, unique within the system
 * @param type what a value must be
 * @param defaultValue the value when none is given (the paper's, where it has one)
 * @param min the smallest allowed value (numbers)
 * @param max the largest allowed value (numbers)
 * @param description one line: what it does and, where it has one, the paper's value
 * @param choices the names a {@link Type#CHOICE} takes (its value is the index of one); empty otherwise
 */
public record SystemOption(String name, Type type, double defaultValue, double min, double max,
    String description, java.util.List<String> choices) {

  /** The kinds of value an option takes. */
  public enum Type {
    /** A whole number (a count, or milliseconds). */
    INTEGER,
    /** Any number in range. */
    NUMBER,
    /** true or false (stored as 1 or 0). */
    BOOLEAN,
    /** One of a few names (stored as its index in {@link SystemOption#choices}). */
    CHOICE;

    public String jsonName() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public SystemOption {
    choices = java.util.List.copyOf(choices);
    if ((type == Type.CHOICE) != !choices.isEmpty()) {
      throw new IllegalArgumentException(name + ": a choice option, and only one, names its choices");
    }
    if (!name.matches("[a-z][a-z0-9_]*")) {
      throw new IllegalArgumentException("option names are lower_snake_case, got '" + name + "'");
    }
    if (!(min <= defaultValue && defaultValue <= max)) {
      throw new IllegalArgumentException(name + ": default " + defaultValue + " outside [" + min + ", " + max + "]");
    }
  }

  /** A whole-number option in [min, max]. */
  public static SystemOption integer(String name, long dflt, long min, long max, String description) {
    return new SystemOption(name, Type.INTEGER, dflt, min, max, description, java.util.List.of());
  }

  /** A numeric option in [min, max]. */
  public static SystemOption number(String name, double dflt, double min, double max, String description) {
    return new SystemOption(name, Type.NUMBER, dflt, min, max, description, java.util.List.of());
  }

  /** A true/false option. */
  public static SystemOption flag(String name, boolean dflt, String description) {
    return new SystemOption(name, Type.BOOLEAN, dflt ? 1 : 0, 0, 1, description, java.util.List.of());
  }

  /** One of {@code choices}, {@code dflt} when none is given; {@link SystemOptions#choice} gives it by name. */
  public static SystemOption choice(String name, String dflt, java.util.List<String> choices, String description) {
    int i = choices.indexOf(dflt);
    if (i < 0) {
      throw new IllegalArgumentException(name + ": default '" + dflt + "' is not one of " + choices);
    }
    return new SystemOption(name, Type.CHOICE, i, 0, choices.size() - 1, description, choices);
  }

  /**
   * The value {@code text} stands for; a one-line {@link ConfigException} on {@code field}
   * naming what is allowed otherwise.
   */
  public double parse(String field, String text) {
    String t = text == null ? "" : text.trim();
    if (type == Type.BOOLEAN) {
      if (t.equals("true") || t.equals("false")) {
        return t.equals("true") ? 1 : 0;
      }
      throw new ConfigException(field, "must be true or false, got '" + text + "'");
    }
    if (type == Type.CHOICE) {
      int i = choices.indexOf(t);
      if (i < 0) {
        throw new ConfigException(field, "must be one of " + String.join(", ", choices) + ", got '" + text + "'");
      }
      return i;
    }
    double v;
    try {
      v = Double.parseDouble(t);
    } catch (NumberFormatException e) {
      throw new ConfigException(field, "must be " + (type == Type.INTEGER ? "a whole number" : "a number")
          + " in [" + show(min) + ", " + show(max) + "], got '" + text + "'");
    }
    if (type == Type.INTEGER && v != Math.rint(v)) {
      throw new ConfigException(field, "must be a whole number, got '" + text + "'");
    }
    if (!(v >= min && v <= max)) {
      throw new ConfigException(field, "must be in [" + show(min) + ", " + show(max) + "], got '" + text + "'");
    }
    return v;
  }

  /** A value as a user writes it (whole numbers without ".0", flags as true/false). */
  public String show(double v) {
    if (type == Type.BOOLEAN) {
      return v != 0 ? "true" : "false";
    }
    if (type == Type.CHOICE) {
      return choices.get((int) v);
    }
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
  }
}
