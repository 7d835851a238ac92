#include "runtime/npy.h"

#include <cstring>
#include <fstream>
#include <map>
#include <regex>

#include "ir/atomic_file.h"
#include "ir/error.h"
#include "onnx/tensor_proto.h"

namespace nnfuse {

namespace {

const char kMagic[] = "\x93NUMPY";

const std::map<std::string, DType>& descr_types() {
  static const std::map<std::string, DType> m = {
      {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<f2", DType::kFloat16},
      {"|i1", DType::kInt8},    {"|u1", DType::kUInt8},   {"<i2", DType::kInt16},
      {"<u2", DType::kUInt16},  {"<i4", DType::kInt32},   {"<u4", DType::kUInt32},
      {"<i8", DType::kInt64},   {"<u8", DType::kUInt64},  {"|b1", DType::kBool},
  };
  return m;
}

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  fail(ErrorKind::kInvalidInput, path, ": ", what);
}

}  // namespace

Tensor load_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) bad(path, "cannot open the file");
  return read_npy(f, path);
}

Tensor read_npy(std::istream& f, const std::string& path) {
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, kMagic, 6) != 0) bad(path, "not a .npy file (bad magic)");
  uint8_t major = static_cast<uint8_t>(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    uint8_t b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    uint8_t b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    bad(path, "unsupported .npy version " + std::to_string(major));
  }
  if (!f || header_len > (1u << 20)) bad(path, "truncated or corrupt .npy header");
  std::string header(header_len, '\0');
  f.read(header.data(), header_len);
  if (!f) bad(path, "truncated .npy header");

  std::smatch m;
  static const std::regex descr_re(R"('descr'\s*:\s*'([^']*)')");
  static const std::regex order_re(R"('fortran_order'\s*:\s*(True|False))");
  static const std::regex shape_re(R"('shape'\s*:\s*\(([^)]*)\))");
  if (!std::regex_search(header, m, descr_re)) bad(path, "header has no 'descr'");
  std::string descr = m[1];
  if (descr == "=f4" || descr == "<f4") descr = "<f4";
  auto it = descr_types().find(descr);
  if (it == descr_types().end()) bad(path, "unsupported element type '" + descr + "'");
  if (!std::regex_search(header, m, order_re)) bad(path, "header has no 'fortran_order'");
  if (m[1] == "True") bad(path, "Fortran-ordered arrays are not supported");
  if (!std::regex_search(header, m, shape_re)) bad(path, "header has no 'shape'");
  Dims dims;
  std::string shape = m[1];
  static const std::regex num_re(R"(\d+)");
  for (auto i = std::sregex_iterator(shape.begin(), shape.end(), num_re);
       i != std::sregex_iterator(); ++i) {
    try {
      dims.push_back(std::stoll(i->str()));
    } catch (const std::exception&) {
      bad(path, "dimension '" + i->str() + "' is too large");
    }
  }
  try {
    checked_numel(dims, dtype_size(it->second));
  } catch (const Error& e) {
    bad(path, e.what());
  }
  // Check the payload size before allocating, so a lying header cannot ask for terabytes.
  auto pos = f.tellg();
  f.seekg(0, std::ios::end);
  auto end = f.tellg();
  f.seekg(pos);
  size_t want = static_cast<size_t>(checked_numel(dims)) * dtype_size(it->second);
  if (static_cast<size_t>(end - pos) != want) {
    bad(path, "payload has " + std::to_string(end - pos) + " bytes, shape " + dims_str(dims) +
                  " of " + dtype_name(it->second) + " needs " + std::to_string(want));
  }
  Tensor t(it->second, dims);
  f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(want));
  if (!f) bad(path, "short read");
  return t;
}

void save_npy(const std::string& path, const Tensor& t) {
  std::string descr;
  for (auto& [d, dt] : descr_types()) {
    if (dt == t.dtype()) descr = d;
  }
  if (descr.empty()) fail(ErrorKind::kUnsupported, path, ": cannot save ", dtype_name(t.dtype()));
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    shape += std::to_string(t.shape()[i]) +
             (t.shape().size() == 1 ? "," : (i + 1 < t.shape().size() ? ", " : ""));
  }
  shape += ")";
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  write_file_atomically(path, "the output", [&](std::ostream& f) {
    f.write(kMagic, 6);
    char ver[2] = {1, 0};
    f.write(ver, 2);
    uint16_t len = static_cast<uint16_t>(header.size());
    char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
    f.write(lb, 2);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    f.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  });
}

Tensor load_tensor_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorKind::kInvalidInput, "cannot open input file '", path, "'");
  char magic[6] = {};
  f.read(magic, 6);
  if (f.gcount() == 6 && std::memcmp(magic, kMagic, 6) == 0) return load_npy(path);
  return load_tensor_pb(path);
}

}  // namespace nnfuse
