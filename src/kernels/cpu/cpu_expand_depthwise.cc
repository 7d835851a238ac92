// ExpandDepthwise (ai.nnfuse, kernels/ref/expand_depthwise.h): an inverted residual's 1x1
// expansion, or a stem convolution, and the depthwise k x k convolution after it (k 3 or 5,
// stride 1 or 2, padding k / 2) in one pass over the image, channels-last out.
//
// The threads split the output rows (each computing the rows at a seam that both need) or, where
// that costs more, the expanded channels in whole vectors of 16. Each thread walks its output
// rows; for each it expands the input rows the depthwise window needs and has not expanded yet
// into a ring of k rows, then runs the depthwise convolution over the ring. The ring (k rows of
// its channels, at most a few hundred KiB) stays in the core's cache: the expanded tensor is
// never written to memory.
//
// A plain 1x1 expansion (unpadded, unstrided) reads the input rows channels-last (converting a
// plain input first). Any other expansion (a stem's 3x3 of stride 2 over 3 channels) gathers each
// of its output rows' taps, [kh * kw * C][We], from the input as it arrives, plain or
// channels-last, and multiplies them as a 1x1 expansion of kh * kw * C channels would its input row
// (reading a tap's row of pixels instead of a pixel's channels).
//
// The ring holds each row blocked by 16 channels (vector v of pixel p at (v * Wp + p) * 16,
// Wp = We + 2 * pad for the expanded width We, the pad pixels zero), so the depthwise taps of a
// channel vector lie at constant offsets from one pointer per row. The expansion is a
// register-blocked product of about 24 sums (6 pixels by 4 vectors, 8 by 3 or 12 by 2); the
// depthwise convolution computes 8 output pixels of one vector at a time. Both are written on GCC's
// vector extensions and compiled for AVX-512, AVX2 and baseline x86-64 (NNFUSE_TARGET_CLONES), on
// vectors as wide as the CPU's registers: 16 floats with AVX-512; with AVX2 (8) or SSE (4) each
// vector of 16 channels in parts, 12 sums at a time (a 16-float vector without AVX-512 has no
// register and lived on the stack: MobileNetV2 ran 3.8x slower than without the fusion).
// ReLU, Clip (ReLU6), HardSwish, SiLU and Sigmoid are applied in registers; other activations over
// the rows just written (activation_row).
//
// The loops' force-inlined parts are in cpu_expand_depthwise_internal.h; this file compiles them
// into its row functions, plans the split over the threads, packs the weights and walks the rows.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_expand_depthwise_internal.h"
#include "kernels/cpu/cpu_gated.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/cpu_math.h"
#include "kernels/cpu/layout.h"
#include "kernels/ref/expand_depthwise.h"
#include "kernels/ref/fused.h"
#include "kernels/ref/nn_internal.h"

namespace nnfuse::cpu {
namespace {

using expand_depthwise::Clamp;
using expand_depthwise::depthwise_row_ks;
using expand_depthwise::Epilogue;
using expand_depthwise::expand_row_of;
using expand_depthwise::kLanes;
using expand_depthwise::Lanes;
using ref::ActivationKind;

// The expansion weights of one panel that should fit the L1 data cache with the pixels and
// the ring row they meet (32 KiB on current x86 cores).
constexpr int64_t kPanelBytes = 24 * 1024;

// Whether the row loops apply the activation in registers (as a Clamp), and that Clamp.
bool in_registers(const ref::Activation& a) {
  switch (a.kind) {
    case ActivationKind::kNone:
    case ActivationKind::kRelu:
    case ActivationKind::kClip:
    case ActivationKind::kHardSwish:
    case ActivationKind::kSiLU:
    case ActivationKind::kSwish:
    case ActivationKind::kSigmoid:
      return true;
    default:
      return false;
  }
}
Clamp clamp_of(const ref::Activation& a) {
  Clamp c;
  if (a.kind == ActivationKind::kRelu) c.lo = 0.0f;
  if (a.kind == ActivationKind::kClip) {
    c.lo = a.alpha;
    c.hi = a.beta;
  }
  if (a.kind == ActivationKind::kHardSwish) c.then = Clamp::kHardSwish;
  if (a.kind == ActivationKind::kSiLU || a.kind == ActivationKind::kSwish) c.then = Clamp::kSwish;
  if (a.kind == ActivationKind::kSwish) c.alpha = a.alpha;
  if (a.kind == ActivationKind::kSigmoid) c.then = Clamp::kSigmoid;
  return c;
}

std::atomic<int> forced_lanes{0};

// The CPU's vector width in floats: 16 with AVX-512, 8 with AVX2, else 4 (or what a test forced).
// The row functions below run their loops on vectors that wide (Lanes), whichever clone the
// loader picked.
int lanes() {
  if (const int f = forced_lanes.load(std::memory_order_relaxed)) return f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const int kLanesHere = __builtin_cpu_supports("avx512f") ? 16
                                : __builtin_cpu_supports("avx2")  ? 8
                                                                  : 4;
  return kLanesHere;
#else
  return 4;
#endif
}

template <class V>
NNFUSE_INLINE void expand_row_v(const float* x, int64_t width, int64_t cin, int64_t xs, bool taps,
                                const float* w, const float* b, const Clamp& c, float* y,
                                int64_t vstride, int nv) {
  const Epilogue<V> ep(c);
  if (taps) {
    expand_row_of<V, true>(x, width, cin, xs, w, b, ep, y, vstride, nv);
  } else {
    expand_row_of<V, false>(x, width, cin, xs, w, b, ep, y, vstride, nv);
  }
}

// One row of `width` pixels times a panel of nv (1 to 4) vectors: pixels of cin channels (xs =
// cin), or with `taps`, cin rows of xs values, one per tap (gather_row's).
NNFUSE_TARGET_CLONES void expand_row(const float* x, int64_t width, int64_t cin, int64_t xs,
                                     bool taps, const float* w, const float* b, const Clamp& c,
                                     float* y, int64_t vstride, int nv) {
  switch (lanes()) {
    case 16:
      expand_row_v<Lanes<16>::V>(x, width, cin, xs, taps, w, b, c, y, vstride, nv);
      break;
    case 8:
      expand_row_v<Lanes<8>::V>(x, width, cin, xs, taps, w, b, c, y, vstride, nv);
      break;
    default:
      expand_row_v<Lanes<4>::V>(x, width, cin, xs, taps, w, b, c, y, vstride, nv);
      break;
  }
}

template <class V>
NNFUSE_INLINE void depthwise_row_v(const float* const* rows, int64_t k, int64_t s, int64_t wp,
                                   int64_t wo, int64_t nv, const float* w, const float* b,
                                   const Clamp& c, float* y, int64_t ystride) {
  const Epilogue<V> ep(c);
  if (k == 3 && s == 1) depthwise_row_ks<V, 3, 1>(rows, wp, wo, nv, w, b, ep, y, ystride);
  if (k == 3 && s == 2) depthwise_row_ks<V, 3, 2>(rows, wp, wo, nv, w, b, ep, y, ystride);
  if (k == 5 && s == 1) depthwise_row_ks<V, 5, 1>(rows, wp, wo, nv, w, b, ep, y, ystride);
  if (k == 5 && s == 2) depthwise_row_ks<V, 5, 2>(rows, wp, wo, nv, w, b, ep, y, ystride);
}

// One output row of nv vectors: pixel o's vector v at y + o * ystride + v * 16.
NNFUSE_TARGET_CLONES void depthwise_row(const float* const* rows, int64_t k, int64_t s, int64_t wp,
                                        int64_t wo, int64_t nv, const float* w, const float* b,
                                        const Clamp& c, float* y, int64_t ystride) {
  switch (lanes()) {
    case 16:
      depthwise_row_v<Lanes<16>::V>(rows, k, s, wp, wo, nv, w, b, c, y, ystride);
      break;
    case 8:
      depthwise_row_v<Lanes<8>::V>(rows, k, s, wp, wo, nv, w, b, c, y, ystride);
      break;
    default:
      depthwise_row_v<Lanes<4>::V>(rows, k, s, wp, wo, nv, w, b, c, y, ystride);
      break;
  }
}

// d[j] = src[j * step] for j in [0, n): the loops of steps 1 and 2 (a stem's over a plain
// image) vectorized.
NNFUSE_TARGET_CLONES void strided_copy(const float* src, int64_t step, int64_t n, float* d) {
  if (step == 1) {
    for (int64_t j = 0; j < n; ++j) d[j] = src[j];
  } else if (step == 2) {
    for (int64_t j = 0; j < n; ++j) d[j] = src[2 * j];
  } else {
    for (int64_t j = 0; j < n; ++j) d[j] = src[j * step];
  }
}

// The expansion's window over X [N, C, H, W] with weight dims w [E, C, kh, kw]: its strides,
// pads and output dims, as the reference's convolutions compute them (throws where the output
// would be empty).
ref::WindowGeometry expansion_geometry(const Node& ex, const Dims& x, const Dims& w) {
  return ref::window_geometry(ex, {x[2], x[3]}, {w[2], w[3]}, false);
}

class ExpandDepthwiseKernel : public Kernel {
 public:
  explicit ExpandDepthwiseKernel(const NodeInfo& info) : who_(info.node.describe()) {
    const Dims x = *info.input_shape(0);
    n_ = x[0];
    c_ = x[1];
    h_ = x[2];
    w_ = x[3];
    const Tensor* w1 = info.constant(ref::kExpandWeight);
    const Tensor* w2 = info.constant(ref::kDepthwiseWeight);
    e_ = w1->dim(0);
    k_ = w2->dim(2);
    const ref::ExpandDepthwisePart ex = ref::expand_depthwise_part(info.node, false);
    const ref::ExpandDepthwisePart dw = ref::expand_depthwise_part(info.node, true);
    const ref::WindowGeometry g = expansion_geometry(*ex.node, x, w1->shape());
    kh1_ = w1->dim(2);
    kw1_ = w1->dim(3);
    sh1_ = g.strides[0];
    sw1_ = g.strides[1];
    pt1_ = g.pad_begin[0];
    pl1_ = g.pad_begin[1];
    he_ = g.out[0];
    we_ = g.out[1];
    taps_ = c_ * kh1_ * kw1_;
    gathers_ = !(kh1_ == 1 && kw1_ == 1 && sh1_ == 1 && sw1_ == 1 && g.pad_begin == Dims{0, 0} &&
                 g.pad_end == Dims{0, 0});
    s_ = dw.node->attr_ints("strides", {1, 1})[0];
    pad_ = k_ / 2;
    ho_ = (he_ + 2 * pad_ - k_) / s_ + 1;
    wo_ = (we_ + 2 * pad_ - k_) / s_ + 1;
    act1_ = ref::read_activation(*ex.node);
    act2_ = ref::read_activation(*dw.node);
    const float* b1 = info.has_input(ref::kExpandWeight + 1)
                          ? info.constant(ref::kExpandWeight + 1)->data<float>()
                          : nullptr;
    const float* b2 = info.has_input(ref::kDepthwiseWeight + 1)
                          ? info.constant(ref::kDepthwiseWeight + 1)->data<float>()
                          : nullptr;
    pack(w1->data<float>(), b1, w2->data<float>(), b2, std::max(1, info.num_threads));
  }

  // The weights and biases are copied.
  bool reads_input(size_t i) const override { return i == 0; }

  size_t scratch_bytes() const override {
    return (parts_.size() * ring_floats() * sizeof(float) + 63) / 64 * 64;
  }

  void run(KernelIO& io) override {
    const Tensor& xin = io.in(0);
    require_float(xin, who_);
    if (xin.shape() != Dims{n_, c_, h_, w_}) {
      fail(ErrorKind::kRuntime, who_, ": X has shape ", dims_str(xin.shape()), ", expected [", n_,
           ", ", c_, ", ", h_, ", ", w_, "]");
    }
    Tensor converted;
    if (!gathers_ && xin.layout() != Layout::kNHWC) converted = to_layout(xin, Layout::kNHWC);
    const float* x = (converted.defined() ? converted : xin).data<float>();
    const bool x_nhwc = converted.defined() || xin.layout() == Layout::kNHWC;
    Tensor& y = io.output(0, DType::kFloat32, {n_, e_, ho_, wo_}, Layout::kNHWC);
    std::vector<float> own;
    float* scratch = reinterpret_cast<float*>(io.scratch);
    if (!scratch) {
      own.resize(scratch_bytes() / sizeof(float));
      scratch = own.data();
    }
    const int64_t parts = static_cast<int64_t>(parts_.size());
    const int nt = omp_in_parallel() ? 1 : static_cast<int>(parts);
    float* py = y.data<float>();
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int64_t i = 0; i < parts; ++i) {
      const Part& p = parts_[static_cast<size_t>(i)];
      float* ring = scratch + static_cast<size_t>(i) * ring_floats();
      for (int64_t img = 0; img < n_; ++img)
        run_part(p, ring, x + img * h_ * w_ * c_, x_nhwc, py + img * ho_ * wo_ * e_);
    }
  }

 private:
  // Whole vectors [v0, v1) of the expanded channels (the last one padded with zeros) and the
  // expansion's weights for them, in panels of up to 4 vectors.
  struct Slice {
    int64_t v0 = 0, v1 = 0;
    std::vector<int> panels;  // vectors per panel, as even as they come (9 -> 3 + 3 + 3)
    std::vector<float> w1;    // per panel: [taps][nv * 16]
    int64_t vectors() const { return v1 - v0; }
  };
  // One thread's work: output rows [oh0, oh1) of one slice.
  struct Part {
    int64_t oh0 = 0, oh1 = 0;
    size_t slice = 0;
  };

  int64_t padded_width() const { return we_ + 2 * pad_; }
  int64_t widest() const {
    int64_t v = 0;
    for (const Slice& sl : slices_) v = std::max(v, sl.vectors());
    return v;
  }
  // One part's k ring rows and one output row, for the widest slice, and the taps of one
  // expanded row where the expansion gathers them.
  size_t ring_floats() const {
    return static_cast<size_t>((k_ * padded_width() + wo_) * widest() * kLanes +
                               (gathers_ ? we_ * taps_ : 0));
  }

  // Splits the work over `threads`: by output rows (every thread all channels, the rows of the
  // depthwise window's overlap at each seam expanded twice) or by channel vectors (every thread
  // all rows, no work twice, but the threads' shares uneven when the vectors do not divide),
  // whichever leaves the busiest thread the fewest expanded row-vectors; by rows whenever rows
  // can be split and the expansion gathers its taps (split by channels, each thread would
  // gather every row's taps).
  void split(int threads) {
    const int64_t vectors = (e_ + kLanes - 1) / kLanes;
    const int64_t by_rows = std::min<int64_t>(threads, std::max<int64_t>(1, ho_ / 2));
    const int64_t by_channels = std::min<int64_t>(threads, vectors);
    const int64_t rows_per = (ho_ + by_rows - 1) / by_rows;
    const int64_t row_cost = std::min(he_, rows_per * s_ + k_ - s_) * vectors;
    const int64_t channel_cost = he_ * ((vectors + by_channels - 1) / by_channels);
    // A gathered expansion's taps are gathered by every thread that expands a row: split by
    // rows, each row is gathered once (twice at a seam).
    if (by_rows > 1 && (row_cost < channel_cost || by_channels == 1 || gathers_)) {
      slices_.push_back({0, vectors, {}, {}});
      for (int64_t t = 0; t < by_rows; ++t)
        parts_.push_back({ho_ * t / by_rows, ho_ * (t + 1) / by_rows, 0});
      return;
    }
    for (int64_t t = 0; t < by_channels; ++t) {
      slices_.push_back({vectors * t / by_channels, vectors * (t + 1) / by_channels, {}, {}});
      parts_.push_back({0, ho_, static_cast<size_t>(t)});
    }
  }

  void pack(const float* w1, const float* b1, const float* w2, const float* b2, int threads) {
    split(threads);
    for (Slice& sl : slices_) {
      // A panel's weights (taps x nv vectors) stay in the core's L1 cache while every pixel
      // block of a row passes over them: up to 4 vectors for 96 taps or fewer, fewer for more.
      const int64_t most = std::clamp<int64_t>(kPanelBytes / (taps_ * kLanes * 4), 1, 4);
      const int64_t count = (sl.vectors() + most - 1) / most;
      for (int64_t i = 0, left = sl.vectors(); i < count; ++i) {
        const int nv = static_cast<int>((left + (count - i) - 1) / (count - i));
        sl.panels.push_back(nv);
        left -= nv;
      }
      int64_t v = sl.v0;
      for (int nv : sl.panels) {
        // Tap t = (kh * kw1 + kw) * C + c, as gather_row lays the taps out.
        const int64_t cols = nv * kLanes, kk1 = kh1_ * kw1_;
        for (int64_t t = 0; t < taps_; ++t) {
          const int64_t ci = t % c_, tap = t / c_;
          for (int64_t j = 0; j < cols; ++j) {
            const int64_t o = v * kLanes + j;
            sl.w1.push_back(o < e_ ? w1[(o * c_ + ci) * kk1 + tap] : 0.0f);
          }
        }
        v += nv;
      }
    }
    zero_.assign(static_cast<size_t>(padded_width() * widest() * kLanes), 0.0f);
    const int64_t cs = slices_.back().v1 * kLanes, kk = k_ * k_;
    b1_.assign(static_cast<size_t>(cs), 0.0f);
    b2_.assign(static_cast<size_t>(cs), 0.0f);
    w2_.assign(static_cast<size_t>(kk * cs), 0.0f);
    for (int64_t o = 0; o < e_; ++o) {
      if (b1) b1_[o] = b1[o];
      if (b2) b2_[o] = b2[o];
      for (int64_t i = 0; i < kk; ++i)
        w2_[(o / kLanes) * kk * kLanes + i * kLanes + o % kLanes] = w2[o * kk + i];
    }
  }

  // One part of one image (x and y at its first pixel; x channels-last or plain).
  void run_part(const Part& p, float* ring, const float* x, bool x_nhwc, float* y) const {
    const Slice& sl = slices_[p.slice];
    const int64_t cs = sl.vectors() * kLanes, wp = padded_width(), row = wp * cs;
    float* out_row = ring + k_ * row;
    float* taps = out_row + wo_ * widest() * kLanes;  // gather_row's, where the expansion gathers
    // The pad pixels of every ring row's vectors (the padding rows read zero_).
    for (int64_t r = 0; r < k_; ++r) {
      for (int64_t v = 0; v < sl.vectors(); ++v) {
        float* blk = ring + r * row + v * wp * kLanes;
        std::fill(blk, blk + pad_ * kLanes, 0.0f);
        std::fill(blk + (pad_ + we_) * kLanes, blk + wp * kLanes, 0.0f);
      }
    }
    const Clamp c1 = clamp_of(act1_), c2 = clamp_of(act2_);
    const bool after1 = !in_registers(act1_), after2 = !in_registers(act2_);
    // The vectors written straight into y: all of them, but for an activation applied after
    // and for a last vector partly padding (past the output's channels), which go through
    // out_row.
    const int64_t tail = std::min(cs, e_ - sl.v0 * kLanes) % kLanes;
    const int64_t straight = after2 ? 0 : sl.vectors() - (tail > 0);
    const float* w2 = w2_.data() + sl.v0 * k_ * k_ * kLanes;
    const float* b2 = b2_.data() + sl.v0 * kLanes;
    y += sl.v0 * kLanes;
    int64_t held[5] = {-1, -1, -1, -1, -1};  // the input row in each ring slot
    for (int64_t oh = p.oh0; oh < p.oh1; ++oh) {
      const float* rows[5];
      for (int64_t kh = 0; kh < k_; ++kh) {
        const int64_t ih = oh * s_ - pad_ + kh;
        if (ih < 0 || ih >= he_) {
          rows[kh] = zero_.data();
          continue;
        }
        const int64_t slot = ih % k_;
        float* r = ring + slot * row;
        if (held[slot] != ih) {
          expand(sl, gathers_ ? gather_row(x, x_nhwc, ih, taps) : x + ih * w_ * c_, r, c1, after1);
          held[slot] = ih;
        }
        rows[kh] = r;
      }
      float* yrow = y + oh * wo_ * e_;
      depthwise_row(rows, k_, s_, wp, wo_, straight, w2, b2, c2, yrow, e_);
      const int64_t rest = sl.vectors() - straight;
      if (rest == 0) continue;
      // The other vectors into out_row ([wo][rest * 16]), then their channels into y.
      const int64_t at = straight * kLanes, width = rest * kLanes;
      const float* rv[5];
      for (int64_t kh = 0; kh < k_; ++kh) rv[kh] = rows[kh] + straight * wp * kLanes;
      depthwise_row(rv, k_, s_, wp, wo_, rest, w2 + straight * k_ * k_ * kLanes,
                    b2 + straight * kLanes, c2, out_row, width);
      if (after2) activation_row(act2_, out_row, wo_ * width);
      const int64_t n = (tail > 0 ? width - kLanes + tail : width);
      for (int64_t o = 0; o < wo_; ++o) {
        float* dst = yrow + o * e_ + at;
        const float* src = out_row + o * width;
        for (int64_t j = 0; j < n; ++j) dst[j] = src[j];
      }
    }
  }

  // The taps of expanded row ih, [kh * kw * C][We] (tap t = (kh * kw1 + kw) * C + c, zero where
  // it falls in the padding), from the input image x, into `taps`; returns taps.
  const float* gather_row(const float* x, bool x_nhwc, int64_t ih, float* taps) const {
    for (int64_t kh = 0; kh < kh1_; ++kh) {
      const int64_t iy = ih * sh1_ - pt1_ + kh;
      for (int64_t kw = 0; kw < kw1_; ++kw) {
        // Pixels [lo, hi) read inside the row: ix = j * sw1 - pl1 + kw in [0, W).
        const int64_t first = pl1_ - kw, last = w_ - 1 + pl1_ - kw;
        const int64_t lo = std::clamp<int64_t>(first <= 0 ? 0 : (first + sw1_ - 1) / sw1_, 0, we_);
        const int64_t hi = std::clamp<int64_t>(last < 0 ? 0 : last / sw1_ + 1, lo, we_);
        for (int64_t ci = 0; ci < c_; ++ci) {
          float* d = taps + ((kh * kw1_ + kw) * c_ + ci) * we_;
          if (iy < 0 || iy >= h_) {
            std::fill(d, d + we_, 0.0f);
            continue;
          }
          std::fill(d, d + lo, 0.0f);
          std::fill(d + hi, d + we_, 0.0f);
          if (hi == lo) continue;
          const int64_t ix = lo * sw1_ - pl1_ + kw;  // pixel lo's
          const int64_t step = x_nhwc ? sw1_ * c_ : sw1_;
          const float* src = x_nhwc ? x + (iy * w_ + ix) * c_ + ci : x + (ci * h_ + iy) * w_ + ix;
          strided_copy(src, step, hi - lo, d + lo);
        }
      }
    }
    return taps;
  }

  // One expanded row's inputs x (We pixels of taps_ values: an input row of C channels for a 1x1
  // expansion, else gather_row's taps) into ring row r, panel by panel of the slice.
  void expand(const Slice& sl, const float* x, float* r, const Clamp& c, bool after) const {
    const int64_t wp = padded_width();
    const float* w1 = sl.w1.data();
    const float* b1 = b1_.data() + sl.v0 * kLanes;
    for (int nv : sl.panels) {
      float* dst = r + pad_ * kLanes;
      expand_row(x, we_, taps_, gathers_ ? we_ : taps_, gathers_, w1, b1, c, dst, wp * kLanes, nv);
      if (after) {
        for (int64_t j = 0; j < nv; ++j) activation_row(act1_, dst + j * wp * kLanes, we_ * kLanes);
      }
      w1 += taps_ * nv * kLanes;
      b1 += nv * kLanes;
      r += nv * wp * kLanes;
    }
  }

  std::string who_;
  int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, e_ = 0, k_ = 0, s_ = 1, pad_ = 0, ho_ = 0, wo_ = 0;
  // The expansion: kernel, strides, top and left pads, output dims, taps per pixel; gathers_
  // unless it is a plain 1x1.
  int64_t kh1_ = 1, kw1_ = 1, sh1_ = 1, sw1_ = 1, pt1_ = 0, pl1_ = 0, he_ = 0, we_ = 0, taps_ = 0;
  bool gathers_ = false;
  ref::Activation act1_, act2_;
  std::vector<Slice> slices_;
  std::vector<Part> parts_;
  std::vector<float> zero_;  // a ring row of zeros: the depthwise window's padding rows
  std::vector<float> b1_;    // [vectors * 16]
  std::vector<float> w2_;    // [vectors][k * k][16]
  std::vector<float> b2_;    // [vectors * 16]
};

std::string expand_depthwise_declines(const NodeInfo& info) {
  if (std::string r = not_static_f32(info, 0); !r.empty()) return r;
  const Dims x = *info.input_shape(0);
  if (x.size() != 4) return input_label(info, 0) + " is not 4-D";
  const Layout l = input_layout(info, 0);
  if (l != Layout::kPlain && l != Layout::kNHWC) {
    return input_label(info, 0) + " arrives in layout " + layout_name(l);
  }
  if (std::string why = ref::expand_depthwise_reason(info.node); !why.empty()) return why;
  if (std::find(x.begin(), x.end(), 0) != x.end()) return input_label(info, 0) + " is empty";
  const Tensor* w1 = info.constant(ref::kExpandWeight);
  const Tensor* w2 = info.constant(ref::kDepthwiseWeight);
  if (!w1 || w1->dtype() != DType::kFloat32 || w1->rank() != 4 || w1->dim(1) != x[1] ||
      w1->dim(2) < 1 || w1->dim(3) < 1) {
    return input_label(info, ref::kExpandWeight) + " is not a float32 constant [E, " +
           std::to_string(x[1]) + ", kh, kw]";
  }
  const int64_t e = w1->dim(0);
  if (e == 0) return "the expansion has no output channels";
  try {
    expansion_geometry(*ref::expand_depthwise_part(info.node, false).node, x, w1->shape());
  } catch (const Error& err) {
    return err.what();  // an empty output
  }
  if (!w2 || w2->dtype() != DType::kFloat32 || w2->rank() != 4 || w2->dim(0) != e ||
      w2->dim(1) != 1) {
    return input_label(info, ref::kDepthwiseWeight) + " is not a float32 constant [" +
           std::to_string(e) + ", 1, k, k]";
  }
  for (size_t at : {ref::kExpandWeight + 1, ref::kDepthwiseWeight + 1}) {
    if (!info.has_input(at)) continue;
    const Tensor* b = info.constant(at);
    if (!b || b->dtype() != DType::kFloat32 || b->numel() != e) {
      return input_label(info, at) + " is not a float32 constant of " + std::to_string(e) +
             " values";
    }
  }
  return ref::fast_depthwise_reason(*ref::expand_depthwise_part(info.node, true).node, w2->shape());
}

}  // namespace

void force_expand_depthwise_lanes(int lanes) {
  NNFUSE_CHECK(lanes == 0 || lanes == 4 || lanes == 8 || lanes == 16,
               "force_expand_depthwise_lanes: ", lanes, " is not 0, 4, 8 or 16");
  forced_lanes.store(lanes, std::memory_order_relaxed);
}

void append_expand_depthwise_kernels(FactoryTable& t) {
  t.emplace_back(
      "ExpandDepthwise",
      KernelFactory{"cpu.expand_depthwise", accepts_unless_declined<expand_depthwise_declines>,
                    [](const NodeInfo& info, size_t k) {
                      return k == 0 && info.input_shape(0) ? Layout::kNHWC : Layout::kPlain;
                    },
                    [](const NodeInfo& info) -> std::unique_ptr<Kernel> {
                      return std::make_unique<ExpandDepthwiseKernel>(info);
                    },
                    nullptr, expand_depthwise_declines});
}

}  // namespace nnfuse::cpu
