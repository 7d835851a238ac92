// EmbedLayerNorm (domain ai.nnfuse), float32: for each output row, the looked-up table rows
// and the addend's row are summed into one buffer, its mean and variance taken (sums in
// double) and the normalized row written, all while the row is in cache; rows in parallel.
// See kernels/ref/embed.cc for the op's definition. Ids are checked before any row is
// written, so a bad id throws (naming the node) and nothing is read out of bounds.
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_rows.h"
#include "kernels/cpu/cpu_util.h"

namespace nnfuse::cpu {
namespace {

constexpr size_t kFirstPair = 3;

// s = t (+ a, a vector, or a single value broadcast when a_step is 0).
NNFUSE_TARGET_CLONES void init_row(float* __restrict s, const float* __restrict t,
                                   const float* __restrict a, int64_t a_step, int64_t n) {
  if (!a) {
    for (int64_t i = 0; i < n; ++i) s[i] = t[i];
  } else if (a_step == 0) {
    const float c = *a;
    for (int64_t i = 0; i < n; ++i) s[i] = t[i] + c;
  } else {
    for (int64_t i = 0; i < n; ++i) s[i] = t[i] + a[i];
  }
}

NNFUSE_TARGET_CLONES void add_row(float* __restrict s, const float* __restrict t, int64_t n) {
  for (int64_t i = 0; i < n; ++i) s[i] += t[i];
}

NNFUSE_TARGET_CLONES void norm_row(const float* __restrict s, float* __restrict y, int64_t n,
                                   float mean, float inv, const float* __restrict gamma,
                                   const float* __restrict beta) {
  if (beta) {
    for (int64_t i = 0; i < n; ++i) y[i] = (s[i] - mean) * inv * gamma[i] + beta[i];
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = (s[i] - mean) * inv * gamma[i];
  }
}

// Id r of an int32 or int64 tensor.
inline int64_t id_at(const Tensor& ids, int64_t r) {
  return ids.dtype() == DType::kInt64 ? ids.data<int64_t>()[r]
                                      : static_cast<int64_t>(ids.data<int32_t>()[r]);
}

class EmbedLayerNormKernel : public Kernel {
 public:
  explicit EmbedLayerNormKernel(const NodeInfo& info)
      : who_(info.node.describe()),
        eps_(info.node.attr_float("epsilon", 1e-5f)),
        want_sum_(info.node.output(1) != nullptr) {}

  void run(KernelIO& io) override {
    const Tensor& gamma = io.in(0);
    require_float(gamma, who_, "gamma");
    if (gamma.rank() != 1) {
      fail(ErrorKind::kRuntime, who_, ": gamma has shape ", dims_str(gamma.shape()),
           ", expected [E]");
    }
    const int64_t e = gamma.dim(0);
    const Tensor* beta = io.has_input(1) ? &io.in(1) : nullptr;
    if (beta) {
      require_float(*beta, who_, "beta");
      if (beta->shape() != Dims{e}) {
        fail(ErrorKind::kRuntime, who_, ": beta has shape ", dims_str(beta->shape()),
             ", expected [", e, "]");
      }
    }
    const size_t pairs = (io.inputs.size() - kFirstPair) / 2;
    const Tensor& ids0 = io.in(kFirstPair + 1);
    std::vector<const float*> tables(pairs);
    std::vector<int64_t> rows_of(pairs);
    for (size_t k = 0; k < pairs; ++k) {
      const size_t ti = kFirstPair + 2 * k;
      const Tensor& table = io.in(ti);
      const Tensor& ids = io.in(ti + 1);
      require_float(table, who_, "table");
      if (table.rank() != 2 || table.dim(1) != e || table.layout() != Layout::kPlain) {
        fail(ErrorKind::kRuntime, who_, ": table (input ", ti, ") has shape ",
             dims_str(table.shape()), ", expected [V, ", e, "]");
      }
      if (ids.dtype() != DType::kInt64 && ids.dtype() != DType::kInt32) {
        fail(ErrorKind::kRuntime, who_, ": ids (input ", ti + 1, ") have type ",
             dtype_name(ids.dtype()), ", expected int32 or int64");
      }
      if (ids.shape() != ids0.shape()) {
        fail(ErrorKind::kRuntime, who_, ": ids (input ", ti + 1, ") have shape ",
             dims_str(ids.shape()), ", the first ids have ", dims_str(ids0.shape()));
      }
      const int64_t v = table.dim(0);
      for (int64_t r = 0; r < ids.numel(); ++r) {
        const int64_t id = id_at(ids, r);
        if (id < -v || id >= v) {
          fail(ErrorKind::kRuntime, who_, ": id ", id, " (input ", ti + 1,
               ") is out of range for a table of ", v, " rows");
        }
      }
      tables[k] = table.data<float>();
      rows_of[k] = v;
    }
    Dims out = ids0.shape();
    out.push_back(e);
    const int64_t rows = ids0.numel();
    // The addend's strides over the output dims (0 where it broadcasts).
    const Tensor* addend = io.has_input(2) ? &io.in(2) : nullptr;
    std::vector<int64_t> a_strides(out.size(), 0);
    if (addend) {
      require_float(*addend, who_, "addend");
      const Dims& as = addend->shape();
      bool ok = as.size() <= out.size();
      int64_t stride = 1;
      for (size_t i = as.size(); ok && i-- > 0;) {
        const size_t oi = out.size() - as.size() + i;
        ok = as[i] == out[oi] || as[i] == 1;
        a_strides[oi] = as[i] == 1 ? 0 : stride;
        stride *= as[i];
      }
      if (!ok) {
        fail(ErrorKind::kRuntime, who_, ": the addend of shape ", dims_str(as),
             " does not broadcast to the output shape ", dims_str(out));
      }
    }
    Tensor& y = io.output(0, DType::kFloat32, out);
    float* sum_out = nullptr;
    if (io.outputs.size() > 1 && want_sum_) {
      sum_out = io.output(1, DType::kFloat32, out).data<float>();
    }
    std::vector<const Tensor*> ids(pairs);
    for (size_t k = 0; k < pairs; ++k) ids[k] = &io.in(kFirstPair + 2 * k + 1);
    const float* pg = gamma.data<float>();
    const float* pb = beta ? beta->data<float>() : nullptr;
    const float* pa = addend ? addend->data<float>() : nullptr;
    float* py = y.data<float>();
    const double eps = eps_;
    const size_t lead = out.size() - 1;
    parallel_blocks(rows, rows * e * static_cast<int64_t>(pairs + 3), [&](int64_t r0, int64_t r1) {
      std::vector<float> buf(sum_out ? 0 : static_cast<size_t>(e));
      for (int64_t r = r0; r < r1; ++r) {
        float* s = sum_out ? sum_out + r * e : buf.data();
        const float* a = nullptr;
        if (pa) {
          int64_t off = 0;
          for (size_t i = lead, rem = static_cast<size_t>(r); i-- > 0;) {
            off += static_cast<int64_t>(rem % static_cast<size_t>(out[i])) * a_strides[i];
            rem /= static_cast<size_t>(out[i]);
          }
          a = pa + off;
        }
        for (size_t k = 0; k < pairs; ++k) {
          int64_t id = id_at(*ids[k], r);
          id = id < 0 ? id + rows_of[k] : id;
          const float* t = tables[k] + id * e;
          if (k == 0) {
            init_row(s, t, a, a_strides[lead], e);
          } else {
            add_row(s, t, e);
          }
        }
        const float mean =
            e > 0 ? static_cast<float>(row_sum(s, e) / static_cast<double>(e)) : kNaN;
        const double var = row_sq_dev(s, e, mean) / static_cast<double>(e);
        const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
        norm_row(s, py + r * e, e, mean, inv, pg, pb);
      }
    });
  }

 private:
  std::string who_;
  double eps_;
  bool want_sum_;
};

// Why the kernel declines an EmbedLayerNorm, "" when it runs it.
std::string embed_declines(const NodeInfo& info) {
  const Node& n = info.node;
  const size_t ni = n.num_inputs();
  if (n.domain() != "ai.nnfuse" || ni < kFirstPair + 2 || (ni - kFirstPair) % 2 != 0 ||
      !n.output(0)) {
    return "not an ai.nnfuse EmbedLayerNorm with (table, ids) pairs";
  }
  if (!info.all_inputs_in(Layout::kPlain)) return "an input is not plain";
  if (!input_is(info, 0, DType::kFloat32)) return not_static_f32(info, 0);
  for (size_t i = 1; i < ni; ++i) {
    const bool ids = i >= kFirstPair && (i - kFirstPair) % 2 == 1;
    if (!info.has_input(i)) {
      if (i >= kFirstPair) return input_label(info, i) + " is missing";  // tables and ids
      continue;
    }
    const DType t = info.input_dtype(i);
    if (ids ? (t != DType::kInt64 && t != DType::kInt32) : t != DType::kFloat32) {
      return input_label(info, i) + " is " + dtype_name(t);
    }
  }
  for (size_t k = 2; k < n.num_outputs(); ++k) {
    if (n.output(k)) return "output " + std::to_string(k) + " is wanted";
  }
  try {
    n.attr_float("epsilon", 1e-5f);
  } catch (const Error& e) {
    return std::string("attributes: ") + e.what();
  }
  return "";
}

std::unique_ptr<Kernel> embed_create(const NodeInfo& info) {
  return std::make_unique<EmbedLayerNormKernel>(info);
}

}  // namespace

void append_embed_kernels(FactoryTable& t) {
  t.emplace_back("EmbedLayerNorm",
                 KernelFactory{"cpu.embed_layer_norm", accepts_unless_declined<embed_declines>,
                               nullptr, embed_create, nullptr, embed_declines});
}

}  // namespace nnfuse::cpu
