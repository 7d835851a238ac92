// MultiHeadAttention (domain ai.nnfuse, float32, plain, static shapes): the op's contract is in
// kernels/ref/attention.cc. Flash-attention style: one task per (batch, head, block of kQBlock
// query rows), parallel over the runtime's threads; it walks the keys in blocks of kKBlock with
// an online softmax (running max m and sum l per query row, the accumulator rescaled by
// e^(m_old - m_new) when the max grows), so the Sq x Sk score matrix is never made: per thread,
// scratch is O(kQBlock * (D + kKBlock)).
//
// The query rows are the vector lanes: the block of Q is scaled and transposed once per task
// into qt [D, kQBlock], so S^T = K Q^T runs with a register tile of kKeys keys (read in place,
// broadcast) by up to 64 query lanes; the mask, the causal limit and the online softmax then run
// across lanes with no horizontal reductions; and PV runs over D with a tile of kRows query rows,
// reading V's rows in place (a zero-padded copy when D is not a multiple of the vector width).
// Key blocks past every row's causal limit are skipped. Grouped-query attention reads each K/V
// head for its group of query heads in place. Rotary embeddings are applied by each task: to
// its block of Q as it transposes it, and to each block of K as it reads it (again for every
// task that reads that block), into the task's own scratch, so no rotated copy is written to
// memory and read back by another thread. From 4 query blocks on, K is rotated once before
// the tasks instead: each block is read by every later query block (rotates_k_once). With a
// KV cache the new K rows are rotated once, the past is copied once into the present outputs
// and the new rows after it; attention then reads K and V there, head by head.
//
// The loops are written once with GCC vector extensions over a vector of W floats and compiled
// for AVX-512 (W = 16), AVX2 + FMA (8) and baseline SSE2 (4), picked when the kernel is made.
// They are in cpu_attention_loops.cc; this file plans the node and runs it (KV cache, K rotated
// once).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_attention_internal.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/ref/ref_kernels.h"

namespace nnfuse::cpu {
namespace {

using attention::Args;
using attention::kQBlock;
using attention::kRotateOnceBlocks;
using attention::pick_range;
using attention::Problem;
using attention::RangeFn;
using attention::rotate_head;

// ---- Geometry (plan time)

// The node's geometry when this kernel can run it (attributes valid, static shapes that fit);
// else nullopt, and the reference kernel runs (and reports) it.
std::optional<Problem> plan(const NodeInfo& info) {
  const Node& node = info.node;
  Problem p;
  try {
    p.heads = node.attr_int("num_heads", 0);
    p.kv_heads = node.attr_int("kv_num_heads", p.heads);
    const int64_t packed = node.attr_int("qkv_packed", 0), causal = node.attr_int("causal", 0);
    const int64_t il = node.attr_int("rotary_interleaved", 0);
    if (p.heads < 1 || (packed != 0 && packed != 1) || (causal != 0 && causal != 1)) return {};
    if (p.kv_heads < 1 || p.heads % p.kv_heads != 0 || (il != 0 && il != 1)) return {};
    p.packed = packed == 1;
    p.causal = causal == 1;
    p.interleaved = il == 1;
    node.attr_float("scale", 1.0f);
  } catch (const Error&) {
    return {};
  }
  const std::optional<Dims> q = info.input_shape(0);
  if (!q || q->size() != 3) return {};
  p.q_shape = *q;
  p.batch = (*q)[0];
  p.sq = (*q)[1];
  int64_t hidden = (*q)[2];
  if (p.packed) {
    const int64_t parts = p.heads + 2 * p.kv_heads;
    if (info.has_input(1) || info.has_input(2) || hidden % parts != 0) return {};
    p.head_size = hidden / parts;
    hidden = p.heads * p.head_size;
    p.sk = p.sq;
    p.q_stride = p.k_stride = p.v_stride = parts * p.head_size;
    p.k_col = hidden;
    p.v_col = hidden + p.kv_heads * p.head_size;
  } else {
    if (hidden % p.heads != 0) return {};
    p.head_size = hidden / p.heads;
    const std::optional<Dims> k = info.input_shape(1), v = info.input_shape(2);
    if (!k || !v || *k != *v || k->size() != 3 || (*k)[0] != p.batch ||
        (*k)[2] != p.kv_heads * p.head_size) {
      return {};
    }
    p.kv_shape = *k;
    p.sk = (*k)[1];
    p.q_stride = hidden;
    p.k_stride = p.v_stride = p.kv_heads * p.head_size;
  }
  if (info.has_input(4) != info.has_input(5)) return {};
  if (info.has_input(4)) {
    const std::optional<Dims> c = info.input_shape(4), sn = info.input_shape(5);
    if (!c || !sn || *c != *sn || c->size() != 2 || (*c)[0] != p.sq || (*c)[1] % 2 != 0 ||
        (*c)[1] > p.head_size || (*c)[1] < 2 || p.sk != p.sq) {
      return {};
    }
    p.rotary = (*c)[1];
  }
  if (info.has_input(6) != info.has_input(7) || node.num_outputs() > (info.has_input(6) ? 3 : 1)) {
    return {};
  }
  if (info.has_input(6)) {
    const std::optional<Dims> pk = info.input_shape(6), pv = info.input_shape(7);
    if (!pk || !pv || *pk != *pv || pk->size() != 4 || (*pk)[0] != p.batch ||
        (*pk)[1] != p.kv_heads || (*pk)[3] != p.head_size) {
      return {};
    }
    p.past = (*pk)[2];
    p.past_shape = *pk;
    p.cached = true;
    const Dims present = {p.batch, p.kv_heads, p.past + p.sk, p.head_size};
    for (size_t o = 1; o < node.num_outputs(); ++o) {
      if (std::optional<Dims> d = info.output_shape(o); d && *d != present) return {};
    }
    p.sk += p.past;
  }
  p.scale = node.has_attr("scale") ? node.attr_float("scale", 1.0f)
            : p.head_size > 0
                ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.head_size)))
                : 1.0f;
  if (info.has_input(3)) {
    const std::optional<Dims> m = info.input_shape(3);
    if (!m || m->size() > 4) return {};
    const Dims full = {p.batch, p.heads, p.sq, p.sk};
    Dims m4(4 - m->size(), 1);
    m4.insert(m4.end(), m->begin(), m->end());
    for (size_t i = 0; i < 4; ++i) {
      if (m4[i] != 1 && m4[i] != full[i]) return {};
    }
    p.mask_shape = *m;
    const Dims st = contiguous_strides(m4);
    p.ms_b = m4[0] == 1 ? 0 : st[0];
    p.ms_h = m4[1] == 1 ? 0 : st[1];
    p.ms_q = m4[2] == 1 ? 0 : st[2];
    p.ms_k = m4[3] == 1 ? 0 : st[3];
  }
  const Dims out = {p.batch, p.sq, hidden};
  if (std::optional<Dims> o = info.output_shape(0); o && *o != out) return {};
  return p;
}

// Rotary embeddings of the `heads` heads of rows [r0, r1) of x (row stride xs, from column
// col) into y (row stride ys): row r of a batch entry is position r % sq.
void rotate_rows(const Problem& p, const float* x, int64_t xs, int64_t col, int64_t heads, float* y,
                 int64_t ys, const float* cos, const float* sin, int64_t r0, int64_t r1) {
  const int64_t d = p.head_size;
  for (int64_t row = r0; row < r1; ++row) {
    const float* c = cos + (row % p.sq) * p.rotary;
    const float* sn = sin + (row % p.sq) * p.rotary;
    for (int64_t h = 0; h < heads; ++h) {
      rotate_head(p, x + row * xs + col + h * d, y + row * ys + h * d, c, sn);
    }
  }
}

// ---- The kernel

class AttentionKernel : public Kernel {
 public:
  AttentionKernel(const NodeInfo& info, const Problem& p)
      : who_(info.node.describe()), p_(p), range_(pick_range()) {
    // Working memory: the new rows of K rotated (with a KV cache, before they are copied into
    // the present K), and the present K and V the node does not output.
    if (rotates_k_once(p)) rotated_k_ = p.batch * p.sq * p.kv_heads * p.head_size;
    if (p.cached) {
      own_presents_ = 3 - static_cast<int64_t>(std::min<size_t>(info.node.num_outputs(), 3));
      present_ = p.batch * p.kv_heads * p.sk * p.head_size;
    }
  }

  size_t scratch_bytes() const override {
    return (static_cast<size_t>(scratch_floats()) * sizeof(float) + 63) / 64 * 64;
  }

  void run(KernelIO& io) override {
    check(io, 0, p_.q_shape);
    if (!p_.packed) {
      check(io, 1, p_.kv_shape);
      check(io, 2, p_.kv_shape);
    }
    if (!p_.mask_shape.empty() || io.has_input(3)) check(io, 3, p_.mask_shape);
    if (p_.rotary > 0) {
      check(io, 4, {p_.sq, p_.rotary});
      check(io, 5, {p_.sq, p_.rotary});
    }
    Tensor& y = io.output(0, DType::kFloat32, {p_.batch, p_.sq, p_.heads * p_.head_size});
    float* out = y.data<float>();
    if (y.numel() == 0 && !p_.cached) return;
    if (p_.sk == 0) {  // no keys: the products over an empty axis are 0
      std::fill(out, out + y.numel(), 0.0f);
      return;
    }
    const float* q = io.in(0).data<float>();
    const float* k = p_.packed ? q : io.in(1).data<float>();
    Problem p = p_;
    std::vector<float> own_scratch;  // when the plan gives no scratch region
    float* scratch = reinterpret_cast<float*>(io.scratch);
    if (!scratch && scratch_floats() > 0) {
      own_scratch.resize(static_cast<size_t>(scratch_floats()));
      scratch = own_scratch.data();
    }
    const float* cos = p.rotary > 0 ? io.in(4).data<float>() : nullptr;
    const float* sin = p.rotary > 0 ? io.in(5).data<float>() : nullptr;
    const bool k_rotated = rotates_k_once(p);
    if (k_rotated) {
      // The new K rows [B, S, G*D] rotated once: for the present K, or for the many tasks
      // that read each block of a long prompt. Else each task rotates the blocks of Q and K it
      // reads, in its own cache.
      const int64_t kd = p.kv_heads * p.head_size;
      float* rk = scratch;
      parallel_range(p.batch * p.sq, std::max<int64_t>(1, kParallelGrain / kd),
                     [&](int64_t r0, int64_t r1) {
                       rotate_rows(p, k, p.k_stride, p.k_col, p.kv_heads, rk, kd, cos, sin, r0, r1);
                     });
      k = rk;
      p.k_stride = kd;
      p.k_col = 0;
    }
    const float* v = p_.packed ? io.in(0).data<float>() : io.in(2).data<float>();
    const int64_t d = p.head_size, fresh = p.sk - p.past;
    p.kb = fresh * p.k_stride, p.kh = d, p.kr = p.k_stride;
    p.vb = fresh * p.v_stride, p.vh = d, p.vr = p.v_stride;
    if (p.cached) {
      // The present K and V [B, G, P + S, D] (outputs 1 and 2, else buffers of the run's own):
      // each head's past rows in one copy, then its new rows; attention reads them there.
      const Dims present = {p.batch, p.kv_heads, p.sk, d};
      float* dst[2];
      float* own = scratch + rotated_k_;
      for (size_t c = 0; c < 2; ++c) {
        check(io, 6 + c, p_.past_shape);
        if (io.outputs.size() > 1 + c) {
          dst[c] = io.output(1 + c, DType::kFloat32, present).data<float>();
        } else {
          dst[c] = own;
          own += present_;
        }
      }
      const float* src[2] = {k + p.k_col, v + p.v_col};
      const int64_t strides[2] = {p.k_stride, p.v_stride};
      const float* past[2] = {io.in(6).data<float>(), io.in(7).data<float>()};
      const int64_t heads = p.batch * p.kv_heads;
      parallel_range(2 * heads, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t c = t / heads, bg = t % heads, b = bg / p.kv_heads, g = bg % p.kv_heads;
          float* to = dst[c] + bg * p.sk * d;
          std::memcpy(to, past[c] + bg * p.past * d,
                      static_cast<size_t>(p.past * d) * sizeof(float));
          for (int64_t j = 0; j < fresh; ++j) {
            std::memcpy(to + (p.past + j) * d, src[c] + (b * fresh + j) * strides[c] + g * d,
                        static_cast<size_t>(d) * sizeof(float));
          }
        }
      });
      k = dst[0];
      v = dst[1];
      p.k_col = p.v_col = 0;
      p.kb = p.vb = p.kv_heads * p.sk * d;
      p.kh = p.vh = p.sk * d;
      p.kr = p.vr = d;
    }
    const Args a{&p,  q,   k,   v,        io.has_input(3) ? io.in(3).data<float>() : nullptr,
                 out, cos, sin, k_rotated};
    const int64_t tasks = p_.batch * p_.heads * ((p_.sq + kQBlock - 1) / kQBlock);
    const int64_t work = p_.batch * p_.heads * p_.sq * p_.sk * p_.head_size;
    const RangeFn range = range_;
    parallel_blocks(tasks, work, [&](int64_t t0, int64_t t1) { range(a, t0, t1); });
  }

 private:
  void check(const KernelIO& io, size_t i, const Dims& want) const {
    if (!io.has_input(i)) fail(ErrorKind::kRuntime, who_, ": input ", i, " is missing");
    const Tensor& t = io.in(i);
    require_float(t, who_);
    if (t.shape() != want || t.layout() != Layout::kPlain) {
      fail(ErrorKind::kRuntime, who_, ": input ", i, " has shape ", dims_str(t.shape()),
           ", planned for ", dims_str(want));
    }
  }

  // Whether K is rotated once before the tasks run rather than by each task as it reads it:
  // with a KV cache (the present K holds it rotated), and for prompts of many query blocks,
  // where each K block is read by every later query block of the heads of its group.
  // (LLaMA-style prefill, 8 heads of 64 over 2 KV heads, 2 threads, per attention, rotating in
  // the tasks against rotating once: at 128 tokens, 2 blocks, 0.136 against 0.184 ms; at 256, 4
  // blocks, 0.63 against 0.56 ms; at 512, 8 blocks, 1.97 against 1.76 ms.)
  static bool rotates_k_once(const Problem& p) {
    return p.rotary > 0 && (p.cached || (p.sq + kQBlock - 1) / kQBlock >= kRotateOnceBlocks);
  }

  int64_t scratch_floats() const { return rotated_k_ + own_presents_ * present_; }

  std::string who_;
  Problem p_;
  RangeFn range_;
  int64_t rotated_k_ = 0;                   // floats of the rotated new K rows
  int64_t own_presents_ = 0, present_ = 0;  // present K/V not output, and floats of each
};

// Why the kernel declines a MultiHeadAttention, "" when it runs it.
std::string attention_declines(const NodeInfo& info) {
  const Node& n = info.node;
  if (n.domain() != kFusedDomain || n.num_inputs() > 8 || n.num_outputs() > 3 || !n.output(0)) {
    return "not an ai.nnfuse MultiHeadAttention of at most 8 inputs and 3 outputs";
  }
  if (std::string r = float_inputs_problem(info); !r.empty()) return r;
  if (!info.all_inputs_in(Layout::kPlain)) return "an input is not plain";
  if (plan(info)) return "";
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (info.has_input(i) && !info.input_shape(i)) return not_static_f32(info, i);
  }
  return "heads, Q/K/V, mask, cos/sin or output shapes it does not run";
}

std::unique_ptr<Kernel> attention_create(const NodeInfo& info) {
  std::optional<Problem> p = plan(info);
  if (!p) fail(ErrorKind::kInternal, info.node.describe(), ": cpu.attention cannot run it");
  return std::make_unique<AttentionKernel>(info, *p);
}

}  // namespace

void append_attention_kernels(FactoryTable& t) {
  t.emplace_back("MultiHeadAttention",
                 KernelFactory{"cpu.attention", accepts_unless_declined<attention_declines>,
                               nullptr, attention_create, nullptr, attention_declines});
}

}  // namespace nnfuse::cpu
