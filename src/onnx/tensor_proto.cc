#include "onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "ir/error.h"

namespace nnfuse {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad_tensor(const std::string& label, const std::string& what) {
  fail(ErrorKind::kInvalidModel, label, ": ", what);
}

// Copies `count` values from a repeated proto field into `dst`, converting each to T.
template <typename T, typename Field>
void copy_field(const Field& f, void* dst, int64_t count) {
  T* out = static_cast<T*>(dst);
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<T>(f.Get(static_cast<int>(i)));
}

std::string read_external(const onnx::TensorProto& p, const std::string& base_dir,
                          const std::string& label, size_t want_bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      if (kv.key() == "offset") offset = std::stoll(kv.value());
      if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      bad_tensor(label,
                 "external data field '" + kv.key() + "' is not a number: '" + kv.value() + "'");
    }
  }
  if (location.empty()) bad_tensor(label, "external data has no location");
  if (base_dir.empty()) bad_tensor(label, "external data is not allowed here (no model folder)");
  fs::path loc(location);
  if (loc.is_absolute()) bad_tensor(label, "external data location '" + location + "' is absolute");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(fs::absolute(base_dir), ec);
  fs::path full = fs::weakly_canonical(base / loc, ec);
  auto rel = full.lexically_relative(base);
  if (ec || rel.empty() || *rel.begin() == "..") {
    bad_tensor(label, "external data location '" + location + "' is outside the model's folder");
  }
  std::ifstream f(full, std::ios::binary);
  if (!f) bad_tensor(label, "cannot open external data file '" + full.string() + "'");
  f.seekg(0, std::ios::end);
  int64_t file_size = static_cast<int64_t>(f.tellg());
  if (offset < 0 || offset > file_size) {
    bad_tensor(label, "external data offset " + std::to_string(offset) + " is outside '" +
                          location + "' (" + std::to_string(file_size) + " bytes)");
  }
  if (length < 0) length = file_size - offset;
  if (length != static_cast<int64_t>(want_bytes) || offset + length > file_size) {
    bad_tensor(label, "external data in '" + location + "' has " + std::to_string(length) +
                          " bytes at offset " + std::to_string(offset) + ", expected " +
                          std::to_string(want_bytes) + " (file has " + std::to_string(file_size) +
                          ")");
  }
  std::string buf(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(buf.data(), length);
  if (!f) bad_tensor(label, "short read from external data file '" + location + "'");
  return buf;
}

}  // namespace

Tensor take_tensor_from_proto(onnx::TensorProto& p, const std::string& base_dir,
                              const std::string& label) {
  if (p.has_raw_data() && p.has_data_type() && p.data_location() != onnx::TensorProto::EXTERNAL &&
      !p.has_segment()) {
    const DType dt = dtype_from_onnx(p.data_type());
    const size_t es = dtype_size(dt);
    if (dt != DType::kUndefined && dt != DType::kString && es != 0) {
      Dims dims(p.dims().begin(), p.dims().end());
      const size_t bytes = static_cast<size_t>(checked_numel(dims, es)) * es;
      // Adopted where it is large enough to matter and aligned as Tensor's own storage is.
      const std::string& raw = p.raw_data();
      if (raw.size() == bytes && bytes >= (size_t{1} << 16) &&
          reinterpret_cast<uintptr_t>(raw.data()) % __STDCPP_DEFAULT_NEW_ALIGNMENT__ == 0) {
        std::string* owned = p.release_raw_data();
        std::shared_ptr<std::byte[]> buf(reinterpret_cast<std::byte*>(owned->data()),
                                         [owned](std::byte*) { delete owned; });
        return Tensor::over(std::move(buf), 0, dt, std::move(dims));
      }
    }
  }
  return tensor_from_proto(p, base_dir, label);
}

Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& base_dir,
                         const std::string& label) {
  if (!p.has_data_type()) bad_tensor(label, "tensor has no data type");
  DType dt = dtype_from_onnx(p.data_type());
  if (dt == DType::kUndefined) bad_tensor(label, "tensor has an undefined data type");
  if (dt == DType::kString) {
    fail(ErrorKind::kUnsupported, label, ": string tensors are not supported");
  }
  if (p.has_segment())
    fail(ErrorKind::kUnsupported, label, ": segmented tensors are not supported");
  Dims dims(p.dims().begin(), p.dims().end());
  size_t es = dtype_size(dt);
  int64_t n = checked_numel(dims, es);  // throws naming the overflowing shape
  size_t bytes = static_cast<size_t>(n) * es;

  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string buf = read_external(p, base_dir, label, bytes);
    Tensor t = Tensor::uninitialized(dt, dims);
    std::memcpy(t.raw(), buf.data(), bytes);
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes) {
      bad_tensor(label, "raw_data has " + std::to_string(p.raw_data().size()) + " bytes, shape " +
                            dims_str(dims) + " of " + dtype_name(dt) + " needs " +
                            std::to_string(bytes));
    }
    Tensor t = Tensor::uninitialized(dt, dims);
    if (bytes) std::memcpy(t.raw(), p.raw_data().data(), bytes);
    return t;
  }
  // The typed field's length is checked before anything is allocated: a shape that lies about
  // its data must not ask for memory.
  auto from = [&]<typename T>(const auto& field, T*) {
    if (field.size() != n) {
      bad_tensor(label, "tensor has " + std::to_string(field.size()) + " values, shape " +
                            dims_str(dims) + " needs " + std::to_string(n));
    }
    Tensor t(dt, dims);
    copy_field<T>(field, t.raw(), n);
    return t;
  };
  switch (dt) {
    case DType::kFloat32:
      return from(p.float_data(), static_cast<float*>(nullptr));
    case DType::kFloat64:
      return from(p.double_data(), static_cast<double*>(nullptr));
    case DType::kInt64:
      return from(p.int64_data(), static_cast<int64_t*>(nullptr));
    case DType::kUInt32:
      return from(p.uint64_data(), static_cast<uint32_t*>(nullptr));
    case DType::kUInt64:
      return from(p.uint64_data(), static_cast<uint64_t*>(nullptr));
    case DType::kInt32:
      return from(p.int32_data(), static_cast<int32_t*>(nullptr));
    case DType::kInt16:
      return from(p.int32_data(), static_cast<int16_t*>(nullptr));
    case DType::kInt8:
      return from(p.int32_data(), static_cast<int8_t*>(nullptr));
    // float16 and bfloat16 are stored as their bit patterns in int32_data.
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return from(p.int32_data(), static_cast<uint16_t*>(nullptr));
    case DType::kUInt8:
      return from(p.int32_data(), static_cast<uint8_t*>(nullptr));
    case DType::kBool:
      return from(p.int32_data(), static_cast<bool*>(nullptr));  // nonzero: true
    default:
      fail(ErrorKind::kUnsupported, label, ": tensors of type ", dtype_name(dt),
           " are not supported");
  }
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->Clear();
  p->set_name(name);
  p->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  p->set_raw_data(t.raw(), t.nbytes());
}

Tensor load_tensor_pb(const std::string& path, std::string* name) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorKind::kInvalidInput, "cannot open tensor file '", path, "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_tensor_pb(bytes, path, name);
}

Tensor parse_tensor_pb(const std::string& bytes, const std::string& path, std::string* name) {
  onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) {
    fail(ErrorKind::kInvalidInput, path, ": not a valid ONNX TensorProto file");
  }
  if (name) *name = p.name();
  try {
    return tensor_from_proto(p, "", path);
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidInput, e.what());
  }
}

}  // namespace nnfuse
