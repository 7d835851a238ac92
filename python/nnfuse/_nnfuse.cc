// The Python module's native part (pybind11): nnfuse/nnfuse.h's Model and Session, with
// numpy arrays in and out. nnfuse/__init__.py is the API users see.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "nnfuse/nnfuse.h"

namespace py = pybind11;

namespace {

// The element types numpy and nnfuse share; nnfuse's dtype_name is numpy's spelling.
constexpr nnfuse::DType kNumpyTypes[] = {
    nnfuse::DType::kFloat32, nnfuse::DType::kFloat64, nnfuse::DType::kInt64, nnfuse::DType::kInt32,
    nnfuse::DType::kInt8,    nnfuse::DType::kUInt8,   nnfuse::DType::kBool};

nnfuse::DType dtype_of(const py::dtype& d) {
  const std::string name = py::cast<std::string>(d.attr("name"));
  for (nnfuse::DType t : kNumpyTypes) {
    if (nnfuse::dtype_name(t) == name) return t;
  }
  throw nnfuse::Error(nnfuse::ErrorKind::kInvalidInput,
                      "numpy dtype " + name + " is not supported");
}

py::dtype numpy_dtype(nnfuse::DType t) {
  for (nnfuse::DType n : kNumpyTypes) {
    if (n == t) return py::dtype(nnfuse::dtype_name(t));
  }
  throw nnfuse::Error(nnfuse::ErrorKind::kRuntime,
                      "an output of type " + nnfuse::dtype_name(t) + " has no numpy type");
}

// An output tensor as a numpy array over its storage (no copy); the array keeps it alive.
py::array to_numpy(const nnfuse::Tensor& t) {
  auto* keep = new nnfuse::Tensor(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<nnfuse::Tensor*>(p); });
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  return py::array(numpy_dtype(t.dtype()), shape, const_cast<void*>(keep->raw()), owner);
}

py::dict info_list(const std::vector<nnfuse::TensorInfo>& infos) {
  py::dict d;
  for (const nnfuse::TensorInfo& i : infos) {
    d[py::str(i.name)] = py::make_tuple(nnfuse::dtype_name(i.dtype), py::tuple(py::cast(i.shape)));
  }
  return d;
}

std::map<std::string, nnfuse::Tensor> borrow_inputs(const py::dict& feeds,
                                                    std::vector<py::array>& keep) {
  std::map<std::string, nnfuse::Tensor> inputs;
  for (auto [key, value] : feeds) {
    const std::string name = py::cast<std::string>(key);
    // C-contiguous arrays are read in place; anything else is made contiguous first.
    py::array a = py::array::ensure(value, py::array::c_style);
    if (!a) {
      throw nnfuse::Error(nnfuse::ErrorKind::kInvalidInput, "input '" + name + "' is not an array");
    }
    keep.push_back(a);
    std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
    inputs[name] = nnfuse::Tensor::borrow(dtype_of(a.dtype()), dims, a.mutable_data());
  }
  return inputs;
}

// A Python callable held by a registered pattern: released under the GIL from whichever thread
// drops the last reference.
struct PyCallable {
  py::object fn;
  explicit PyCallable(py::object f) : fn(std::move(f)) {}
  ~PyCallable() {
    if (!Py_IsInitialized()) {
      fn.release();  // the interpreter is gone: nothing to release it to
      return;
    }
    py::gil_scoped_acquire gil;
    fn = py::object();
  }
};

py::object attribute_to_py(const nnfuse::AttributeValue& v) {
  return std::visit([](const auto& x) -> py::object { return py::cast(x); }, v);
}

py::dict context_dict(const nnfuse::PatternContext& ctx) {
  py::dict d;
  d["pattern"] = ctx.pattern();
  d["node"] = ctx.node();
  py::list ops, attrs;
  for (size_t i = 0; i < ctx.num_nodes(); ++i) {
    ops.append(ctx.op(i));
    py::dict a;
    for (const auto& [name, v] : ctx.attrs(i)) a[py::str(name)] = attribute_to_py(v);
    attrs.append(a);
  }
  d["ops"] = ops;
  d["attrs"] = attrs;
  py::list inputs;  // per input: (matched node, its input index)
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    inputs.append(py::make_tuple(ctx.source(k).first, ctx.source(k).second));
  }
  d["inputs"] = inputs;
  d["params"] = py::cast(ctx.params());
  return d;
}

// Calls a pattern's Python function with the GIL held; its exception becomes a C++ one that
// carries Python's message (the pass or the kernel adds the pattern and node).
template <typename F>
auto with_python(F&& f) {
  py::gil_scoped_acquire gil;
  try {
    return f();
  } catch (py::error_already_set& e) {
    throw std::runtime_error(e.what());
  } catch (py::cast_error& e) {
    throw std::runtime_error(std::string("the result is not what nnfuse expects: ") + e.what());
  }
}

py::list as_list(const py::object& r) {
  if (py::isinstance<py::list>(r) || py::isinstance<py::tuple>(r)) return py::list(r);
  py::list l;
  l.append(r);
  return l;
}

void register_python_pattern(const std::string& name, const std::vector<std::string>& ops,
                             py::object infer_shape, py::object compute,
                             const std::map<std::string, double>& params) {
  auto infer = std::make_shared<PyCallable>(std::move(infer_shape));
  auto comp = std::make_shared<PyCallable>(std::move(compute));
  nnfuse::FusionPattern p;
  p.name = name;
  p.ops = ops;
  p.params = params;
  p.infer_shape = [infer](const std::vector<nnfuse::TensorInfo>& in,
                          const nnfuse::PatternContext& ctx) {
    return with_python([&] {
      py::list shapes;
      for (const nnfuse::TensorInfo& t : in) {
        py::list dims;
        for (int64_t d : t.shape) dims.append(d < 0 ? py::object(py::none()) : py::int_(d));
        shapes.append(py::tuple(dims));
      }
      py::list result = as_list(infer->fn(shapes, context_dict(ctx)));
      // One shape alone may be returned as a tuple of ints.
      if (!result.empty() && !py::isinstance<py::tuple>(result[0]) &&
          !py::isinstance<py::list>(result[0])) {
        py::list one;
        one.append(py::tuple(result));
        result = one;
      }
      std::vector<nnfuse::TensorInfo> out;
      for (py::handle s : result) {
        nnfuse::TensorInfo t;
        for (py::handle d : s) t.shape.push_back(d.is_none() ? -1 : py::cast<int64_t>(d));
        out.push_back(std::move(t));
      }
      return out;
    });
  };
  p.compute = [comp](const std::vector<nnfuse::Tensor>& in, const nnfuse::PatternContext& ctx) {
    return with_python([&] {
      py::list arrays;
      for (const nnfuse::Tensor& t : in) {
        std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
        py::array a(numpy_dtype(t.dtype()), shape);
        std::memcpy(a.mutable_data(), t.raw(), t.nbytes());
        arrays.append(a);
      }
      std::vector<nnfuse::Tensor> out;
      for (py::handle r : as_list(comp->fn(arrays, context_dict(ctx)))) {
        py::array a = py::array::ensure(r, py::array::c_style);
        if (!a) throw std::runtime_error("compute returned something that is not an array");
        std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
        nnfuse::Tensor t(dtype_of(a.dtype()), dims);
        std::memcpy(t.raw(), a.data(), t.nbytes());
        out.push_back(std::move(t));
      }
      return out;
    });
  };
  nnfuse::register_fusion_pattern(std::move(p));
}

}  // namespace

PYBIND11_MODULE(_nnfuse, m) {
  m.doc() = "nnfuse: an operator-fusion compiler and runtime for ONNX models";

  static py::exception<nnfuse::Error> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const nnfuse::Error& e) {
      static const char* kinds[] = {"invalid_model",    "unsupported", "invalid_input",
                                    "invalid_argument", "runtime",     "internal"};
      // An instance carrying the message, with .kind the ErrorKind's name.
      py::object instance = py::reinterpret_borrow<py::object>(error.ptr())(e.what());
      instance.attr("kind") = kinds[static_cast<int>(e.kind())];
      PyErr_SetObject(error.ptr(), instance.ptr());
    }
  });

  py::class_<nnfuse::Model>(m, "Model")
      .def(
          "save",
          [](const nnfuse::Model& model, const std::string& path, const std::string& format) {
            if (format != "nnfuse" && format != "ort") {
              throw nnfuse::Error(nnfuse::ErrorKind::kInvalidArgument,
                                  "format '" + format + "': expected \"nnfuse\" or \"ort\"");
            }
            py::gil_scoped_release release;
            model.save(path, format == "ort" ? nnfuse::SaveFormat::kOnnxRuntime
                                             : nnfuse::SaveFormat::kNnfuse);
          },
          py::arg("path"), py::arg("format") = "nnfuse")
      .def("report_json", &nnfuse::Model::report_json)
      .def("inputs", [](const nnfuse::Model& model) { return info_list(model.inputs()); })
      .def("outputs", [](const nnfuse::Model& model) { return info_list(model.outputs()); })
      .def_property_readonly("num_nodes", &nnfuse::Model::num_nodes)
      .def_property_readonly("num_imported_nodes", &nnfuse::Model::num_imported_nodes)
      .def(
          "verify",
          [](const nnfuse::Model& model, double rtol, uint32_t seed) {
            nnfuse::VerifyResult r;
            {
              py::gil_scoped_release release;
              r = model.verify(rtol, seed);
            }
            py::list outputs;
            for (const nnfuse::OutputCheck& c : r.outputs) {
              py::dict o;
              o["name"] = c.name;
              o["max_abs_error"] = c.max_abs_error;
              o["max_magnitude"] = c.max_magnitude;
              o["relative_error"] = c.relative_error;
              o["pass"] = c.pass;
              if (!c.problem.empty()) o["problem"] = c.problem;
              outputs.append(o);
            }
            py::dict d;
            d["pass"] = r.pass;
            d["rtol"] = r.rtol;
            d["outputs"] = outputs;
            return d;
          },
          py::arg("rtol") = 1e-4, py::arg("seed") = 0);

  m.def(
      "compile",
      [](const std::string& path, const std::string& switch_file,
         const std::map<std::string, std::vector<int64_t>>& shapes, bool fusion) {
        nnfuse::CompileOptions o;
        o.switch_file = switch_file;
        o.input_shapes = shapes;
        o.fusion = fusion;
        py::gil_scoped_release release;
        return nnfuse::compile(path, o);
      },
      py::arg("path"), py::arg("fusion_switch_file") = "", py::arg("shapes") = py::dict(),
      py::arg("fusion") = true);

  py::class_<nnfuse::Session>(m, "Session")
      .def(py::init([](const nnfuse::Model& model, int threads) {
             nnfuse::SessionOptions o;
             o.threads = threads;
             py::gil_scoped_release release;
             return new nnfuse::Session(model, o);
           }),
           py::arg("model"), py::arg("threads") = 0)
      .def(
          "run",
          [](const nnfuse::Session& s, const py::dict& feeds) {
            std::vector<py::array> keep;  // the arrays the borrowed inputs point into
            const std::map<std::string, nnfuse::Tensor> inputs = borrow_inputs(feeds, keep);
            std::map<std::string, nnfuse::Tensor> outputs;
            {
              py::gil_scoped_release release;
              outputs = s.run(inputs);
            }
            py::dict d;
            for (const auto& [name, t] : outputs) d[py::str(name)] = to_numpy(t);
            return d;
          },
          py::arg("inputs"))
      .def(
          "profile",
          [](const nnfuse::Session& s, const py::dict& feeds, int runs, const std::string& trace) {
            std::vector<py::array> keep;
            const std::map<std::string, nnfuse::Tensor> inputs = borrow_inputs(feeds, keep);
            nnfuse::Profile p;
            {
              py::gil_scoped_release release;
              p = s.profile(inputs, runs, trace);
            }
            py::list kernels;
            for (const nnfuse::KernelTime& k : p.kernels) {
              py::dict d;
              d["name"] = k.name;
              d["op"] = k.op;
              d["kernel"] = k.kernel;
              d["reference_fallback"] = k.reference_fallback;
              d["ms"] = k.ms;
              kernels.append(d);
            }
            py::dict d;
            d["runs"] = p.runs;
            d["run_ms"] = p.run_ms;
            d["kernels"] = kernels;
            return d;
          },
          py::arg("inputs"), py::arg("runs") = 10, py::arg("trace_path") = "");

  m.def("register_fusion_pattern", &register_python_pattern, py::arg("name"), py::arg("ops"),
        py::arg("infer_shape"), py::arg("compute"), py::arg("params") = py::dict());
  m.def("unregister_fusion_pattern", &nnfuse::unregister_fusion_pattern, py::arg("name"));
  m.def("registered_fusion_patterns", &nnfuse::registered_fusion_patterns);
}
