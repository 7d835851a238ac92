// The Python module's native part (pybind11): nnfuse/nnfuse.h's Model and Session, with
// numpy arrays in and out. nnfuse/__init__.py is the API users see.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
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
      .def("save", &nnfuse::Model::save, py::arg("path"))
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
          py::arg("inputs"));
}
