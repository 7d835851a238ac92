#include "kernels/cpu/onednn_common.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace nnfuse::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

dnnl::memory::dims to_dims(const Dims& d) { return dnnl::memory::dims(d.begin(), d.end()); }

Tag plain_tag(size_t rank) {
  switch (rank) {
    case 1:
      return Tag::a;
    case 2:
      return Tag::ab;
    case 3:
      return Tag::abc;
    case 4:
      return Tag::abcd;
    case 5:
      return Tag::abcde;
    case 6:
      return Tag::abcdef;
    default:
      fail(ErrorKind::kInternal, "no plain oneDNN format for rank ", rank);
  }
}

Tag channels_last_tag(size_t rank) {
  NNFUSE_CHECK(channels_last_rank(rank), "only tensors of rank 3 to 5 can be stored channels-last");
  return rank == 3 ? Tag::nwc : rank == 4 ? Tag::nhwc : Tag::ndhwc;
}

dnnl::memory::desc f32_desc(const Dims& shape, Layout layout) {
  return f32_desc(
      shape, layout == Layout::kPlain ? plain_tag(shape.size()) : channels_last_tag(shape.size()));
}

dnnl::memory::desc f32_desc(const Dims& shape, Tag tag) {
  return dnnl::memory::desc(to_dims(shape), dnnl::memory::data_type::f32, tag);
}

Layout input_layout(const NodeInfo& info, size_t i) {
  return i < info.input_layouts.size() ? info.input_layouts[i] : Layout::kPlain;
}

std::optional<Dims> known_shape(const NodeInfo& info, size_t i) {
  if (const Tensor* c = info.constant(i)) return c->shape();
  return info.input_shape(i);
}

bool static_f32_input(const NodeInfo& info, size_t i) {
  if (!info.has_input(i)) return false;
  if (const Tensor* c = info.constant(i)) return c->dtype() == DType::kFloat32;
  return info.input_dtype(i) == DType::kFloat32 && info.input_shape(i).has_value();
}

ThreadScope::ThreadScope(int n) : saved_(omp_get_max_threads()) {
  if (n > 0 && n != saved_) omp_set_num_threads(n);
}

ThreadScope::~ThreadScope() {
  if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
}

bool output_shape_is(const NodeInfo& info, const Dims& want) {
  std::optional<Dims> s = info.output_shape(0);
  return !s || *s == want;
}

void check_input(const Tensor& t, const Dims& shape, Layout layout, const std::string& what,
                 size_t index) {
  if (t.dtype() != DType::kFloat32 || t.shape() != shape || t.layout() != layout) {
    fail(ErrorKind::kRuntime, what, ": input ", index, " is ", dtype_name(t.dtype()),
         dims_str(t.shape()), " ", layout_name(t.layout()),
         " but the kernel was planned for float32", dims_str(shape), " ", layout_name(layout));
  }
}

dnnl::memory prepack(const Tensor& src, const dnnl::memory::desc& user,
                     const dnnl::memory::desc& want, OwnedBuffers& owned) {
  owned.push_back(aligned_bytes(std::max<size_t>(want.get_size(), 1), 64));
  dnnl::memory dst(want, engine(), owned.back().get());
  if (user == want) {
    std::memcpy(dst.get_data_handle(), src.raw(), src.nbytes());
    return dst;
  }
  dnnl::memory from(user, engine(), handle(src));
  execute(make_reorder(from, dst), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, dst}});
  return dst;
}

Tensor scaled(const Tensor& t, float scale) {
  if (scale == 1.0f) return t;
  Tensor r = t.clone();
  float* p = r.data<float>();
  for (int64_t i = 0; i < r.numel(); ++i) p[i] *= scale;
  return r;
}

std::optional<ref::Activation> fused_activation(const Node& node, bool quantize) {
  ref::Activation a;
  try {
    a = ref::read_activation(node);
  } catch (const Error&) {
    return std::nullopt;
  }
  // oneDNN's clip is max(lo, min(hi, x)), ONNX's min(max(x, lo), hi): equal unless lo > hi.
  if (a.kind == ref::ActivationKind::kClip && !(a.alpha <= a.beta)) return std::nullopt;
  if (a.kind == ref::ActivationKind::kQuantize && (!quantize || !(a.alpha > 0.0f))) {
    return std::nullopt;
  }
  return a;
}

namespace {

// A one-element float32 tensor of rank `rank`, which broadcasts over any dst of that rank.
dnnl::memory::desc one_value_desc(int rank) {
  const dnnl::memory::dims ones(static_cast<size_t>(rank), 1);
  return dnnl::memory::desc(ones, dnnl::memory::data_type::f32, ones);
}

}  // namespace

void append_activation(const ref::Activation& a, dnnl::post_ops& ops, int rank) {
  using dnnl::algorithm;
  using K = ref::ActivationKind;
  switch (a.kind) {
    case K::kNone:
      return;
    case K::kRelu:
      return ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    case K::kLeakyRelu:
      return ops.append_eltwise(1.0f, algorithm::eltwise_relu, a.alpha, 0.0f);
    case K::kClip:
      return ops.append_eltwise(1.0f, algorithm::eltwise_clip, a.alpha, a.beta);
    case K::kSigmoid:
      return ops.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
    case K::kTanh:
      return ops.append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f);
    case K::kHardSigmoid:  // oneDNN 2.6 has no hardsigmoid
      ops.append_eltwise(1.0f, algorithm::eltwise_linear, a.alpha, a.beta);
      return ops.append_eltwise(1.0f, algorithm::eltwise_clip, 0.0f, 1.0f);
    case K::kHardSwish:  // x * relu6(x + 3) / 6
      return ops.append_eltwise(1.0f, algorithm::eltwise_hardswish, 0.0f, 0.0f);
    case K::kSiLU:  // x * sigmoid(alpha * x)
      return ops.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
    case K::kGelu:
      return ops.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    case K::kGeluTanh:
      return ops.append_eltwise(1.0f, algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
    case K::kSwish:
      return ops.append_eltwise(1.0f, algorithm::eltwise_swish, a.alpha, 0.0f);
    case K::kQuantize:
      // QuantizeLinear divides (a product by 1 / scale rounds differently at some ties), so a
      // binary division by a one-value tensor; round is to nearest even, as rint.
      NNFUSE_CHECK(rank > 0, "append_activation: the quantize round trip needs the dst's rank");
      ops.append_binary(algorithm::binary_div, one_value_desc(rank));
      ops.append_eltwise(1.0f, algorithm::eltwise_round, 0.0f, 0.0f);
      ops.append_eltwise(1.0f, algorithm::eltwise_clip, a.beta, a.beta + 255.0f);
      return ops.append_eltwise(1.0f, algorithm::eltwise_linear, a.alpha, 0.0f);
  }
}

void bind_activation_args(const ref::Activation& a, const dnnl::post_ops& ops, int rank,
                          float* divisor, std::unordered_map<int, dnnl::memory>& args) {
  if (a.kind != ref::ActivationKind::kQuantize) return;
  *divisor = a.alpha;
  for (int i = 0; i < ops.len(); ++i) {
    if (ops.kind(i) != dnnl::primitive::kind::binary) continue;
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1] =
        dnnl::memory(one_value_desc(rank), engine(), divisor);
  }
}

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::reorder make_reorder(const dnnl::memory& from, const dnnl::memory& to) {
  return dnnl::reorder(dnnl::reorder::primitive_desc(from, to, user_scratchpad_attr()));
}

bool runs_direct_kernel(const dnnl::primitive_desc& pd) {
  const std::string impl = pd.impl_info_str();
  return impl.rfind("ref", 0) != 0 && impl.rfind("simple", 0) != 0 &&
         impl.find("gemm") == std::string::npos;
}

std::byte* scratch_or_own(std::byte* given, size_t bytes, std::shared_ptr<std::byte[]>& own) {
  if (given) return given;
  if (!own) own = aligned_bytes(bytes, 64);
  return own.get();
}

namespace {

// The calling thread's scratchpad: one buffer, grown to the largest any primitive asked for,
// and a memory object over it per scratchpad size (oneDNN describes a scratchpad as that many
// bytes, so one object serves every primitive of that size).
struct ThreadScratchpad {
  std::shared_ptr<std::byte[]> buffer;
  size_t capacity = 0;
  std::unordered_map<size_t, dnnl::memory> by_size;

  dnnl::memory& of_size(size_t bytes) {
    if (bytes > capacity) {
      capacity = std::max(bytes, 2 * capacity);
      buffer.reset();  // the old buffer first: peak memory stays at one
      buffer = aligned_bytes(capacity, 4096);
      by_size.clear();  // every memory object pointed into the old buffer
    }
    auto it = by_size.find(bytes);
    if (it == by_size.end()) {
      const dnnl::memory::desc d({static_cast<dnnl::memory::dim>(bytes)},
                                 dnnl::memory::data_type::u8, Tag::x);
      it = by_size.emplace(bytes, dnnl::memory(d, engine(), buffer.get())).first;
    }
    return it->second;
  }
};

size_t scratchpad_bytes(const dnnl::primitive& p) {
  const_dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_primitive_get_primitive_desc(p.get(), &pd) != dnnl_success || !pd) return 0;
  const dnnl_memory_desc_t* md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  return md ? dnnl_memory_desc_get_size(md) : 0;
}

}  // namespace

void execute(const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>& args) {
  if (const size_t bytes = scratchpad_bytes(p); bytes > 0) {
    thread_local ThreadScratchpad scratchpad;
    args[DNNL_ARG_SCRATCHPAD] = scratchpad.of_size(bytes);
  }
  p.execute(stream(), args);
  stream().wait();
}

void execute(const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>&& args) {
  execute(p, args);
}

}  // namespace nnfuse::onednn
