// Differential fuzzing of fusion: random graphs (random_graph.h) run three ways, fused (every
// pass, generated kernels built), unfused on the fast kernels and unfused on the reference
// kernels (the oracle), on the same random inputs. Any output further than the tolerance from
// the oracle's, relative to the oracle's largest finite magnitude, or a NaN or infinity in a
// different place, is a mismatch; an exception other than a typed refusal is a crash. A
// mismatch is reduced to the fewest choices that still show it and printed with its graph.
// The generated kernels of the next 64 graphs are built ahead, up to 64 to a compiler run.
//
// With --quantized, half the generator's steps are quantized patterns (QDQ, QOperator,
// dynamic). A graph that quantizes computed values rounds them to a grid, where a last-bit
// float difference upstream moves a value by a whole step and later layers compound it: when
// its outputs differ end to end, every node of the differing side runs alone on the oracle's
// values of its inputs and must agree with the oracle's values of its outputs within the
// tolerance, or within one quantization step for an output the node rounds (the bound
// `nnfuse verify` states).
//
//   nnfuse_diff_fuzz --graphs 100000 --seed 1     (bench/diff_fuzz.sh)
//   nnfuse_diff_fuzz --graphs 100000 --seed 1 --quantized
//
// Exits 0 when every graph agreed, 1 on a mismatch or crash, 2 on bad arguments.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "api/verify.h"
#include "codegen/codegen.h"
#include "codegen/jit.h"
#include "ir/error.h"
#include "onnx/exporter.h"
#include "ops/region.h"
#include "passes/pipeline.h"
#include "random_graph.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace {

using nnfuse::Graph;
using nnfuse::Tensor;

struct Args {
  long graphs = 200;
  uint64_t seed = 1;
  int max_steps = 8;
  double rtol = 1e-4;
  // Below this absolute difference nothing is a mismatch: the graphs' values are of order one,
  // so an output that cancels to about zero (the mean of a normalized row) is float32 rounding
  // alone, and relative to its own tiny magnitude any two evaluation orders differ.
  double atol = 1e-6;
  double max_seconds = 0;  // > 0: stop after this long, however many graphs ran
  bool quiet = false;
  bool quantized = false;  // quantized patterns too (RandomGraphOptions::quantized)
  bool trace = false;  // each seed on stderr before it runs (to find one that kills the process)
  std::string save;    // where the smallest graph showing a mismatch is written as ONNX (and
                       // its inputs as FILE.onnx.NAME.npy)
};

// Replays recorded choices, then draws fresh ones from a generator (recording them too).
class Choices {
 public:
  explicit Choices(uint64_t seed) : rng_(seed) {}
  explicit Choices(std::vector<uint32_t> fixed)
      : rng_(0), fixed_(std::move(fixed)), replay_(true) {}
  uint32_t operator()(uint32_t n) {
    uint32_t raw;
    if (replay_) {
      raw = pos_ < fixed_.size() ? fixed_[pos_] : 0;
    } else {
      raw = static_cast<uint32_t>(rng_());
      fixed_.push_back(raw);
    }
    ++pos_;
    return raw % n;
  }
  const std::vector<uint32_t>& recorded() const { return fixed_; }

 private:
  std::mt19937_64 rng_;
  std::vector<uint32_t> fixed_;
  size_t pos_ = 0;
  bool replay_ = false;
};

nnfuse::fuzz::RandomGraphOptions graph_options(const Args& a) {
  nnfuse::fuzz::RandomGraphOptions o;
  o.max_steps = a.max_steps;
  o.quantized = a.quantized;
  return o;
}

std::unique_ptr<Graph> build(const std::vector<uint32_t>& choices, const Args& a) {
  Choices c(choices);
  return nnfuse::fuzz::random_graph([&](uint32_t n) { return c(n); }, graph_options(a));
}

std::map<std::string, Tensor> random_inputs(const Graph& g, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed * 0x9E3779B97F4A7C15ull >> 32));
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::map<std::string, Tensor> feeds;
  for (const nnfuse::Value* v : g.inputs()) {
    if (v->is_constant()) continue;
    Tensor t(nnfuse::DType::kFloat32, v->shape().static_dims());
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
    feeds.emplace(v->name(), std::move(t));
  }
  return feeds;
}

// "" when `got` matches `want`, else what differs.
std::string compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape()) return "shape differs";
  double scale = 0, max_abs = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.double_at(i), g = got.double_at(i);
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g)) return "NaN at element " + std::to_string(i);
      continue;
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (w != g) return "infinity at element " + std::to_string(i);
      continue;
    }
    scale = std::max(scale, std::abs(w));
    max_abs = std::max(max_abs, std::abs(g - w));
  }
  const double rel = scale > 0 ? max_abs / scale : max_abs;
  if (rel <= rtol || max_abs <= atol) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, "relative error %.3g (max |diff| %.3g, scale %.3g)", rel, max_abs,
                scale);
  return buf;
}

struct Outcome {
  bool built = false;    // the choices made a graph
  std::string mismatch;  // "" when all three agree
  bool refused = false;  // a typed refusal (kUnsupported...) by the fused or unfused side
  std::string refusal;   // its message
  std::map<std::string, int> fired;  // pass -> matches it rewrote
  bool quantizes = false;            // the graph quantizes computed values
  bool within_steps = false;         // outputs differed end to end, every node within its bound
  size_t steps = 0;                  // node outputs that agreed within one quantization step only
};

// Every value a node computes becomes an output of g (after its own outputs), so one run gives
// the values each node reads and writes.
void expose_all_values(Graph& g) {
  std::vector<nnfuse::Value*> vs;
  for (const nnfuse::Node* n : g.nodes()) {
    for (nnfuse::Value* o : n->outputs()) {
      if (o && !o->is_graph_output()) vs.push_back(o);
    }
  }
  for (nnfuse::Value* v : vs) g.add_output(v);
}

// The fused side's graph: every pass run on it; the passes' rewrites counted into *fired.
std::unique_ptr<Graph> fuse(std::unique_ptr<Graph> g, std::map<std::string, int>* fired) {
  const nnfuse::FusionReport report = nnfuse::run_pipeline(*g);
  for (const nnfuse::PassRecord& p : report.passes) {
    if (fired && p.effect_times > 0) (*fired)[p.name] += p.effect_times;
  }
  return g;
}

Outcome run_case_unguarded(const std::vector<uint32_t>& choices, const Args& a, uint64_t seed) {
  const double rtol = a.rtol, atol = a.atol;
  Outcome out;
  std::unique_ptr<Graph> fused = build(choices, a);
  if (!fused) return out;
  out.built = true;
  std::unique_ptr<Graph> unfused = build(choices, a);
  std::unique_ptr<Graph> oracle = build(choices, a);
  const auto feeds = random_inputs(*oracle, seed);
  std::vector<std::string> names;
  for (const nnfuse::Value* v : oracle->outputs()) names.push_back(v->name());
  out.quantizes = nnfuse::quantizes_at_run_time(*oracle);
  if (out.quantizes) expose_all_values(*oracle);
  nnfuse::PlanOptions ref_opts;
  ref_opts.reference_only = true;
  ref_opts.threads = 1;
  std::vector<Tensor> want;
  std::map<std::string, Tensor> values;  // the oracle's values by name (a quantizing graph)
  try {
    nnfuse::PlanSession session(std::move(oracle), ref_opts);
    want = session.run(feeds);
    if (out.quantizes) {
      for (size_t i = 0; i < want.size(); ++i) {
        values[session.graph().outputs()[i]->name()] = want[i];
      }
      for (const auto& [name, t] : feeds) values[name] = t;
    }
  } catch (const nnfuse::Error& e) {
    out.refused = true;  // the oracle cannot run it (an op without a reference kernel)
    out.refusal = std::string("reference kernels: ") + e.what();
    return out;
  }
  nnfuse::PlanOptions fast;
  fast.warn_fallbacks = false;
  // A quantizing graph whose side differs end to end: each node of a fresh copy of that side
  // alone on the oracle's values.
  auto check_nodes = [&](const char* side, std::unique_ptr<Graph> g) {
    nnfuse::NodeCheckOptions nc;
    nc.rtol = rtol;
    nc.atol = atol;
    nc.all_nodes = true;
    const nnfuse::NodeCheck c = nnfuse::check_nodes(*g, values, fast, nc);
    if (c.pass && c.skipped == 0) {
      out.within_steps = true;
      out.steps += c.within_step;
      out.mismatch.clear();
      return;
    }
    if (!c.pass) {
      char buf[96];
      std::snprintf(buf, sizeof buf, ": relative error %.3g", c.worst_rel);
      out.mismatch += std::string("; ") + side + " node " + c.worst->op_type() + " '" +
                      c.worst->name() + "' alone on the oracle's inputs departs" +
                      (c.worst_problem.empty() ? buf : " (" + c.worst_problem + ")");
    } else {
      out.mismatch +=
          "; " + std::to_string(c.skipped) + " " + side +
          " nodes read values neither the unfused graph nor the nodes before them compute";
    }
  };
  auto check = [&](const char* side, std::unique_ptr<Graph> g) {
    std::vector<Tensor> got;
    try {
      got = nnfuse::PlanSession(std::move(g), fast).run(feeds);
    } catch (const nnfuse::Error& e) {
      if (e.kind() == nnfuse::ErrorKind::kUnsupported) {
        out.refused = true;
        out.refusal = std::string(side) + ": " + e.what();
        return;
      }
      out.mismatch = std::string(side) + " failed: " + e.what();
      return;
    }
    for (size_t i = 0; i < names.size() && out.mismatch.empty(); ++i) {
      std::string d = compare(got[i], want[i], rtol, atol);
      if (!d.empty()) out.mismatch = std::string(side) + " output '" + names[i] + "': " + d;
    }
  };
  try {
    fused = fuse(std::move(fused), &out.fired);
  } catch (const nnfuse::Error& e) {
    out.mismatch = std::string("fusion failed: ") + e.what();
    return out;
  }
  check("fused", std::move(fused));
  if (out.quantizes && !out.mismatch.empty() &&
      out.mismatch.find(" failed: ") == std::string::npos) {
    check_nodes("fused", fuse(build(choices, a), nullptr));
  }
  if (out.mismatch.empty()) {
    check("unfused", std::move(unfused));
    if (out.quantizes && !out.mismatch.empty() &&
        out.mismatch.find(" failed: ") == std::string::npos) {
      check_nodes("unfused", build(choices, a));
    }
  }
  return out;
}

// The generated kernels of the graphs of seeds [from, from + count), built into the cache a
// batch per compiler run before those graphs run, each then finding its kernels there. A random
// graph's kernels are new to the cache, and one compiler run per graph was most of the time.
// The graphs are fused for the CUDA target here: the regions' sources, nothing built.
void prebuild(uint64_t from, uint64_t count, const Args& a) {
  std::vector<nnfuse::codegen::JitFunction> fns;
  std::set<std::string> seen;
  for (uint64_t s = from; s < from + count; ++s) {
    Choices c(s);
    std::unique_ptr<Graph> g =
        nnfuse::fuzz::random_graph([&](uint32_t n) { return c(n); }, graph_options(a));
    if (!g) continue;
    try {
      nnfuse::PipelineOptions po;
      po.target = "cuda";
      nnfuse::run_pipeline(*g, po);
      for (const nnfuse::Node* n : g->nodes()) {
        if (!n->is(nnfuse::Op::kFusedRegion)) continue;
        const nnfuse::codegen::Region r = nnfuse::ops::fused_region_of(*n);
        const std::string symbol = nnfuse::ops::fused_region_symbol(r);
        if (seen.insert(symbol).second) {
          fns.push_back({symbol, nnfuse::codegen::emit_cpp_function(r, symbol)});
        }
      }
    } catch (const std::exception&) {
      // Whatever fails here fails again in the graph's own run, which reports it.
    }
  }
  if (fns.size() >= 2) nnfuse::codegen::jit_prebuild(nnfuse::codegen::emit_cpp_preamble(), fns);
}

// Any other exception is a crash, reported as a mismatch (and reduced like one).
Outcome run_case(const std::vector<uint32_t>& choices, const Args& a, uint64_t seed) {
  try {
    return run_case_unguarded(choices, a, seed);
  } catch (const std::exception& e) {
    Outcome out;
    out.built = true;
    out.mismatch = std::string("crash: exception ") + e.what();
    return out;
  }
}

// Fewer choices that still mismatch: each recorded choice, last first, set to 0 (the simplest
// option, and past the end the generator's default), kept when the mismatch remains.
std::vector<uint32_t> minimize(std::vector<uint32_t> choices, const Args& a, uint64_t seed) {
  while (!choices.empty()) {
    std::vector<uint32_t> shorter(choices.begin(), choices.end() - 1);
    if (!run_case(shorter, a, seed).mismatch.empty()) {
      choices = std::move(shorter);
    } else {
      break;
    }
  }
  for (size_t i = choices.size(); i-- > 0;) {
    if (choices[i] == 0) continue;
    std::vector<uint32_t> tried = choices;
    tried[i] = 0;
    if (!run_case(tried, a, seed).mismatch.empty()) choices = std::move(tried);
  }
  return choices;
}

int usage(const char* why) {
  std::fprintf(
      stderr,
      "nnfuse_diff_fuzz: %s\n"
      "usage: nnfuse_diff_fuzz [--graphs N] [--seed S] [--max-steps K] [--rtol R] [--atol A] "
      "[--max-seconds T] [--save FILE.onnx] [--quantized] [--quiet] [--trace]\n"
      "  runs N random graphs fused, unfused and on the reference kernels and compares\n"
      "  their outputs; exits 1 on the first mismatch or crash, printing the smallest\n"
      "  graph found that shows it (and with --save, writes it as an ONNX model);\n"
      "  --quantized adds quantized patterns, each node then within one quantization step\n",
      why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (f == "--quiet" || f == "--trace" || f == "--quantized") {
      (f == "--quiet" ? a.quiet : f == "--trace" ? a.trace : a.quantized) = true;
      continue;
    }
    if (f == "--save") {
      const char* path = value();
      if (!path) return usage("--save needs a file name");
      a.save = path;
      continue;
    }
    if (f == "--help" || f == "-h") {
      usage("differential fuzzing of fusion");
      return 0;
    }
    if (f != "--graphs" && f != "--seed" && f != "--max-steps" && f != "--rtol" && f != "--atol" &&
        f != "--max-seconds") {
      return usage(("unknown flag '" + f + "'").c_str());
    }
    if (!(v = value())) return usage((f + " needs a value").c_str());
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (*end != '\0' || !(x >= 0)) return usage((f + ": not a number: '" + v + "'").c_str());
    if (f == "--graphs") a.graphs = static_cast<long>(x);
    if (f == "--seed") a.seed = static_cast<uint64_t>(x);
    if (f == "--max-steps") a.max_steps = std::max(1, static_cast<int>(x));
    if (f == "--rtol") a.rtol = x;
    if (f == "--atol") a.atol = x;
    if (f == "--max-seconds") a.max_seconds = x;
  }
  setenv("NNFUSE_PROGRESS", "0", 0);
  const auto t0 = std::chrono::steady_clock::now();
  long done = 0, refused = 0, drawn = 0, fused_graphs = 0, quantizing = 0, within_steps = 0;
  long steps = 0;
  std::map<std::string, long> ops;  // nodes of the graphs run, by op
  std::map<std::string, long> fired;
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // Kernels are built ahead for the next kPrebuild seeds (the last chunk may reach past the
  // last graph).
  constexpr uint64_t kPrebuild = 64;
  uint64_t built_until = a.seed;
  for (uint64_t s = a.seed; done < a.graphs; ++s) {
    if (a.max_seconds > 0 && elapsed() > a.max_seconds) break;
    if (s >= built_until) {
      const uint64_t n = std::min<uint64_t>(kPrebuild, static_cast<uint64_t>(a.graphs - done) + 8);
      prebuild(s, n, a);
      built_until = s + n;
    }
    ++drawn;
    Choices c(s);
    const std::unique_ptr<Graph> drawn_graph =
        nnfuse::fuzz::random_graph([&](uint32_t n) { return c(n); }, graph_options(a));
    if (!drawn_graph) continue;
    for (const nnfuse::Node* n : drawn_graph->nodes()) ++ops[n->op_type()];
    const std::vector<uint32_t> choices = c.recorded();
    if (a.trace) std::fprintf(stderr, "seed %llu\n", static_cast<unsigned long long>(s));
    Outcome r = run_case(choices, a, s);
    ++done;
    quantizing += r.quantizes;
    within_steps += r.within_steps;
    steps += static_cast<long>(r.steps);
    if (!r.fired.empty()) ++fused_graphs;
    for (const auto& [pass, n] : r.fired) fired[pass] += n;
    if (r.refused) {
      ++refused;
      if (!a.quiet) {
        std::fprintf(stderr, "seed %llu refused: %s\n", static_cast<unsigned long long>(s),
                     r.refusal.c_str());
      }
    }
    if (!r.mismatch.empty()) {
      std::printf("MISMATCH at seed %llu: %s\n", static_cast<unsigned long long>(s),
                  r.mismatch.c_str());
      const std::vector<uint32_t> small = minimize(choices, a, s);
      std::unique_ptr<Graph> g = build(small, a);
      Outcome m = run_case(small, a, s);
      std::printf("smallest graph showing it (%zu choices): %s\n%s", small.size(),
                  m.mismatch.c_str(), g ? nnfuse::graph_to_text(*g).c_str() : "");
      if (g && !a.save.empty()) {
        try {
          nnfuse::save_onnx(*g, a.save);
          // The seed's inputs beside it, so `verify` runs the graph on what the fuzzer fed.
          std::string flags;
          for (const auto& [name, t] : random_inputs(*g, s)) {
            const std::string file = a.save + "." + name + ".npy";
            nnfuse::save_npy(file, t);
            flags += " -i " + name + "=" + file;
          }
          std::printf("written to %s (nnfuse verify %s%s)\n", a.save.c_str(), a.save.c_str(),
                      flags.c_str());
        } catch (const nnfuse::Error& e) {
          std::printf("not written: %s\n", e.what());
        }
      }
      return 1;
    }
    if (!a.quiet && done % 1000 == 0) {
      std::fprintf(stderr, "nnfuse_diff_fuzz: %ld graphs, 0 mismatches\n", done);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "nnfuse_diff_fuzz: %ld graphs (seeds %llu..%llu, %ld drawn), 0 mismatches, %ld refused "
      "as unsupported, %.1f s\n",
      done, static_cast<unsigned long long>(a.seed),
      static_cast<unsigned long long>(a.seed + drawn - 1), drawn, refused, secs);
  if (a.quantized) {
    std::printf(
        "%ld graphs quantize computed values; in %ld the outputs differed end to end and every "
        "node alone agreed with the oracle (%ld node outputs within one quantization step, "
        "the rest within the tolerance)\n",
        quantizing, within_steps, steps);
  }
  std::printf("nodes by op:");
  for (const auto& [op, n] : ops) std::printf(" %s %ld,", op.c_str(), n);
  std::printf("\n%ld graphs had a fusion; rewrites by pass:", fused_graphs);
  for (const auto& [pass, n] : fired) std::printf(" %s %ld,", pass.c_str(), n);
  std::printf("\n");
  return 0;
}
