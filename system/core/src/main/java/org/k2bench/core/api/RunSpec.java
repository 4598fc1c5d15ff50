package org.k2bench.core.api;

import com.fasterxml.jackson.annotation.JacksonAnnotationsInside;
import com.fasterxml.jackson.annotation.JacksonInject;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import com.fasterxml.jackson.annotation.OptBoolean;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.InjectableValues;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonPOJOBuilder;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.exc.InvalidNullException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.exc.ValueInstantiationException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.k2bench.core.topology.ConfigException;

/**
 * One trial's {@code spec.json} as the harness wrote it (k2bench/spec/trial.py; what every
 * field means: k2bench/spec/schema.py). The harness is the one place a run's parameters are
 * defaulted and checked, so this has no default and no range check of its own: reading
 * checks the structure only (every field present, none unknown, each of its JSON type, null
 * only where the harness may write null), and a spec of an older or newer harness is refused
 * with one line naming the field rather than half read.
 *
 * @param file where it was read from (not a field of the file): {@link #resolve} starts beside it
 */
public record RunSpec(int specVersion, Experiment experiment, SystemRef system, Topology topology,
    Workload workload, Server server, Clients clients, Load load, Duration duration, List<Fault> faults,
    Files files, Testing testing, Path file) {

  /** The spec_version this reads (k2bench/spec/trial.py SPEC_VERSION). */
  public static final int VERSION = 1;

  private static final String FIX = "regenerate it with the harness of this launcher's version "
      + "(k2bench run writes one per trial); an older or newer harness wrote it";

  /** Components the harness may write as null; every other null is refused. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target({ElementType.PARAMETER, ElementType.FIELD, ElementType.METHOD, ElementType.RECORD_COMPONENT})
  @JacksonAnnotationsInside
  @JsonSetter(nulls = Nulls.SET)
  public @interface Nullable {}

  /** @param pointValues axis -> the sweep point's value (a swept nullable field may be null) */
  public record Experiment(String name, String point,
      @JsonSetter(contentNulls = Nulls.SET) Map<String, JsonNode> pointValues, int trial, int trials,
      boolean check) {}

  /** @param options the system's own options as the harness resolved them (JSON scalars) */
  public record SystemRef(String name, Map<String, JsonNode> options) {}

  public record Topology(String file, @Nullable Integer serversPerDc, @Nullable Integer replicationFactor,
      double rttScale, @Nullable Double intraDcDelayMs, @Nullable Double jitterMs, @Nullable String placement,
      @Nullable Integer partitions, @Nullable String placementTable, String place, String placeDemand,
      double placeBalance, String placeObjective, boolean placeCache) {}

  public record Workload(long keys, Dist keysPerOp, Dist columns, Dist valueBytes, double zipf,
      String keyDistribution, double writeFraction, double wotFraction, double rwFraction, int rwWrites,
      int partitionsPerOp, double localFraction, String multiDcPartitions, double locality) {}

  public record Server(String processes, long failoverTimeoutMs, double cacheFraction, int cacheVersionsPerKey,
      long gcWindowMs, long replicaRetentionMs, long txnTimeoutMs, int heapMb, @Nullable List<String> jvmArgs) {}

  /**
   * @param targetOpsPerSPerDc named: snake_case would make "...per_sper_dc" of it
   * @param sessionsPerThread given to the workload by the harness as k2bench.sessions_per_thread
   */
  public record Clients(int threadsPerDc, int sessionsPerThread,
      @JsonProperty("target_ops_per_s_per_dc") @Nullable Double targetOpsPerSPerDc, int heapMb,
      @Nullable List<String> jvmArgs, String processes, long rpcTimeoutMs, double maxStartSkewS) {}

  public record Load(int threadsPerDc) {}

  public record Duration(double warmupS, double measureS, double cooldownS) {}

  /** The trial's files, relative to the spec's directory ({@link #resolve}). */
  public record Files(String topology, @Nullable String placementTable) {}

  public record Testing(@Nullable String mutant) {}

  /**
   * One fault: the fields its kind has, null for the others. The spec's only optional fields,
   * hence read through a builder: Jackson would refuse a missing record component.
   */
  @JsonDeserialize(builder = Fault.Builder.class)
  public record Fault(String kind, Double atS, Double forS, String dc, String server, List<String> dcs, String mode,
      Double extraMs, String clients) {

    @JsonPOJOBuilder(withPrefix = "")
    static final class Builder {
      private String kind;
      private Double atS;
      private Double forS;
      private String dc;
      private String server;
      private List<String> dcs;
      private String mode;
      private Double extraMs;
      private String clients;

      Builder kind(String v) {
        kind = v;
        return this;
      }

      Builder atS(Double v) {
        atS = v;
        return this;
      }

      Builder forS(Double v) {
        forS = v;
        return this;
      }

      Builder dc(String v) {
        dc = v;
        return this;
      }

      Builder server(String v) {
        server = v;
        return this;
      }

      Builder dcs(List<String> v) {
        dcs = List.copyOf(v);
        return this;
      }

      Builder mode(String v) {
        mode = v;
        return this;
      }

      Builder extraMs(Double v) {
        extraMs = v;
        return this;
      }

      Builder clients(String v) {
        clients = v;
        return this;
      }

      Fault build() {
        return new Fault(kind, atS, forS, dc, server, dcs, mode, extraMs, clients);
      }
    }
  }

  /**
   * keys_per_op, columns, value_bytes: an integer, or a distribution {"value": probability}
   * (JSON keys are text). An integer n reads as {n: 1.0}.
   */
  public record Dist(SortedMap<Integer, Double> probabilities) {
    @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
    static Dist of(JsonNode n) {
      if (n.canConvertToInt() && n.isIntegralNumber()) {
        return new Dist(Collections.unmodifiableSortedMap(new TreeMap<>(Map.of(n.intValue(), 1.0))));
      }
      if (!n.isObject() || n.isEmpty()) {
        throw new IllegalArgumentException("must be an integer or an object {\"value\": probability}, got " + n);
      }
      SortedMap<Integer, Double> p = new TreeMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        int value;
        try {
          value = Integer.parseInt(e.getKey());
        } catch (NumberFormatException x) {
          throw new IllegalArgumentException("value '" + e.getKey() + "' is not an integer");
        }
        if (!e.getValue().isNumber()) {
          throw new IllegalArgumentException("the probability of " + value + " must be a number, got " + e.getValue());
        }
        p.put(value, e.getValue().doubleValue());
      }
      return new Dist(Collections.unmodifiableSortedMap(p));
    }
  }

  /**
   * Jackson reads the file's fields; {@code file} comes from {@link #read}. (A factory: an
   * injected record component itself fails in Jackson 2.17.)
   */
  @JsonCreator
  static RunSpec of(@JsonProperty("spec_version") int specVersion, @JsonProperty("experiment") Experiment experiment,
      @JsonProperty("system") SystemRef system, @JsonProperty("topology") Topology topology,
      @JsonProperty("workload") Workload workload, @JsonProperty("server") Server server,
      @JsonProperty("clients") Clients clients, @JsonProperty("load") Load load,
      @JsonProperty("duration") Duration duration, @JsonProperty("faults") List<Fault> faults,
      @JsonProperty("files") Files files, @JsonProperty("testing") Testing testing,
      @JacksonInject(value = "file", useInput = OptBoolean.FALSE) Path file) {
    return new RunSpec(specVersion, experiment, system, topology, workload, server, clients, load, duration,
        List.copyOf(faults), files, testing, file);
  }

  // snake_case names as the harness writes them. Structure only: no coercion (a string "5" is
  // not 5, 5.5 is not an integer, 5 is not a string) and no null but where @Nullable says.
  private static final ObjectMapper MAPPER = JsonMapper.builder()
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES,
          DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES, DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES,
          DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
      .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
      .defaultSetterInfo(JsonSetter.Value.construct(Nulls.FAIL, Nulls.FAIL))
      .withCoercionConfig(LogicalType.Textual, c -> c.setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
          .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
          .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail))
      .build();

  /**
   * The spec in {@code file}; a one-line {@link ConfigException} naming the file and the JSON
   * path of the first bad field otherwise (e.g. {@code spec.json: workload.zipf: ...}).
   */
  public static RunSpec read(Path file) {
    JsonNode tree;
    try {
      tree = MAPPER.readTree(java.nio.file.Files.readAllBytes(file));
    } catch (NoSuchFileException e) {
      throw new ConfigException(file.toString(), "no such file (k2bench run writes one per trial: <trial>/spec.json)");
    } catch (JsonProcessingException e) {
      throw new ConfigException(file.toString(), "not valid JSON: " + firstLine(e.getOriginalMessage()) + "; " + FIX);
    } catch (IOException e) {
      throw new ConfigException(file.toString(), "cannot read: " + e.getMessage());
    }
    if (!tree.isObject()) {
      throw new ConfigException(file.toString(), "not a JSON object; " + FIX);
    }
    // first: another version's spec may differ anywhere, and this is the error that says why
    JsonNode version = tree.get("spec_version");
    if (version == null || !version.isInt() || version.intValue() != VERSION) {
      throw new ConfigException(file + ": spec_version", (version == null ? "missing" : "is " + version
          + ", this launcher reads " + VERSION) + "; " + FIX);
    }
    try {
      return MAPPER.readerFor(RunSpec.class).with(new InjectableValues.Std().addValue("file", file)).readValue(tree);
    } catch (JsonMappingException e) {
      throw problem(file, tree, e);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a tree in memory: no I/O left to fail
    }
  }

  /** A file of the trial ({@link Files}), relative to the spec's directory. */
  public Path resolve(String rel) {
    return file.resolveSibling(rel);
  }

  /**
   * The one place main code builds a run's {@link ServerOptions}: the shared parameters of
   * this spec and {@code s}'s own options (system.options, checked as SystemOptions does),
   * for {@code s}, which must be the spec's system.
   */
  public ServerOptions serverOptions(StoreSystem s) {
    if (!s.name().equals(system.name())) {
      throw new ConfigException(file + ": system.name", "is '" + system.name() + "', but the servers asked for are "
          + s.name() + "'s; give the spec of a " + s.name() + " trial");
    }
    String prefix = file + ": system.options.";
    Map<String, String> given = new LinkedHashMap<>();
    system.options().forEach((name, v) -> given.put(name, optionText(prefix + name, v)));
    return new ServerOptions(workload.keys(), server.cacheFraction(), server.gcWindowMs(), server.replicaRetentionMs(),
        server.txnTimeoutMs(), clients.rpcTimeoutMs(), server.failoverTimeoutMs(), server.cacheVersionsPerKey(),
        SystemOptions.parse(s, given, prefix));
  }

  /** A system option's JSON value in the text form SystemOptions.parse takes (true, 5, 0.25, queue). */
  private static String optionText(String field, JsonNode v) {
    if (v.isTextual()) {
      return v.textValue();
    }
    if (v.isBoolean() || v.isNumber()) {
      return v.asText();
    }
    throw new ConfigException(field, "must be true, false, a number or a string, got " + v + "; " + FIX);
  }

  private static ConfigException problem(Path file, JsonNode tree, JsonMappingException e) {
    StringBuilder at = new StringBuilder();
    JsonNode node = tree;
    for (JsonMappingException.Reference r : e.getPath()) {
      if (r.getFieldName() != null) {
        at.append(at.length() == 0 ? "" : ".").append(r.getFieldName());
        node = node.path(r.getFieldName());
      } else {
        at.append('[').append(r.getIndex()).append(']');
        node = node.path(r.getIndex());
      }
    }
    String what;
    if (e instanceof UnrecognizedPropertyException) {
      what = "unknown field";
    } else if (node.isMissingNode()) {
      what = "missing";
    } else if (e instanceof InvalidNullException || node.isNull()) {
      what = "must not be null";
    } else if (e instanceof ValueInstantiationException && e.getCause() != null) {
      what = e.getCause().getMessage();
    } else if (e instanceof MismatchedInputException m && m.getTargetType() != null) {
      String got = node.toString();
      what = "must be " + kind(m.getTargetType()) + ", got " + (got.length() > 60 ? got.substring(0, 57) + "..." : got);
    } else {
      what = firstLine(e.getOriginalMessage());
    }
    return new ConfigException(file + ": " + (at.length() == 0 ? "(top level)" : at), what + "; " + FIX);
  }

  private static String firstLine(String text) {
    return text == null ? "" : text.lines().findFirst().orElse("");
  }

  private static String kind(Class<?> t) {
    if (t == int.class || t == long.class || t == Integer.class || t == Long.class) {
      return "an integer";
    }
    if (t == double.class || t == Double.class) {
      return "a number";
    }
    if (t == boolean.class || t == Boolean.class) {
      return "true or false";
    }
    if (t == String.class) {
      return "a string";
    }
    return Collection.class.isAssignableFrom(t) ? "a list" : "an object";
  }
}
