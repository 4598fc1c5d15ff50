package org.k2bench.core.testing;

/**
 * One deliberately broken protocol variant ({@link Mutants}): the name that selects it
 * (an experiment's {@code testing.mutant}, through the trial's spec) and what it breaks.
 * Declared as a constant by the module whose code it breaks, and listed by every system
 * that runs that code ({@link org.k2bench.core.api.StoreSystem#mutants()}).
 *
 * <p>Here, beside the switch, rather than in {@code api}: a mutant is test-only machinery,
 * and {@link Mutants#active(Mutant)} is how the code it breaks reads it.
 */
public record Mutant(String name, String description) {
  public Mutant {
    // the name is a command-line value and a YAML string: lower case, digits and dashes
    if (name == null || !name.matches("[a-z0-9]+(-[a-z0-9]+)*")) {
      throw new IllegalArgumentException("mutant name must be lower-case words joined by '-', got '" + name + "'");
    }
    if (description == null || description.isBlank()) {
      throw new IllegalArgumentException("mutant '" + name + "' needs a description");
    }
  }
}
