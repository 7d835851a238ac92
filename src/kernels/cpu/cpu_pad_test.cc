// cpu.pad against the reference kernel: pure data movement, so every output must be bit-equal.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "kernels/cpu/cpu_test_support.h"

namespace nnfuse {
namespace cpu_pad_test {

using testing::fast_accepts;
using testing::FastInput;
using testing::random_int64;
using testing::random_tensor;

constexpr const char* kKernel = "cpu.pad";
const char* const kModes[] = {"constant", "reflect", "edge", "wrap"};

Tensor i64s(const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

// A tensor of `t` with deterministic pseudo-random bytes (any element type).
Tensor random_bytes(DType t, const Dims& shape, uint32_t seed) {
  Tensor x(t, shape);
  auto* p = static_cast<unsigned char*>(x.raw());
  uint32_t s = seed * 2654435761u + 99u;
  for (size_t i = 0; i < x.nbytes(); ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = static_cast<unsigned char>(s >> 24);
  }
  return x;
}

Tensor data_for(DType t, const Dims& shape, uint32_t seed) {
  if (t == DType::kFloat32) return random_tensor(shape, seed, -3, 3);
  if (t == DType::kInt64) return random_int64(shape, seed, -1000, 1000);
  return random_bytes(t, shape, seed);
}

// The constant value of `t` (a scalar).
Tensor value_for(DType t) {
  if (t == DType::kFloat32) return Tensor::scalar<float>(1.5f);
  if (t == DType::kInt64) return Tensor::scalar<int64_t>(-7);
  Tensor v(t, {});
  std::memset(v.raw(), 0x5a, v.nbytes());
  return v;
}

// Why cpu.pad declines the node, "" when it accepts it (the two must agree).
std::string reason(const std::vector<FastInput>& in, const std::map<std::string, Attribute>& at,
                   int64_t opset = 19) {
  const KernelFactory* f = testing::find_factory("Pad", kKernel);
  if (!f || !f->declines) return "(no factory)";
  testing::OneNode one("Pad", in, at);
  const NodeInfo info = one.info(opset);
  EXPECT_EQ(f->accepts(info), f->declines(info).empty());
  return f->declines(info);
}

void expect_bit_equal(const Tensor& got, const Tensor& ref) {
  ASSERT_EQ(got.dtype(), ref.dtype());
  ASSERT_EQ(got.shape(), ref.shape());
  const size_t es = dtype_size(ref.dtype());
  const auto* g = static_cast<const unsigned char*>(got.raw());
  const auto* r = static_cast<const unsigned char*>(ref.raw());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    if (std::memcmp(g + static_cast<size_t>(i) * es, r + static_cast<size_t>(i) * es, es) != 0) {
      if (bad++ == 0) first = i;
    }
  }
  EXPECT_EQ(bad, 0) << "first at element " << first << " of " << ref.numel();
}

// Runs cpu.pad (which must accept the node) and the reference; bit-equal outputs.
void expect_matches(const std::vector<FastInput>& in, const std::map<std::string, Attribute>& at,
                    int64_t opset = 19) {
  ASSERT_EQ(reason(in, at, opset), "");
  testing::FastRun fast = testing::run_kernel("Pad", in, at, 1, kKernel, opset);
  std::vector<Tensor> plain;
  for (const FastInput& i : in) plain.push_back(i.value);
  Tensor ref = testing::run_ref("Pad", plain, at, 1, opset)[0];
  expect_bit_equal(fast.outputs[0], ref);
}

std::map<std::string, Attribute> mode_attr(const std::string& mode) {
  return {{"mode", attr_string(mode)}};
}

// Per-axis (begin, end) pad recipes for an axis of length d.
std::pair<int64_t, int64_t> recipe(int which, int64_t d) {
  switch (which % 7) {
    case 0:
      return {0, 0};
    case 1:
      return {1, 2};
    case 2:
      return {d > 1 ? -1 : 0, d > 2 ? -1 : 0};  // crop
    case 3:
      return {2, d > 1 ? -1 : 0};  // mixed
    case 4:
      return {d + 2, 2 * d + 1};  // past the length: several reflections / wraps
    case 5:
      return {d > 1 ? -1 : 0, 3};
    default:
      return {0, 1};
  }
}

// Full pads [begins..., ends...] for a shape: recipe (pattern + axis) per axis; with
// `only_outer`, the last axis is left unpadded (exercising units of whole rows).
std::vector<int64_t> pads_for(const Dims& shape, int pattern, bool only_outer = false) {
  const size_t r = shape.size();
  std::vector<int64_t> p(2 * r, 0);
  for (size_t a = 0; a < r; ++a) {
    if (only_outer && a + 1 == r) continue;
    auto [b, e] = recipe(pattern + static_cast<int>(a) * 3, shape[a]);
    p[a] = b;
    p[r + a] = e;
  }
  return p;
}

std::string pads_name(const Dims& shape, const std::vector<int64_t>& pads, const char* mode,
                      DType t, Layout l) {
  std::ostringstream os;
  os << dims_str(shape) << " pads " << dims_str(pads) << " " << mode << " " << dtype_name(t) << " "
     << layout_name(l);
  return os.str();
}

const std::vector<Dims> kShapes = {
    {7},          {1},          {3, 5},          {2, 3, 4},      {2, 3, 4, 5},
    {1, 4, 3, 1}, {3, 2, 5, 4}, {1, 2, 3, 4, 3}, {2, 1, 3, 2, 4}};

TEST(CpuPad, EveryModeRankAndPadsMatchesExactly) {
  uint32_t seed = 1;
  for (DType t : {DType::kFloat32, DType::kInt64}) {
    for (const Dims& s : kShapes) {
      for (int pattern = 0; pattern < 7; ++pattern) {
        for (bool only_outer : {false, true}) {
          if (only_outer && s.size() < 2) continue;
          const std::vector<int64_t> pads = pads_for(s, pattern, only_outer);
          for (const char* mode : kModes) {
            for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
              if (l == Layout::kNHWC && s.size() != 4) continue;
              SCOPED_TRACE(pads_name(s, pads, mode, t, l));
              const Tensor x = data_for(t, s, seed++);
              // Constant pads with a constant value, and pads and value known only at run time.
              expect_matches({{x, false, l}, {i64s(pads), true}, {value_for(t), true}},
                             mode_attr(mode));
              expect_matches({{x, false, l}, {i64s(pads), false}, {value_for(t), false}},
                             mode_attr(mode));
            }
          }
        }
      }
    }
  }
}

TEST(CpuPad, ElementSizesOneTwoAndEight) {
  uint32_t seed = 100;
  for (DType t : {DType::kUInt8, DType::kInt8, DType::kBool, DType::kFloat16, DType::kInt16,
                  DType::kFloat64, DType::kInt32}) {
    for (const Dims& s : {Dims{5}, Dims{2, 3, 4}, Dims{2, 3, 4, 5}}) {
      for (int pattern : {1, 3, 4}) {
        const std::vector<int64_t> pads = pads_for(s, pattern);
        for (const char* mode : kModes) {
          for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
            if (l == Layout::kNHWC && s.size() != 4) continue;
            SCOPED_TRACE(pads_name(s, pads, mode, t, l));
            Tensor x = data_for(t, s, seed++);
            if (t == DType::kBool) {  // bool bytes are 0 or 1
              auto* p = static_cast<unsigned char*>(x.raw());
              for (size_t i = 0; i < x.nbytes(); ++i) p[i] &= 1;
            }
            Tensor v = value_for(t);
            if (t == DType::kBool) *static_cast<unsigned char*>(v.raw()) = 1;
            expect_matches({{x, false, l}, {i64s(pads), true}, {v, true}}, mode_attr(mode));
          }
        }
      }
    }
  }
}

TEST(CpuPad, ConstantValueOmittedOrEmptyIsZero) {
  const Tensor x = random_tensor({2, 3, 4}, 7, 1, 2);
  const std::vector<int64_t> pads = {0, 1, 2, 1, 0, 1};
  expect_matches({{x}, {i64s(pads), true}}, {});
  expect_matches({{x}, {i64s(pads), true}, {Tensor(DType::kFloat32, {0}), true}}, {});
  expect_matches({{x}, {i64s(pads), true}, {Tensor(DType::kFloat32, {0}), false}}, {});
  // An omitted constant_value before axes.
  expect_matches({{x}, {i64s({1, 2, 0, 1}), true}, {}, {i64s({-1, 0}), true}}, {});
  // int32 pads.
  expect_matches({{x},
                  {Tensor::from_vector<int32_t>({6}, {1, 0, 2, 0, 3, -1}), true},
                  {Tensor::scalar<float>(-2.0f), true}},
                 {});
}

TEST(CpuPad, Opsets11And13WithoutAxes) {
  uint32_t seed = 200;
  for (int64_t opset : {11, 13}) {
    for (const Dims& s : {Dims{3, 5}, Dims{2, 3, 4, 5}, Dims{1, 2, 3, 4, 3}}) {
      for (int pattern = 0; pattern < 7; ++pattern) {
        const std::vector<int64_t> pads = pads_for(s, pattern);
        for (const char* mode : {"constant", "reflect", "edge"}) {
          SCOPED_TRACE(std::to_string(opset) + " " +
                       pads_name(s, pads, mode, DType::kFloat32, Layout::kPlain));
          const Tensor x = random_tensor(s, seed++);
          expect_matches({{x}, {i64s(pads), true}, {Tensor::scalar<float>(0.25f), true}},
                         mode_attr(mode), opset);
          expect_matches({{x}, {i64s(pads), true}}, mode_attr(mode), opset);
        }
      }
    }
  }
}

TEST(CpuPad, AxesInput) {
  uint32_t seed = 300;
  struct Case {
    Dims shape;
    std::vector<int64_t> axes, pads;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4, 5}, {2, 3}, {1, 2, 2, 1}},
      {{2, 3, 4, 5}, {-1, -2}, {3, -1, 0, 2}},
      {{2, 3, 4, 5}, {1}, {2, -1}},
      {{2, 3, 4, 5}, {0, 3}, {1, 0, 0, 6}},
      {{3, 5}, {}, {}},
      {{4, 3, 2}, {-3}, {-2, 5}},
      {{1, 2, 3, 4, 3}, {4, 2, 0}, {1, 2, 0, 3, -1, 1}},
      {{2, 3, 4, 5}, {2, 2}, {1, 1, 2, 1}},  // repeated: as the reference treats it
  };
  for (const Case& c : cases) {
    for (const char* mode : kModes) {
      for (int64_t opset : {18, 19}) {
        if (opset == 18 && std::string(mode) == "wrap") continue;
        for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
          if (l == Layout::kNHWC && c.shape.size() != 4) continue;
          SCOPED_TRACE(pads_name(c.shape, c.pads, mode, DType::kFloat32, l) + " axes " +
                       dims_str(c.axes) + " opset " + std::to_string(opset));
          const Tensor x = random_tensor(c.shape, seed++);
          const Tensor v = Tensor::scalar<float>(-4.0f);
          expect_matches({{x, false, l}, {i64s(c.pads), true}, {v, true}, {i64s(c.axes), true}},
                         mode_attr(mode), opset);
          expect_matches({{x, false, l}, {i64s(c.pads), false}, {v, true}, {i64s(c.axes), false}},
                         mode_attr(mode), opset);
        }
      }
    }
  }
}

TEST(CpuPad, AttributeFormBeforeOpset11) {
  uint32_t seed = 400;
  for (int64_t opset : {2, 10}) {
    for (DType t : {DType::kFloat32, DType::kInt64, DType::kUInt8, DType::kBool}) {
      for (const Dims& s : {Dims{3, 5}, Dims{2, 3, 4, 5}}) {
        for (int pattern : {1, 3, 5}) {
          const std::vector<int64_t> pads = pads_for(s, pattern);
          for (const char* mode : {"constant", "reflect", "edge"}) {
            for (float value : {0.0f, 2.75f, -300.5f}) {
              SCOPED_TRACE(pads_name(s, pads, mode, t, Layout::kPlain) + " value " +
                           std::to_string(value) + " opset " + std::to_string(opset));
              Tensor x = data_for(t, s, seed++);
              if (t == DType::kBool) {
                auto* p = static_cast<unsigned char*>(x.raw());
                for (size_t i = 0; i < x.nbytes(); ++i) p[i] &= 1;
              }
              auto at = mode_attr(mode);
              at["pads"] = attr_ints(pads);
              at["value"] = attr_float(value);
              expect_matches({{x}}, at, opset);
            }
          }
        }
      }
    }
  }
}

TEST(CpuPad, EmptyInputsAndOutputs) {
  // Constant padding of an empty axis; cropping to empty; an empty input that stays empty.
  const Tensor e = Tensor(DType::kFloat32, {2, 0, 3});
  expect_matches({{e}, {i64s({0, 2, 0, 0, 1, 1}), true}, {Tensor::scalar<float>(3), true}}, {});
  const Tensor x = random_tensor({2, 3, 4}, 9);
  expect_matches({{x}, {i64s({0, -2, 0, 0, -1, 0}), true}}, mode_attr("reflect"));
  expect_matches({{e}, {i64s({1, 0, 0, 1, 0, 2}), true}}, mode_attr("edge"));
  // A scalar (rank 0) with no pads.
  expect_matches({{Tensor::scalar<float>(5)}, {i64s({}), true}}, {});
}

TEST(CpuPad, ThreadedLargeTensors) {
  uint32_t seed = 500;
  for (const Dims& s : {Dims{2, 16, 64, 64}, Dims{4, 64, 65}, Dims{1, 300000}}) {
    for (const char* mode : kModes) {
      for (Layout l : {Layout::kPlain, Layout::kNHWC}) {
        if (l == Layout::kNHWC && s.size() != 4) continue;
        const std::vector<int64_t> pads = pads_for(s, 1);
        SCOPED_TRACE(pads_name(s, pads, mode, DType::kFloat32, l));
        expect_matches({{random_tensor(s, seed++), false, l}, {i64s(pads), true}}, mode_attr(mode));
      }
    }
  }
  // Only N and C padded in NHWC: whole pixels; nothing padded: a plain copy.
  const Tensor x = random_tensor({2, 8, 32, 32}, seed++);
  expect_matches({{x, false, Layout::kNHWC}, {i64s({1, 2, 0, 0, 0, 1, 0, 0}), true}}, {});
  expect_matches({{x, false, Layout::kNHWC}, {i64s(std::vector<int64_t>(8, 0)), true}}, {});
  expect_matches({{x}, {i64s(std::vector<int64_t>(8, 0)), true}}, mode_attr("reflect"));
}

TEST(CpuPad, ChannelsLastStaysChannelsLastAndIsFirstInTable) {
  const KernelFactory* f = testing::find_factory("Pad", kKernel);
  ASSERT_NE(f, nullptr);
  const std::vector<FastInput> in = {{random_tensor({1, 3, 4, 5}, 1), false, Layout::kNHWC},
                                     {i64s({0, 0, 1, 1, 0, 0, 1, 1}), true}};
  testing::OneNode one("Pad", in, {});
  ASSERT_TRUE(f->accepts(one.info(19)));
  EXPECT_EQ(f->output_layout(one.info(19), 0), Layout::kNHWC);
  testing::OneNode plain("Pad", {{in[0].value}, in[1]}, {});
  EXPECT_EQ(f->output_layout(plain.info(19), 0), Layout::kPlain);
  EXPECT_EQ(testing::run_kernel("Pad", in, {}, 1, "", 19).kernel, kKernel);
  EXPECT_EQ(testing::run_kernel("Pad", {{in[0].value}, in[1]}, {}, 1, "", 19).kernel, kKernel);
}

TEST(CpuPad, InputShapeOtherThanPlannedIsPlannedAtRunTime) {
  // Planned for [2, 3, 4], run on [3, 2, 6]: the movement is planned again for the new shape.
  const KernelFactory* f = testing::find_factory("Pad", kKernel);
  ASSERT_NE(f, nullptr);
  const Tensor pads = i64s({1, 0, 2, 0, 1, -1});
  for (const char* mode : kModes) {
    SCOPED_TRACE(mode);
    testing::OneNode one("Pad", {{random_tensor({2, 3, 4}, 1)}, {pads, true}}, mode_attr(mode));
    auto kernel = f->create(one.info(19));
    const Tensor x = random_tensor({3, 2, 6}, 2);
    KernelIO io;
    io.inputs = {&x, &pads};
    io.outputs.resize(1);
    kernel->run(io);
    expect_bit_equal(io.outputs[0], testing::run_ref("Pad", {x, pads}, mode_attr(mode), 1, 19)[0]);
  }
}

TEST(CpuPad, DeclinesWithReasons) {
  const Tensor x = random_tensor({1, 2, 4, 4}, 1);
  const Tensor pads = i64s({0, 0, 1, 1, 0, 0, 1, 1});
  EXPECT_EQ(reason({{x}, {pads, true}}, {}), "");

  std::string r = reason({{x}, {pads, true}}, mode_attr("symmetric"));
  EXPECT_NE(r.find("mode 'symmetric'"), std::string::npos) << r;
  r = reason({{x}, {Tensor::from_vector<float>({8}, std::vector<float>(8, 0)), true}}, {});
  EXPECT_NE(r.find("not int64 or int32"), std::string::npos) << r;
  r = reason({{x}, {pads, true}, {Tensor::scalar<int64_t>(1), true}}, {});
  EXPECT_NE(r.find("constant_value"), std::string::npos) << r;
  r = reason({{x}, {pads, true}, {}, {Tensor::from_vector<float>({1}, {1}), true}}, {});
  EXPECT_NE(r.find("axes"), std::string::npos) << r;
  r = reason({{x}, {i64s({0, 0, -3, 0, 0, 0, -2, 0}), true}}, {});
  EXPECT_NE(r.find("below zero"), std::string::npos) << r;
  r = reason({{x}, {i64s({0, 0, 1, 1}), true}}, {});
  EXPECT_NE(r.find("4 pads for 4 axes"), std::string::npos) << r;
  r = reason({{Tensor(DType::kFloat32, {2, 0, 3})}, {i64s({0, 1, 0, 0, 0, 0}), true}},
             mode_attr("reflect"));
  EXPECT_NE(r.find("empty axis"), std::string::npos) << r;
  r = reason({{x}, {pads, true}, {}, {i64s({4}), true}}, {});
  EXPECT_NE(r.find("out of range"), std::string::npos) << r;
  r = reason({{x}}, {});
  EXPECT_NE(r.find("pads (input 1) is missing"), std::string::npos) << r;
  r = reason({{x}}, {}, 10);
  EXPECT_NE(r.find("attribute 'pads'"), std::string::npos) << r;
  // Complex128 (16 bytes) is left to the reference kernel, which moves it.
  const std::vector<FastInput> wide = {{random_bytes(DType::kComplex128, {2, 3}, 1)},
                                       {i64s({1, 0, 0, 1}), true}};
  r = reason(wide, {});
  EXPECT_NE(r.find("1, 2, 4 or 8 bytes"), std::string::npos) << r;
  EXPECT_EQ(testing::run_kernel("Pad", wide, {}, 1, "", 19).kernel, "ref");
  // Before opset 11 the value converts to numeric and bool types only.
  r = reason({{random_bytes(DType::kFloat16, {2, 3}, 1)}},
             {{"pads", attr_ints({0, 1, 0, 1})}, {"value", attr_float(1)}}, 10);
  EXPECT_NE(r.find("before opset 11"), std::string::npos) << r;

  // An output shape declared otherwise than the pads make it.
  testing::OneNode one("Pad", {{x}, {pads, true}}, {});
  one.node->output(0)->set_shape(Shape::of({1, 2, 5, 5}));
  const KernelFactory* f = testing::find_factory("Pad", kKernel);
  r = f->declines(one.info(19));
  EXPECT_NE(r.find("static shape"), std::string::npos) << r;

  // Pads known only at run time that crop too much fail as the reference's would.
  EXPECT_THROW(
      testing::run_kernel("Pad", {{x}, {i64s({0, 0, -5, 0, 0, 0, 0, 0}), false}}, {}, 1, kKernel),
      Error);
  EXPECT_THROW(testing::run_kernel("Pad", {{x}, {i64s({0, 0, 1}), false}}, {}, 1, kKernel), Error);
  EXPECT_FALSE(fast_accepts(kKernel, "Pad", {{x}, {i64s({0, 0, 1}), true}}, {}, 19));
}

}  // namespace cpu_pad_test
}  // namespace nnfuse
