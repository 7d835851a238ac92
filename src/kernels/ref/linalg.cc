// Reference kernels for linear algebra: Einsum and Det.
//
// Einsum(inputs...) with `equation`: each input's axes are labelled by letters, "..." standing
// for its leading dims not labelled (those broadcast against each other, right-aligned, as in
// numpy); the output's labels are given after "->", or are, without one, "..." and then the
// letters that appear once, in alphabetical order. A letter repeated in one term takes a
// diagonal; letters missing from the output are summed over. Computed directly: every
// combination of the output's and the summed labels' indices, the inputs' elements
// multiplied and accumulated in double.
//
// Det(X): the determinant of each [M, M] matrix in X's last two dims, by LU decomposition with
// partial pivoting in double.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "kernels/ref/util.h"

namespace nnfuse {
namespace {

// A term's labels: letters as themselves, the ellipsis's dims as labels from 256 upwards
// (256 + k for the k-th of the widest ellipsis's dims, right-aligned).
using Labels = std::vector<int>;

struct Equation {
  std::vector<Labels> inputs;
  Labels output;
  std::map<int, int64_t> size;  // every label's extent
};

Equation parse_equation(const KernelContext& ctx) {
  const std::string what = ctx.node.describe();
  std::string eq;
  for (char ch : ctx.node.attr_string("equation", "")) {
    if (ch != ' ') eq += ch;
  }
  NNFUSE_CHECK(!eq.empty(), what, ": the equation is empty");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char ch : lhs) {
    if (ch == ',') {
      terms.emplace_back();
    } else {
      terms.back() += ch;
    }
  }
  NNFUSE_CHECK(terms.size() == ctx.num_inputs(), what, ": the equation has ", terms.size(),
               " input terms for ", ctx.num_inputs(), " inputs");
  // The widest ellipsis.
  auto letters_of = [&](const std::string& t) {
    std::string l = t;
    if (size_t e = l.find("..."); e != std::string::npos) l.erase(e, 3);
    for (char ch : l) {
      NNFUSE_CHECK(std::isalpha(static_cast<unsigned char>(ch)), what, ": bad label '",
                   std::string(1, ch), "' in the equation '", eq, "'");
    }
    return l;
  };
  int64_t ell = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].find("...") == std::string::npos) continue;
    ell = std::max<int64_t>(ell,
                            ctx.in(i).rank() - static_cast<int64_t>(letters_of(terms[i]).size()));
  }
  Equation e;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Tensor& x = ctx.in(i);
    const std::string& t = terms[i];
    const int64_t named = static_cast<int64_t>(letters_of(t).size());
    const int64_t r = t.find("...") == std::string::npos ? 0 : x.rank() - named;
    NNFUSE_CHECK(r >= 0 && named + r == x.rank(), what, ": input ", i, " of shape ",
                 dims_str(x.shape()), " does not match the term '", t, "'");
    Labels ls;
    for (size_t p = 0; p < t.size();) {
      if (t.compare(p, 3, "...") == 0) {
        for (int64_t k = 0; k < r; ++k) ls.push_back(256 + static_cast<int>(ell - r + k));
        p += 3;
      } else {
        ls.push_back(static_cast<unsigned char>(t[p]));
        ++p;
      }
    }
    for (size_t d = 0; d < ls.size(); ++d) {
      const int l = ls[d];
      const int64_t n = x.dim(static_cast<int64_t>(d));
      auto [it, added] = e.size.emplace(l, n);
      if (!added && it->second != n) {
        NNFUSE_CHECK(l >= 256 && (it->second == 1 || n == 1), what, ": label extent ", n,
                     " of input ", i, " differs from ", it->second);
        it->second = std::max(it->second, n);
      }
      if (l < 256) ++count[l];
    }
    e.inputs.push_back(ls);
  }
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    letters_of(rhs);
    for (size_t p = 0; p < rhs.size();) {
      if (rhs.compare(p, 3, "...") == 0) {
        for (int64_t k = 0; k < ell; ++k) e.output.push_back(256 + static_cast<int>(k));
        p += 3;
      } else {
        const int l = static_cast<unsigned char>(rhs[p++]);
        NNFUSE_CHECK(e.size.count(l), what, ": output label '", std::string(1, char(l)),
                     "' is in no input");
        e.output.push_back(l);
      }
    }
  } else {
    for (int64_t k = 0; k < ell; ++k) e.output.push_back(256 + static_cast<int>(k));
    for (auto [l, c] : count) {
      if (c == 1) e.output.push_back(l);
    }
  }
  return e;
}

void run_einsum(KernelContext& ctx) {
  const Equation e = parse_equation(ctx);
  Labels all = e.output;
  for (const auto& [l, n] : e.size) {
    if (std::find(all.begin(), all.end(), l) == all.end()) all.push_back(l);
  }
  std::map<int, size_t> slot;
  for (size_t i = 0; i < all.size(); ++i) slot[all[i]] = i;
  Dims out_shape, extent;
  for (int l : e.output) out_shape.push_back(e.size.at(l));
  for (int l : all) extent.push_back(e.size.at(l));
  // Each input's stride per label slot (0 where it lacks the label or broadcasts it).
  std::vector<Dims> strides;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    const Dims cs = contiguous_strides(ctx.in(i).shape());
    Dims s(all.size(), 0);
    for (size_t d = 0; d < e.inputs[i].size(); ++d) {
      if (ctx.in(i).dim(static_cast<int64_t>(d)) != 1) s[slot[e.inputs[i][d]]] += cs[d];
    }
    strides.push_back(s);
  }
  const DType dt = ctx.in(0).dtype();
  Tensor y(dt, out_shape);
  int64_t out_n = 1, sum_n = 1;
  for (size_t k = 0; k < all.size(); ++k) (k < e.output.size() ? out_n : sum_n) *= extent[k];
  std::vector<double> acc(static_cast<size_t>(out_n), 0.0);
  Dims idx(all.size(), 0);
  for (int64_t o = 0; o < out_n; ++o) {
    for (int64_t s = 0; s < sum_n; ++s) {
      // Decode (o, s) into the label indices.
      int64_t a = o, b = s;
      for (size_t k = all.size(); k-- > 0;) {
        int64_t& r = k < e.output.size() ? a : b;
        idx[k] = r % extent[k];
        r /= extent[k];
      }
      double p = 1;
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        int64_t off = 0;
        for (size_t k = 0; k < all.size(); ++k) off += idx[k] * strides[i][k];
        p *= ctx.in(i).double_at(off);
      }
      acc[static_cast<size_t>(o)] += p;
    }
  }
  ref::dispatch(dt, ctx.node.describe(), [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    for (int64_t o = 0; o < out_n; ++o) py[o] = static_cast<T>(acc[static_cast<size_t>(o)]);
  });
  ctx.outputs[0] = y;
}

std::string einsum_support(const Node& n, int64_t) {
  if (n.attr_string("equation", "").empty()) return "the equation attribute is missing";
  for (size_t i = 1; i < n.num_inputs(); ++i) {
    if (n.input(i) && n.input(0) && n.input(i)->dtype() != n.input(0)->dtype()) {
      return "inputs of different types";
    }
  }
  return ref::require_input_types(n, {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                      DType::kInt64, DType::kUInt32, DType::kUInt64});
}

void run_det(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::string what = ctx.node.describe();
  NNFUSE_CHECK(x.rank() >= 2 && x.dim(x.rank() - 1) == x.dim(x.rank() - 2), what,
               ": X must be [..., M, M], got ", dims_str(x.shape()));
  const int64_t m = x.dim(x.rank() - 1);
  const Dims batch(x.shape().begin(), x.shape().end() - 2);
  Tensor y(x.dtype(), batch);
  const int64_t count = m == 0 ? y.numel() : x.numel() / (m * m);
  ref::dispatch_float(x.dtype(), what, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    std::vector<double> a(static_cast<size_t>(m * m));
    for (int64_t b = 0; b < count; ++b) {
      for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = px[b * m * m + i];
      auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * m + c)]; };
      double det = 1;
      for (int64_t c = 0; c < m && det != 0; ++c) {
        int64_t piv = c;
        for (int64_t r = c + 1; r < m; ++r) {
          if (std::abs(at(r, c)) > std::abs(at(piv, c))) piv = r;
        }
        if (at(piv, c) == 0) {
          det = 0;
          break;
        }
        if (piv != c) {
          for (int64_t k = 0; k < m; ++k) std::swap(at(piv, k), at(c, k));
          det = -det;
        }
        det *= at(c, c);
        for (int64_t r = c + 1; r < m; ++r) {
          const double f = at(r, c) / at(c, c);
          for (int64_t k = c; k < m; ++k) at(r, k) -= f * at(c, k);
        }
      }
      py[b] = static_cast<T>(det);
    }
  });
  ctx.outputs[0] = y;
}

std::string det_support(const Node& n, int64_t) {
  return ref::require_input_types(n, {DType::kFloat32, DType::kFloat64});
}

}  // namespace

void append_linalg_kernels(std::vector<RefKernelEntry>& t) {
  t.push_back({"Einsum", run_einsum, einsum_support});
  t.push_back({"Det", run_det, det_support});
}

}  // namespace nnfuse
