#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "kernels/cpu/layout.h"
#include "kernels/kernel.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse {

DType NodeInfo::input_dtype(size_t i) const {
  const Value* v = node.input(i);
  return v ? v->dtype() : DType::kUndefined;
}

std::optional<Dims> NodeInfo::input_shape(size_t i) const {
  const Value* v = node.input(i);
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().static_dims();
}

std::optional<Dims> NodeInfo::output_shape(size_t i) const {
  const Value* v = node.output(i);
  if (!v || !v->shape().fully_known()) return std::nullopt;
  return v->shape().static_dims();
}

const Tensor* NodeInfo::constant(size_t i) const {
  if (!input_constants.empty()) return i < input_constants.size() ? input_constants[i] : nullptr;
  const Value* v = node.input(i);
  return v && v->is_constant() ? &v->constant() : nullptr;
}

bool NodeInfo::all_inputs_in(Layout l) const {
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    if (node.input(i) && (i >= input_layouts.size() || input_layouts[i] != l)) return false;
  }
  return true;
}

std::string input_label(const NodeInfo& info, size_t i) {
  const Value* v = info.input(i);
  return v ? "input '" + v->name() + "'" : "input " + std::to_string(i);
}

std::string not_static_f32(const NodeInfo& info, size_t i) {
  if (!info.has_input(i)) return input_label(info, i) + " is missing";
  const Tensor* c = info.constant(i);
  const DType t = c ? c->dtype() : info.input_dtype(i);
  if (t != DType::kFloat32) return input_label(info, i) + " is " + dtype_name(t) + ", not float32";
  if (!c && !info.input_shape(i)) {
    return input_label(info, i) + " has no static shape (float32" + info.input(i)->shape().str() +
           ")";
  }
  return "";
}

std::string decline_reason(const KernelFactory& f, const NodeInfo& info) {
  if (f.declines) {
    if (std::string why = f.declines(info); !why.empty()) return why;
  }
  // Without a reason of the kernel's own, name the first input most fast kernels would refuse:
  // a runtime (non-constant) one of another dtype than float32, else one of unknown shape.
  std::string note;
  for (size_t i = 0; i < info.node.num_inputs() && note.empty(); ++i) {
    if (info.has_input(i) && !info.constant(i) && info.input_dtype(i) != DType::kFloat32) {
      note = input_label(info, i) + " is " + dtype_name(info.input_dtype(i));
    }
  }
  for (size_t i = 0; i < info.node.num_inputs() && note.empty(); ++i) {
    if (info.has_input(i) && !info.constant(i) && !info.input_shape(i)) {
      note = input_label(info, i) + " has no static shape";
    }
  }
  return "does not support this configuration" + (note.empty() ? "" : " (" + note + ")");
}

Tensor& KernelIO::output(size_t k, DType dtype, const Dims& shape, Layout layout) {
  Tensor& t = outputs[k];
  if (t.defined()) {
    if (t.dtype() != dtype || t.shape() != shape || t.layout() != layout) {
      fail(ErrorKind::kInternal, "planned output ", k, " is ", dtype_name(t.dtype()),
           dims_str(t.shape()), " ", layout_name(t.layout()), " but the kernel makes ",
           dtype_name(dtype), dims_str(shape), " ", layout_name(layout));
    }
    return t;
  }
  // Left uninitialised: kernels write every element of their outputs (planned outputs are arena
  // slots that hold earlier steps' data), and a model's output is allocated on every run. With
  // NNFUSE_POISON_OUTPUTS=1 (the test script sets it) the bytes are 0xFF instead, NaN in every
  // float type, so a kernel that leaves an element unwritten fails its comparisons.
  t = Tensor::uninitialized(dtype, shape);
  static const bool poison = [] {
    const char* v = std::getenv("NNFUSE_POISON_OUTPUTS");
    return v && std::string(v) == "1";
  }();
  if (poison && t.nbytes() > 0) std::memset(t.raw(), 0xFF, t.nbytes());
  t.set_layout(layout);
  return t;
}

namespace {

// Reference kernels read and write plain tensors: channels-last inputs (a fast kernel's fallback
// may get them) are read through plain copies, and planned channels-last outputs written back
// in their layout.
void run_reference(const RefKernelEntry& entry, const Node& node, int64_t opset, KernelIO& io) {
  std::vector<Tensor> plain;
  plain.reserve(io.inputs.size());
  std::vector<const Tensor*> inputs = io.inputs;
  for (const Tensor*& t : inputs) {
    if (t && t->layout() != Layout::kPlain) {
      plain.push_back(to_layout(*t, Layout::kPlain));
      t = &plain.back();
    }
  }
  KernelContext ctx{node, opset, std::move(inputs), std::vector<Tensor>(node.num_outputs())};
  entry.run(ctx);
  for (size_t k = 0; k < io.outputs.size(); ++k) {
    Tensor& got = ctx.outputs[k];
    if (!got.defined()) continue;
    if (io.outputs[k].defined()) {
      const Layout l = io.outputs[k].layout();
      Tensor& dst = io.output(k, got.dtype(), got.shape(), l);
      if (l == Layout::kPlain) {
        std::memcpy(dst.raw(), got.raw(), got.nbytes());
      } else {
        convert_layout(got, dst);
      }
    } else {
      io.outputs[k] = std::move(got);
    }
  }
}

// Runs a reference kernel; copies its outputs into planned storage when there is some.
class RefAdapter : public Kernel {
 public:
  RefAdapter(const Node& n, int64_t opset) : node_(n), opset_(opset) {
    entry_ = find_ref_kernel(n.op_type());
  }
  void run(KernelIO& io) override { run_reference(*entry_, node_, opset_, io); }

 private:
  const Node& node_;
  int64_t opset_;
  const RefKernelEntry* entry_;
};

const KernelFactory kRefFactory = {
    "ref",
    [](const NodeInfo& info) {
      return info.all_inputs_in(Layout::kPlain) &&
             ref_unsupported_reason(info.node, info.opset).empty();
    },
    nullptr,
    [](const NodeInfo& info) -> std::unique_ptr<Kernel> {
      return std::make_unique<RefAdapter>(info.node, info.opset);
    },
    nullptr,
};

const std::map<std::string, std::vector<KernelFactory>>& table() {
  static const auto t = [] {
    std::vector<std::pair<std::string, KernelFactory>> fast;
    append_preferred_cpu_kernels(fast);
    append_onednn_kernels(fast);
    append_cpu_kernels(fast);
    std::map<std::string, std::vector<KernelFactory>> m;
    for (auto& [op, f] : fast) m[op].push_back(f);
    for (const std::string& op : ref_supported_ops()) m[op].push_back(kRefFactory);
    return m;
  }();
  return t;
}

}  // namespace

const std::vector<KernelFactory>& kernels_for(const std::string& op_type) {
  static const std::vector<KernelFactory> kNone;
  auto it = table().find(op_type);
  return it == table().end() ? kNone : it->second;
}

void run_reference(const Node& node, int64_t opset, KernelIO& io) {
  const RefKernelEntry* entry = find_ref_kernel(node.op_type());
  if (!entry) fail(ErrorKind::kInternal, node.describe(), ": no reference kernel");
  run_reference(*entry, node, opset, io);
}

}  // namespace nnfuse
