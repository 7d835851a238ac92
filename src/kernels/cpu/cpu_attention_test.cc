// cpu.attention (MultiHeadAttention) against the reference kernel: head counts and sizes,
// sequence lengths across and inside the key/query blocks, every mask kind, causal, packed QKV,
// fully masked rows, and what the kernel declines.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_attention_test {

using testing::fast_accepts;
using testing::FastInput;
using testing::random_tensor;

using Attrs = std::map<std::string, Attribute>;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr char kOp[] = "MultiHeadAttention";
constexpr char kKernel[] = "cpu.attention";

enum class Mask {
  kNone,
  kPadding,     // [B, 1, 1, Sk]: 0, and -10000 on the last keys of some batches
  kPaddingInf,  // the same with -inf
  kPerRow,      // [B, 1, Sq, Sk], random with a few -inf
  kPerHead,     // [1, H, Sq, Sk], random with a few -inf
  kSquare,      // [Sq, Sk] (rank 2)
  kKeyBcast,    // [B, 1, Sq, 1]: one value per row (broadcast over keys)
};

const char* mask_name(Mask m) {
  switch (m) {
    case Mask::kNone:
      return "none";
    case Mask::kPadding:
      return "padding";
    case Mask::kPaddingInf:
      return "padding-inf";
    case Mask::kPerRow:
      return "per-row";
    case Mask::kPerHead:
      return "per-head";
    case Mask::kSquare:
      return "square";
    case Mask::kKeyBcast:
      return "key-bcast";
  }
  return "?";
}

struct Case {
  int64_t batch, heads, head_size, sq, sk;
  Mask mask = Mask::kNone;
  bool causal = false, packed = false;
  int64_t kv_heads = 0;  // 0: heads
  int64_t rotary = 0;    // R of the cos and sin tables; 0: none
  bool interleaved = false;
  int64_t past = -1;  // P of a KV cache (inputs 6 and 7, outputs 1 and 2); -1: none
};

std::string describe(const Case& c) {
  std::ostringstream os;
  os << "B" << c.batch << " H" << c.heads << " D" << c.head_size << " Sq" << c.sq << " Sk" << c.sk
     << " mask " << mask_name(c.mask) << (c.causal ? " causal" : "") << (c.packed ? " packed" : "")
     << " G" << c.kv_heads << " R" << c.rotary << (c.interleaved ? " interleaved" : "") << " P"
     << c.past;
  return os.str();
}

Tensor make_mask(const Case& c, uint32_t seed) {
  const int64_t b = c.batch, h = c.heads, sq = c.sq, sk = c.sk + std::max<int64_t>(c.past, 0);
  switch (c.mask) {
    case Mask::kNone:
      return Tensor();
    case Mask::kPadding:
    case Mask::kPaddingInf: {
      // Batch i hides its last (i + 1) * Sk / (B + 2) keys (key 0 always stays visible).
      const float hide = c.mask == Mask::kPadding ? -1e4f : -kInf;
      Tensor m(DType::kFloat32, {b, 1, 1, sk});
      for (int64_t i = 0; i < b; ++i) {
        const int64_t keep = sk - (i + 1) * sk / (b + 2);
        for (int64_t j = 0; j < sk; ++j) m.data<float>()[i * sk + j] = j < keep ? 0.0f : hide;
      }
      return m;
    }
    case Mask::kKeyBcast:
      return random_tensor({b, 1, sq, 1}, seed, -3, 3);
    default:
      break;
  }
  const Dims shape = c.mask == Mask::kPerRow    ? Dims{b, 1, sq, sk}
                     : c.mask == Mask::kPerHead ? Dims{1, h, sq, sk}
                                                : Dims{sq, sk};
  Tensor m = random_tensor(shape, seed, -3, 3);
  for (int64_t i = 0; i < m.numel(); ++i) {
    if (i % sk != 0 && i % 5 == 2) m.data<float>()[i] = -kInf;
  }
  return m;
}

Attrs attrs_of(const Case& c) {
  Attrs a = {{"num_heads", attr_int(c.heads)}};
  if (c.causal) a["causal"] = attr_int(1);
  if (c.packed) a["qkv_packed"] = attr_int(1);
  if (c.kv_heads) a["kv_num_heads"] = attr_int(c.kv_heads);
  if (c.interleaved) a["rotary_interleaved"] = attr_int(1);
  return a;
}

std::vector<FastInput> inputs_of(const Case& c, uint32_t seed) {
  const int64_t hidden = c.heads * c.head_size;
  const int64_t kv = (c.kv_heads ? c.kv_heads : c.heads) * c.head_size;
  std::vector<FastInput> in;
  if (c.packed) {
    in = {{random_tensor({c.batch, c.sq, hidden + 2 * kv}, seed, -2, 2)}, {Tensor()}, {Tensor()}};
  } else {
    in = {{random_tensor({c.batch, c.sq, hidden}, seed, -2, 2)},
          {random_tensor({c.batch, c.sk, kv}, seed + 1, -2, 2)},
          {random_tensor({c.batch, c.sk, kv}, seed + 2)}};
  }
  if (c.mask != Mask::kNone || c.rotary || c.past >= 0) in.push_back({make_mask(c, seed + 3)});
  if (c.rotary) {
    in.push_back({random_tensor({c.sq, c.rotary}, seed + 4, -1, 1), true});
    in.push_back({random_tensor({c.sq, c.rotary}, seed + 5, -1, 1), true});
  } else if (c.past >= 0) {
    in.insert(in.end(), {{Tensor()}, {Tensor()}});
  }
  if (c.past >= 0) {
    const Dims d = {c.batch, c.kv_heads ? c.kv_heads : c.heads, c.past, c.head_size};
    in.push_back({random_tensor(d, seed + 6, -2, 2)});
    in.push_back({random_tensor(d, seed + 7)});
  }
  return in;
}

// Like expect_close, with NaN expected exactly where the reference has NaN.
void expect_close_nan(const Tensor& got, const Tensor& want, float atol = 1e-5f,
                      float rtol = 1e-4f) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  int failures = 0;
  for (int64_t i = 0; i < got.numel() && failures < 10; ++i) {
    const double g = got.double_at(i), w = want.double_at(i);
    const bool ok = std::isnan(w) ? std::isnan(g) : std::abs(g - w) <= atol + rtol * std::abs(w);
    if (!ok) {
      ADD_FAILURE() << "at element " << i << ": got " << g << ", want " << w;
      ++failures;
    }
  }
}

// Runs the case through cpu.attention (which must accept it) and the reference kernel.
void check(const Case& c, uint32_t seed) {
  SCOPED_TRACE(describe(c));
  const std::vector<FastInput> in = inputs_of(c, seed);
  const Attrs a = attrs_of(c);
  const size_t outs = c.past >= 0 ? 3 : 1;
  const testing::FastRun fast = testing::run_kernel(kOp, in, a, outs, kKernel);
  std::vector<Tensor> plain;
  for (const FastInput& i : in) plain.push_back(i.value);
  const std::vector<Tensor> want = testing::run_ref(kOp, plain, a, outs);
  ASSERT_EQ(fast.outputs.size(), want.size());
  for (size_t k = 0; k < outs; ++k) expect_close_nan(fast.outputs[k], want[k]);
}

TEST(CpuAttention, SmallShapesEveryMask) {
  const Mask masks[] = {Mask::kNone,    Mask::kPadding, Mask::kPaddingInf, Mask::kPerRow,
                        Mask::kPerHead, Mask::kSquare,  Mask::kKeyBcast};
  const std::pair<int64_t, int64_t> lengths[] = {{1, 1}, {7, 7}, {5, 13}, {13, 6}};
  uint32_t seed = 1;
  for (int64_t heads : {1, 2}) {
    for (int64_t d : {1, 8, 24}) {
      for (auto [sq, sk] : lengths) {
        for (Mask m : masks) {
          for (bool causal : {false, true}) {
            check({heads == 1 ? 3 : 1, heads, d, sq, sk, m, causal}, seed += 4);
            if (sq == sk) check({2, heads, d, sq, sk, m, causal, true}, seed += 4);
          }
        }
      }
    }
  }
}

// Grouped- and multi-query attention, rotary embeddings (rotate-half and interleaved, full and
// partial), packed and not, with a causal mask.
TEST(CpuAttention, GroupedQueryAndRotary) {
  uint32_t seed = 5000;
  for (bool packed : {false, true}) {
    for (int64_t kv : {1, 2, 4}) {
      for (int64_t r : {0, 8, 24}) {
        for (bool il : {false, true}) {
          if (il && r == 0) continue;
          check({2, 4, 24, 19, 19, Mask::kNone, true, packed, kv, r, il}, seed += 6);
        }
      }
    }
  }
  // LLaMA's prefill shapes: H 8, G 2, D 64, S 128.
  check({1, 8, 64, 128, 128, Mask::kNone, true, false, 2, 64}, seed += 6);
  check({1, 8, 64, 128, 128, Mask::kNone, true, true, 2, 64}, seed += 6);
  // Several query and key blocks (each task rotates its Q block and every K block it reads),
  // the last ones partial, in a batch of 2.
  check({2, 4, 24, 130, 130, Mask::kPadding, true, false, 2, 8, true}, seed += 6);
  check({2, 4, 32, 130, 130, Mask::kNone, false, true, 1, 32}, seed += 6);
  // Prompts of 4 query blocks and more: K rotated once before the tasks run.
  check({2, 4, 24, 200, 200, Mask::kNone, true, false, 2, 8, true}, seed += 6);
  check({1, 4, 32, 257, 257, Mask::kPadding, true, true, 1, 32}, seed += 6);
  check({1, 8, 64, 512, 512, Mask::kNone, true, false, 2, 64}, seed += 6);
}

// A decode step with a KV cache: one new query row (and key and value) after P cached ones,
// and a few new rows (a chunk of the prompt), with grouped K/V and rotary embeddings; the
// present outputs are the past and the new rows.
TEST(CpuAttention, KvCache) {
  uint32_t seed = 6000;
  for (int64_t past : {0, 1, 70, 256}) {
    for (bool packed : {false, true}) {
      check({1, 8, 64, 1, 1, Mask::kNone, false, packed, 2, 64, false, past}, seed += 8);
      check({2, 4, 24, 5, 5, Mask::kNone, true, packed, 4, 8, false, past}, seed += 8);
    }
  }
  check({1, 4, 16, 1, 1, Mask::kPerRow, false, false, 1, 0, false, 9}, seed += 8);
}

TEST(CpuAttention, BertBase) {
  // B = 1, H = 12, S = 128, D = 64, the shapes the fusion targets.
  uint32_t seed = 1000;
  for (Mask m : {Mask::kNone, Mask::kPadding, Mask::kPaddingInf}) {
    check({1, 12, 64, 128, 128, m}, seed += 4);
  }
  check({1, 12, 64, 128, 128, Mask::kNone, true}, seed += 4);
  check({1, 12, 64, 128, 128, Mask::kPadding, false, true}, seed += 4);
}

TEST(CpuAttention, MediumShapes) {
  uint32_t seed = 2000;
  check({3, 2, 80, 128, 128, Mask::kPerRow}, seed += 4);
  check({3, 2, 80, 100, 128, Mask::kPerHead, true}, seed += 4);
  check({3, 12, 8, 65, 65, Mask::kPadding, true, true}, seed += 4);
  check({1, 2, 24, 128, 70, Mask::kPaddingInf, true}, seed += 4);  // causal, Sq > Sk
  check({2, 1, 64, 7, 129, Mask::kKeyBcast}, seed += 4);
}

TEST(CpuAttention, LongSequences) {
  uint32_t seed = 3000;
  check({1, 2, 64, 513, 513, Mask::kPadding, true}, seed += 4);
  check({1, 1, 24, 513, 513, Mask::kNone, false, true}, seed += 4);
  check({1, 2, 8, 7, 513, Mask::kPerRow}, seed += 4);
  check({1, 2, 8, 513, 7, Mask::kSquare}, seed += 4);
  check({1, 1, 8, 513, 200, Mask::kNone, true}, seed += 4);
}

TEST(CpuAttention, NarrowerIsaPaths) {
  // The kernel runs the widest ISA the CPU has; NNFUSE_ATTENTION_ISA caps it, for the others.
  for (const char* isa : {"avx2", "sse2"}) {
    SCOPED_TRACE(isa);
    const testing::ScopedEnv cap("NNFUSE_ATTENTION_ISA", isa);
    uint32_t seed = 5000;
    for (int64_t d : {1, 8, 24, 64}) {
      for (Mask m : {Mask::kNone, Mask::kPadding, Mask::kPerRow, Mask::kKeyBcast}) {
        check({2, 2, d, 70, 70, m}, seed += 4);
        check({1, 2, d, 13, 70, m, true}, seed += 4);
      }
    }
    check({1, 2, 80, 129, 129, Mask::kPaddingInf, true, true}, seed += 4);
    check({1, 3, 8, 70, 5, Mask::kNone, true}, seed += 4);  // fully masked rows
    check({2, 4, 24, 70, 70, Mask::kNone, true, false, 2, 8}, seed += 4);
    check({1, 4, 24, 70, 70, Mask::kNone, false, true, 4, 24, true}, seed += 4);
  }
}

TEST(CpuAttention, FullyMaskedRowsAreNaN) {
  const Tensor q = random_tensor({2, 70, 16}, 1), k = random_tensor({2, 3, 16}, 2);
  const Tensor v = random_tensor({2, 3, 16}, 3);
  const Attrs causal = {{"num_heads", attr_int(2)}, {"causal", attr_int(1)}};
  // Causal with Sq > Sk: queries 0..66 of 70 see no key.
  const Tensor y = testing::run_kernel(kOp, {{q}, {k}, {v}}, causal, 1, kKernel).outputs[0];
  const Tensor want = testing::run_ref1(kOp, {q, k, v}, causal);
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t row = i / 16 % 70;
    ASSERT_EQ(std::isnan(y.data<float>()[i]), row < 67) << i;
  }
  expect_close_nan(y, want);
  // Padding -inf over every key of batch 1, and one whole row -inf in a per-row mask.
  Tensor pad(DType::kFloat32, {2, 1, 1, 3});
  for (int64_t j = 0; j < 6; ++j) pad.data<float>()[j] = j < 3 ? 0.0f : -kInf;
  Tensor rows = random_tensor({2, 1, 70, 3}, 4);
  for (int64_t j = 0; j < 3; ++j) rows.data<float>()[(70 + 65) * 3 + j] = -kInf;
  const Attrs plain = {{"num_heads", attr_int(2)}};
  for (const Tensor& m : {pad, rows}) {
    const Tensor got = testing::run_kernel(kOp, {{q}, {k}, {v}, {m}}, plain, 1, kKernel).outputs[0];
    const Tensor ref = testing::run_ref1(kOp, {q, k, v, m}, plain);
    int64_t nans = 0;
    for (int64_t i = 0; i < got.numel(); ++i) nans += std::isnan(got.data<float>()[i]);
    EXPECT_EQ(nans, m.dim(2) == 1 ? 70 * 16 : 16);
    expect_close_nan(got, ref);
  }
}

TEST(CpuAttention, ScaleAndEmptyShapes) {
  Attrs a = {{"num_heads", attr_int(2)}, {"scale", attr_float(0.7f)}};
  const std::vector<FastInput> in = {{random_tensor({2, 9, 12}, 1)},
                                     {random_tensor({2, 11, 12}, 2)},
                                     {random_tensor({2, 11, 12}, 3)}};
  testing::expect_matches_ref(kKernel, kOp, in, a);
  // No keys: zeros, as the reference. No queries: an empty output.
  const Tensor kv(DType::kFloat32, {2, 0, 12});
  const Tensor z =
      testing::run_kernel(kOp, {{random_tensor({2, 3, 12}, 4)}, {kv}, {kv}}, a, 1, kKernel)
          .outputs[0];
  ASSERT_EQ(z.shape(), (Dims{2, 3, 12}));
  for (int64_t i = 0; i < z.numel(); ++i) EXPECT_EQ(z.data<float>()[i], 0.0f);
  const Tensor e =
      testing::run_kernel(kOp, {{Tensor(DType::kFloat32, {2, 0, 12})}, {in[1]}, {in[2]}}, a, 1,
                          kKernel)
          .outputs[0];
  EXPECT_EQ(e.shape(), (Dims{2, 0, 12}));
}

TEST(CpuAttention, Declines) {
  const Attrs a = {{"num_heads", attr_int(2)}};
  const Tensor q = random_tensor({1, 4, 8}, 1), kv = random_tensor({1, 5, 8}, 2);
  EXPECT_TRUE(fast_accepts(kKernel, kOp, {{q}, {kv}, {kv}}, a));
  // Types, layouts, attributes and shapes the reference kernel handles or reports.
  const Tensor h(DType::kFloat64, {1, 4, 8});
  EXPECT_FALSE(fast_accepts(kKernel, kOp, {{h}, {h}, {h}}, a));
  EXPECT_FALSE(fast_accepts(kKernel, kOp, {{q}, {kv}, {kv}}, {}));
  EXPECT_FALSE(fast_accepts(kKernel, kOp, {{q}, {kv}, {kv}}, {{"num_heads", attr_int(3)}}));
  EXPECT_FALSE(fast_accepts(kKernel, kOp, {{q}, {kv}, {random_tensor({1, 4, 8}, 3)}}, a));
  EXPECT_FALSE(fast_accepts(kKernel, kOp, {{q}, {kv}, {kv}, {random_tensor({1, 1, 4, 4}, 3)}}, a));
  EXPECT_FALSE(
      fast_accepts(kKernel, kOp, {{q}, {kv}, {kv}, {random_tensor({1, 1, 1, 4, 5}, 3)}}, a));
  EXPECT_FALSE(fast_accepts(kKernel, kOp, {{q}}, a));
  EXPECT_FALSE(fast_accepts(kKernel, kOp, {{q, false, Layout::kNHWC}, {kv}, {kv}}, a));
  EXPECT_FALSE(fast_accepts(kKernel, kOp, {{q}, {kv}, {kv}},
                            {{"num_heads", attr_int(2)}, {"causal", attr_int(3)}}));
  // Unknown shapes at plan time.
  const KernelFactory* f = testing::find_factory(kOp, kKernel);
  ASSERT_NE(f, nullptr);
  testing::OneNode one(kOp, {{q}, {kv}, {kv}}, a);
  one.node->input(1)->set_shape(Shape::unknown());
  EXPECT_FALSE(f->accepts(one.info()));
  // A bad node still gets its error from the reference kernel through the table.
  EXPECT_THROW(testing::run_kernel(kOp, {{q}, {kv}, {kv}}, {{"num_heads", attr_int(3)}}), Error);
}

TEST(CpuAttention, RunTimeShapeMismatchIsAnError) {
  const Attrs a = {{"num_heads", attr_int(2)}};
  const Tensor q = random_tensor({1, 4, 8}, 1), kv = random_tensor({1, 5, 8}, 2);
  testing::OneNode one(kOp, {{q}, {kv}, {kv}}, a);
  const KernelFactory* f = testing::find_factory(kOp, kKernel);
  ASSERT_NE(f, nullptr);
  auto kernel = f->create(one.info());
  const Tensor other = random_tensor({1, 6, 8}, 3);
  KernelIO io;
  io.inputs = {&q, &other, &other};
  io.outputs.resize(1);
  try {
    kernel->run(io);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'node'"), std::string::npos) << e.what();
  }
}

}  // namespace cpu_attention_test
}  // namespace nnfuse
