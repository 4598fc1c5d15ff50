package org.k2bench.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.k2bench.core.api.StoreSystem;
import org.k2bench.core.api.Systems;
import org.k2bench.core.testing.Mutant;
import org.k2bench.core.testing.Mutants;

/**
 * {@code systems --json}, which the Python harness reads every fact about a system from
 * (so that adding one needs no Python edit): each key for each system, and the mutants
 * against what the modules declare.
 */
class SystemsCommandTest {
  /** The keys of a system, in order: those the harness read first, then the descriptor's. */
  static final List<String> KEYS = List.of("name", "description", "max_wan_rounds", "not_own", "options",
      "read_write_transactions", "write_only_transactions", "message_loss", "placements", "label", "colour",
      "order", "paper", "run_by_default", "dc_cache", "client_second_round", "causal", "thread_categories",
      "mutants");

  static List<JsonNode> systems;
  static Map<String, JsonNode> byName;

  @BeforeAll
  static void runIt() throws Exception {
    MainTest.Result r = MainTest.run("systems", "--json");
    assertEquals(0, r.code(), r.err());
    systems = new ArrayList<>();
    new ObjectMapper().readTree(r.out()).forEach(systems::add);
    byName = new HashMap<>();
    systems.forEach(s -> byName.put(s.get("name").asText(), s));
  }

  @Test
  void everySystemHasEveryKeyInOrder() {
    assertEquals(Systems.available().keySet(), new TreeSet<>(byName.keySet()), "one object per bundled system");
    for (JsonNode s : systems) {
      List<String> keys = new ArrayList<>();
      s.fieldNames().forEachRemaining(keys::add);
      assertEquals(KEYS, keys, s.get("name").asText());
      assertTrue(s.get("label").isTextual() && !s.get("label").asText().isBlank(), s.toString());
      assertTrue(s.get("colour").isNull() || s.get("colour").isTextual(), s.toString());
      assertTrue(s.get("order").isInt(), s.toString());
      assertTrue(s.get("paper").isNull() || s.get("paper").isTextual(), s.toString());
      for (String flag : List.of("run_by_default", "dc_cache", "client_second_round", "causal")) {
        assertTrue(s.get(flag).isBoolean(), flag + ": " + s);
      }
      assertTrue(s.get("thread_categories").isObject(), s.toString());
      s.get("thread_categories").fields().forEachRemaining(e -> Pattern.compile(e.getValue().asText()));
      assertTrue(s.get("mutants").isArray(), s.toString());
    }
  }

  @Test
  void listedByOrderThenName() {
    for (int i = 1; i < systems.size(); i++) {
      JsonNode a = systems.get(i - 1);
      JsonNode b = systems.get(i);
      int byOrder = Integer.compare(a.get("order").asInt(), b.get("order").asInt());
      assertTrue(byOrder < 0 || byOrder == 0 && a.get("name").asText().compareTo(b.get("name").asText()) < 0,
          a.get("name") + " before " + b.get("name"));
    }
  }

  @Test
  void labelsAndColoursTellTheSystemsApart() {
    Set<String> labels = new HashSet<>();
    Set<String> colours = new HashSet<>();
    for (JsonNode s : systems) {
      assertTrue(labels.add(s.get("label").asText()), "label used twice: " + s.get("label"));
      if (!s.get("colour").isNull()) {
        String c = s.get("colour").asText();
        assertTrue(c.matches("^#[0-9a-f]{6}$"), "colour of " + s.get("name") + ": " + c);
        assertTrue(colours.add(c), "colour used twice: " + c);
      }
    }
  }

  @Test
  void claimsTheHarnessActsOn() {
    for (JsonNode s : systems) {
      assertEquals(!s.get("name").asText().equals("nocc"), s.get("causal").asBoolean(), s.get("name").asText());
    }
    assertTrue(byName.get("k2").get("dc_cache").asBoolean(), "K2 §III-A");
    assertFalse(byName.get("paris-star").get("dc_cache").asBoolean(), "PaRiS* has no DC cache (K2 §VII-A)");
    assertTrue(byName.get("k2").get("client_second_round").asBoolean(), "K2 §V-C");
    assertEquals("^k2b-bpr-wait", byName.get("bpr").get("thread_categories").path("BPR blocked-read threads").asText());
  }

  @Test
  void mutantsAreSortedAndDescribed() {
    for (JsonNode s : systems) {
      List<String> names = new ArrayList<>();
      for (JsonNode m : s.get("mutants")) {
        List<String> keys = new ArrayList<>();
        m.fieldNames().forEachRemaining(keys::add);
        assertEquals(List.of("name", "description"), keys, m.toString());
        assertFalse(m.get("description").asText().isBlank(), m.toString());
        names.add(m.get("name").asText());
      }
      assertEquals(names.stream().sorted().toList(), names, s.get("name").asText());
      assertEquals(names.size(), new HashSet<>(names).size(), "listed twice by " + s.get("name"));
    }
  }

  /**
   * Every mutant a module declares is honoured by some system, every one a system lists is
   * declared (same name, same description), and {@link Mutants#all()}, what
   * a spec's {@code testing.mutant} is checked against, is exactly those.
   */
  @Test
  void everyDeclaredMutantIsHonouredAndNoOtherIsListed() throws Exception {
    Map<String, Mutant> declared = declaredMutants();
    assertTrue(declared.keySet().containsAll(Mutants.SHARED.stream().map(Mutant::name).toList()),
        declared.keySet().toString());
    Set<String> listed = new TreeSet<>();
    for (JsonNode s : systems) {
      for (JsonNode m : s.get("mutants")) {
        String name = m.get("name").asText();
        Mutant d = declared.get(name);
        assertNotNull(d, s.get("name") + " lists an undeclared mutant " + name);
        assertEquals(d.description(), m.get("description").asText(), name);
        listed.add(name);
      }
    }
    assertEquals(declared.keySet(), listed, "declared mutants no system honours, or the reverse");
    Set<String> known = new TreeSet<>(listed);
    Mutants.SHARED.forEach(m -> known.add(m.name()));
    assertEquals(known, Mutants.all().keySet());
  }

  /**
   * The {@code static final Mutant} constants of core and of every module with a system,
   * found in their classes (directories or jars, as the build put them on the class path).
   */
  static Map<String, Mutant> declaredMutants() throws Exception {
    Set<Path> roots = new LinkedHashSet<>();
    roots.add(codeSource(Mutants.class));
    for (StoreSystem s : Systems.available().values()) {
      roots.add(codeSource(s.getClass()));
    }
    Map<String, Mutant> out = new TreeMap<>();
    ClassLoader loader = SystemsCommandTest.class.getClassLoader();
    for (Path root : roots) {
      for (String className : classNames(root)) {
        Class<?> c = Class.forName(className, false, loader);
        for (Field f : c.getDeclaredFields()) {
          int mod = f.getModifiers();
          if (f.getType() == Mutant.class && Modifier.isStatic(mod) && Modifier.isFinal(mod)) {
            f.setAccessible(true);
            Mutant m = (Mutant) f.get(null);
            Mutant had = out.put(m.name(), m);
            assertTrue(had == null || had.equals(m), "declared twice: " + had + ", " + m);
          }
        }
      }
    }
    return out;
  }

  static Path codeSource(Class<?> c) throws Exception {
    URI uri = c.getProtectionDomain().getCodeSource().getLocation().toURI();
    return Path.of(uri);
  }

  static List<String> classNames(Path root) throws Exception {
    List<String> names = new ArrayList<>();
    if (Files.isDirectory(root)) {
      try (Stream<Path> files = Files.walk(root)) {
        files.filter(p -> p.toString().endsWith(".class")).forEach(p -> names.add(root.relativize(p).toString()));
      }
    } else {
      try (JarFile jar = new JarFile(root.toFile())) {
        jar.stream().map(e -> e.getName()).filter(n -> n.endsWith(".class")).forEach(names::add);
      }
    }
    return names.stream().filter(n -> !n.endsWith("module-info.class"))
        .map(n -> n.substring(0, n.length() - ".class".length()).replace('/', '.').replace('\\', '.')).toList();
  }
}
