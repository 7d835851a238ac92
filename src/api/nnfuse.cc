// The public API (nnfuse/nnfuse.h) over the compile pipeline (api/compile.h) and the runtime.
#include "nnfuse/nnfuse.h"

#include "api/compile.h"
#include "api/inputs.h"
#include "api/profile.h"
#include "api/verify.h"
#include "onnx/exporter.h"
#include "report/report.h"
#include "runtime/plan_cache.h"
#include "runtime/session.h"

namespace nnfuse {

struct Model::Impl {
  std::shared_ptr<const Graph> graph;
  FusionReport report;
  size_t imported_nodes = 0;
  // Where it came from, for verify(): a path, or the bytes themselves; and how.
  std::string path, bytes;
  CompileOptions options;
};

namespace {

std::vector<TensorInfo> describe(const std::vector<Value*>& values) {
  std::vector<TensorInfo> r;
  for (const Value* v : values) {
    TensorInfo t{v->name(), v->dtype(), {}};
    for (const Dim& d : v->shape().dims) t.shape.push_back(d.known() ? d.value : -1);
    r.push_back(std::move(t));
  }
  return r;
}

}  // namespace

Model::Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

namespace {

ExportFormat export_format(SaveFormat f) {
  return f == SaveFormat::kOnnxRuntime ? ExportFormat::kOrt : ExportFormat::kNnfuse;
}

}  // namespace

void Model::save(const std::string& path, SaveFormat format) const {
  save_onnx(*impl_->graph, path, export_format(format));
}

std::string Model::serialize(SaveFormat format) const {
  return export_onnx_string(*impl_->graph, export_format(format));
}

std::string Model::report_json() const { return fusion_report_json(impl_->report).dump(2); }

std::vector<TensorInfo> Model::inputs() const { return describe(impl_->graph->runtime_inputs()); }

std::vector<TensorInfo> Model::outputs() const { return describe(impl_->graph->outputs()); }

size_t Model::num_nodes() const { return impl_->graph->num_nodes(); }

size_t Model::num_imported_nodes() const { return impl_->imported_nodes; }

namespace {

constexpr char kBytesLabel[] = "model bytes";

}  // namespace

Model compile(const std::string& path, const CompileOptions& options) {
  CompileResult r = compile_model_file(path, options);
  return Model(std::make_shared<const Model::Impl>(
      Model::Impl{std::shared_ptr<const Graph>(std::move(r.graph)), std::move(r.report),
                  r.imported_nodes, path, "", options}));
}

Model compile_bytes(const std::string& bytes, const CompileOptions& options) {
  CompileResult r = compile_model_bytes(bytes, kBytesLabel, "", options);
  return Model(std::make_shared<const Model::Impl>(
      Model::Impl{std::shared_ptr<const Graph>(std::move(r.graph)), std::move(r.report),
                  r.imported_nodes, "", bytes, options}));
}

VerifyResult Model::verify(double rtol, uint32_t seed) const {
  CompileOptions unfused = impl_->options;
  unfused.fusion = false;
  unfused.dump_format.clear();
  unfused.dump_dir.clear();
  CompileResult plain = impl_->path.empty()
                            ? compile_model_bytes(impl_->bytes, kBytesLabel, "", unfused)
                            : compile_model_file(impl_->path, unfused);
  PlanSession want_session(std::move(plain.graph));
  const auto feeds = complete_inputs(want_session.graph(), {}, seed);
  const std::vector<Tensor> want = want_session.run(feeds);
  const std::map<std::string, Tensor> got_by = Session(*this).run(feeds);
  VerifyResult r;
  r.rtol = rtol;
  r.pass = true;
  for (size_t k = 0; k < want.size(); ++k) {
    OutputCheck c;
    c.name = want_session.graph().outputs()[k]->name();
    auto it = got_by.find(c.name);
    if (it == got_by.end()) {
      c.problem = "the fused model has no output of that name";
    } else {
      const OutputDiff d = compare_outputs(it->second, want[k]);
      c.max_abs_error = d.max_abs;
      c.max_magnitude = d.scale;
      c.relative_error = d.rel;
      c.problem = d.problem;
    }
    c.pass = c.problem.empty() && c.relative_error <= rtol;
    r.pass = r.pass && c.pass;
    r.outputs.push_back(std::move(c));
  }
  return r;
}

struct Session::Impl {
  std::shared_ptr<PlanSession> fixed;  // a model of static inputs: one plan
  std::unique_ptr<PlanCache> cache;    // else one plan per input-shape signature
  std::shared_ptr<PlanSession> session_for(const std::map<std::string, Tensor>& inputs) const {
    return fixed ? fixed : cache->acquire(inputs);
  }
};

Session::Session(const Model& model, const SessionOptions& options) : model_(model) {
  PlanOptions o;
  o.threads = options.threads;
  o.strict = options.strict;
  o.warn_fallbacks = options.warn_fallbacks;
  // The session's plans (one per input-shape signature) share their measured kernel choices.
  o.kernel_choices = std::make_shared<KernelChoices>();
  impl_ = std::make_shared<Impl>();
  std::vector<InputDecl> decls = input_decls(*model.impl_->graph);
  if (!has_dynamic_inputs(decls)) {
    impl_->fixed = std::make_shared<PlanSession>(model.impl_->graph, o);
    return;
  }
  // Symbolic dims: the model compiled again for each signature (its shape arithmetic folds,
  // every value gets a static shape), as the CLI's plan cache does.
  std::shared_ptr<const Model::Impl> m = model.impl_;
  auto make = [m, o](const PlanCache::Shapes& shapes) {
    CompileOptions c = m->options;
    c.dump_format.clear();
    c.dump_dir.clear();
    for (const auto& [name, dims] : shapes) {
      c.input_shapes[name] = std::vector<int64_t>(dims.begin(), dims.end());
    }
    CompileResult r = m->path.empty() ? compile_model_bytes(m->bytes, kBytesLabel, "", c)
                                      : compile_model_file(m->path, c);
    return std::make_unique<PlanSession>(std::move(r.graph), o);
  };
  impl_->cache =
      std::make_unique<PlanCache>(std::move(decls), make, std::max<size_t>(1, options.plan_cache));
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) const {
  const std::shared_ptr<PlanSession> s = impl_->session_for(inputs);
  const std::vector<Tensor> outs = s->run(inputs);
  const std::vector<Value*>& names = s->graph().outputs();
  std::map<std::string, Tensor> r;
  for (size_t k = 0; k < outs.size() && k < names.size(); ++k) r[names[k]->name()] = outs[k];
  return r;
}

Profile Session::profile(const std::map<std::string, Tensor>& inputs, int runs,
                         const std::string& trace_path, int warmup) const {
  // Inputs not given are generated at the model's declared shape (symbolic dims need given
  // inputs, or compiled shapes).
  const Graph& declared = impl_->fixed ? impl_->fixed->graph() : *model_.impl_->graph;
  const std::map<std::string, Tensor> feeds = complete_inputs(declared, inputs, 0);
  const std::shared_ptr<PlanSession> s = impl_->session_for(feeds);
  const PlanProfile p = profile_plan(*s, feeds, runs, warmup);
  if (!trace_path.empty()) write_chrome_trace(p, trace_path);
  Profile r;
  r.runs = p.runs;
  r.run_ms = p.run_ms();
  for (const StepProfile& sp : p.steps) {
    if (sp.view) continue;
    r.kernels.push_back({sp.name, sp.op, sp.kernel, sp.reference_fallback, sp.total_ms / p.runs});
  }
  return r;
}

}  // namespace nnfuse
