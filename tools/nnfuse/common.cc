#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "api/compile.h"
#include "codegen/codegen.h"
#include "ir/atomic_file.h"
#include "ir/dump.h"
#include "ir/error.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "ops/region.h"
#include "passes/auto_fuse/auto_fuse.h"
#include "passes/canonicalize/canonicalize.h"
#include "passes/pipeline.h"
#include "runtime/npy.h"
#include "shape/shape_inference.h"
#include "tools/nnfuse/commands.h"

namespace nnfuse::cli {

std::map<std::string, Tensor> load_inputs(const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> feeds;
  for (const std::string& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
      fail(ErrorKind::kInvalidArgument, "--input '", s, "': expected NAME=FILE");
    }
    std::string name = s.substr(0, eq);
    if (feeds.count(name)) fail(ErrorKind::kInvalidArgument, "--input '", name, "' is given twice");
    feeds[name] = load_tensor_file(s.substr(eq + 1));
  }
  return feeds;
}

std::string summarize(const Tensor& t) {
  std::ostringstream os;
  os << dtype_name(t.dtype()) << dims_str(t.shape());
  bool numeric = t.dtype() == DType::kFloat32 || t.dtype() == DType::kFloat64 ||
                 dtype_is_integer(t.dtype()) || t.dtype() == DType::kBool;
  if (!numeric || t.numel() == 0) return os.str();
  double lo = t.double_at(0), hi = lo, sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.double_at(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  os << " min " << lo << " max " << hi << " mean " << sum / static_cast<double>(t.numel()) << ":";
  for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 6); ++i) os << " " << t.double_at(i);
  if (t.numel() > 6) os << " ...";
  return os.str();
}

}  // namespace nnfuse::cli

namespace nnfuse::cli {

void add_fusion_flags(CLI::App* c, FusionFlags& f) {
  c->add_flag("--no-fusion", f.no_fusion, "Run the graph as imported, without any pass");
  c->add_option("--fusion_switch_file,--fusion-switch-file", f.switch_file,
                "Fusion switch file (CANN GE JSON, PassName:off lines, or rules JSON)");
  c->add_option("--dump_graph,--dump-graph", f.dump_graph,
                "Write the graph after every pass: yaml, json or dot")
      ->check(CLI::IsMember({"yaml", "json", "dot"}));
  c->add_option("--debug_path,--debug-path", f.debug_path, "Folder for --dump_graph files");
  c->add_option("--dump-kernels,--dump_kernels", f.dump_kernels,
                "Write the source of every generated kernel (one file per fused region) here");
}

size_t dump_kernel_sources(const Graph& g, const std::string& dir, const std::string& target) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(ErrorKind::kInvalidArgument, "--dump-kernels ", dir, ": ", ec.message());
  const bool cuda = target == "cuda";
  std::set<std::string> used;
  size_t n = 0;
  for (const Node* node : g.nodes()) {
    if (!node->is(Op::kFusedRegion)) continue;
    const codegen::Region r = ops::fused_region_of(*node);
    const std::string symbol = ops::fused_region_symbol(r);
    std::string stem;
    for (char c : node->name()) stem += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (stem.empty()) stem = "region";
    std::string file = stem;
    for (int k = 2; !used.insert(file).second; ++k) file = stem + "_" + std::to_string(k);
    const std::string path =
        (std::filesystem::path(dir) / (file + (cuda ? ".cu" : ".cc"))).string();
    std::string from;
    for (const std::string& o : node->fused_from()) from += (from.empty() ? "" : ", ") + o;
    write_file_atomically(path, "the kernel source", [&](std::ostream& out) {
      out << "// " << node->describe() << ", fused by " << node->fused_by() << " from: " << from
          << "\n"
          << (cuda ? codegen::emit_cuda(r, symbol) : codegen::emit_cpp(r, symbol));
    });
    ++n;
  }
  return n;
}

void add_shape_flag(CLI::App* c, FusionFlags& f) {
  c->add_option("--shape", f.shapes,
                "Input dims to run with instead of the model's, as NAME=d0,d1,... (NAME= for a "
                "scalar; repeatable)");
}

ImportOptions import_options(const FusionFlags& f) {
  ImportOptions o;
  for (const std::string& spec : f.shapes) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      fail(ErrorKind::kInvalidArgument, "--shape ", spec, ": expected NAME=d0,d1,...");
    }
    std::vector<int64_t> dims;
    std::stringstream ss(spec.substr(eq + 1));
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t used = 0;
      long long d = 0;
      try {
        d = std::stoll(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != item.size() || d < 1) {
        fail(ErrorKind::kInvalidArgument, "--shape ", spec, ": '", item,
             "' is not a positive integer");
      }
      dims.push_back(d);
    }
    o.input_shapes[spec.substr(0, eq)] = dims;
  }
  return o;
}

std::vector<InputDecl> declared_inputs(const std::string& model) {
  ImportOptions o;
  o.infer_shapes = false;  // the inputs' declarations are all that is read
  return input_decls(*load_onnx(model, o));
}

std::vector<std::string> shape_specs(const PlanCache::Shapes& shapes) {
  std::vector<std::string> specs;
  for (const auto& [name, dims] : shapes) {
    std::ostringstream s;
    s << name << "=";
    for (size_t i = 0; i < dims.size(); ++i) s << (i ? "," : "") << dims[i];
    specs.push_back(s.str());
  }
  return specs;
}

std::unique_ptr<Graph> load_for_inputs(const std::string& model, FusionFlags f,
                                       const std::vector<std::string>& input_specs,
                                       std::map<std::string, Tensor>& feeds,
                                       size_t* imported_nodes) {
  auto g = load_and_fuse(model, f, nullptr, imported_nodes);
  const std::vector<InputDecl> decls = input_decls(*g);
  if (!f.shapes.empty() || input_specs.empty() || !has_dynamic_inputs(decls)) return g;
  feeds = load_inputs(input_specs);
  std::vector<InputDecl> given;
  PlanCache::Shapes shapes;
  for (const InputDecl& d : decls) {
    auto it = feeds.find(d.name);
    if (it == feeds.end()) continue;
    given.push_back(d);
    if (!d.shape.fully_known()) shapes[d.name] = it->second.shape();
  }
  if (given.size() == feeds.size()) check_feeds(given, feeds);
  f.shapes = shape_specs(shapes);
  return load_and_fuse(model, f, nullptr, imported_nodes);
}

std::unique_ptr<PlanCache> make_plan_cache(const std::string& model, const FusionFlags& f,
                                           const PlanOptions& opts, size_t capacity) {
  auto make = [model, f, opts](const PlanCache::Shapes& shapes) {
    FusionFlags pinned = f;
    pinned.shapes = shape_specs(shapes);
    return std::make_unique<PlanSession>(load_and_fuse(model, pinned), opts);
  };
  return std::make_unique<PlanCache>(declared_inputs(model), make, capacity);
}

std::unique_ptr<Graph> load_and_fuse(const std::string& model, const FusionFlags& f,
                                     FusionReport* report, size_t* imported_nodes,
                                     FuseTimes* times) {
  if (!f.debug_path.empty() && f.dump_graph.empty()) {
    fail(ErrorKind::kInvalidArgument, "--debug_path needs --dump_graph yaml|json|dot");
  }
  CompileOptions o;
  o.fusion = !f.no_fusion;
  o.switch_file = f.switch_file;
  o.input_shapes = import_options(f).input_shapes;
  o.dump_format = f.dump_graph;
  o.dump_dir = f.debug_path;
  o.target = f.target;
  CompileResult r = compile_model_file(model, o);
  if (imported_nodes) *imported_nodes = r.imported_nodes;
  if (times) *times = {r.load_s, r.fuse_s};
  if (report) *report = std::move(r.report);
  if (o.fusion && !f.dump_kernels.empty()) {
    const size_t n = dump_kernel_sources(*r.graph, f.dump_kernels, f.target);
    std::cerr << "wrote " << n << " generated kernel" << (n == 1 ? "" : "s") << " ("
              << (f.target == "cuda" ? "CUDA" : "C++") << ") to " << f.dump_kernels << "\n";
  }
  return std::move(r.graph);
}

}  // namespace nnfuse::cli
