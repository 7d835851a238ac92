// The public API (nnfuse/nnfuse.h) over the compile pipeline (api/compile.h) and the runtime.
#include "nnfuse/nnfuse.h"

#include "api/compile.h"
#include "onnx/exporter.h"
#include "passes/report.h"
#include "runtime/session.h"

namespace nnfuse {

struct Model::Impl {
  std::shared_ptr<const Graph> graph;
  FusionReport report;
  size_t imported_nodes = 0;
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

void Model::save(const std::string& path) const { save_onnx(*impl_->graph, path); }

std::string Model::serialize() const { return export_onnx_string(*impl_->graph); }

std::string Model::report_json() const { return fusion_report_json(impl_->report).dump(2); }

std::vector<TensorInfo> Model::inputs() const { return describe(impl_->graph->runtime_inputs()); }

std::vector<TensorInfo> Model::outputs() const { return describe(impl_->graph->outputs()); }

size_t Model::num_nodes() const { return impl_->graph->num_nodes(); }

size_t Model::num_imported_nodes() const { return impl_->imported_nodes; }

namespace {

Model::Impl impl_of(CompileResult r) {
  return {std::shared_ptr<const Graph>(std::move(r.graph)), std::move(r.report), r.imported_nodes};
}

}  // namespace

Model compile(const std::string& path, const CompileOptions& options) {
  return Model(std::make_shared<const Model::Impl>(impl_of(compile_model_file(path, options))));
}

Model compile_bytes(const std::string& bytes, const CompileOptions& options) {
  return Model(std::make_shared<const Model::Impl>(
      impl_of(compile_model_bytes(bytes, "model bytes", "", options))));
}

struct Session::Impl {
  explicit Impl(std::shared_ptr<const Graph> g, const PlanOptions& o) : session(std::move(g), o) {}
  PlanSession session;
};

Session::Session(const Model& model, const SessionOptions& options) : model_(model) {
  PlanOptions o;
  o.threads = options.threads;
  o.strict = options.strict;
  o.warn_fallbacks = options.warn_fallbacks;
  impl_ = std::make_shared<Impl>(model.impl_->graph, o);
}

std::map<std::string, Tensor> Session::run(const std::map<std::string, Tensor>& inputs) const {
  const std::vector<Tensor> outs = impl_->session.run(inputs);
  const std::vector<Value*>& names = model_.impl_->graph->outputs();
  std::map<std::string, Tensor> r;
  for (size_t k = 0; k < outs.size() && k < names.size(); ++k) r[names[k]->name()] = outs[k];
  return r;
}

}  // namespace nnfuse
