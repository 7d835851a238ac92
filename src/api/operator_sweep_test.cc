// Every operator ONNX defines, at every version nnfuse imports (older ones through the opset
// converter), as a one-node model with inputs of rank 0, 1 and 3 (or no shape, no type, the
// first input of another rank than the rest, or the rest of no shape) and with attributes out of
// range (integers -35 and 35, lists [-35], [35], [0] and seven zeros, strings "bogus", floats NaN
// and -1e30): compiling and planning it either works or throws nnfuse::Error. A crash here is a
// crash any model with that node would cause, so the family of "attribute out of range" and "input
// of an unexpected rank" models is covered as a whole, including the checks ONNX's own inference
// leaves out.
//
// To hunt: NNFUSE_SWEEP_FORK=1 compiles each model in a child process and lists every crash;
// with NNFUSE_SWEEP_RUN=1 too, each model that compiles also runs fused and unfused on
// generated inputs (Model::verify) and must agree. NNFUSE_SWEEP_ONLY=TEXT keeps the models whose
// label contains TEXT; NNFUSE_SWEEP_VERBOSE=1 names each model on stderr, and why it was refused.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "api/compile.h"
#include "ir/error.h"
#include "nnfuse/nnfuse.h"
#include "runtime/plan.h"

namespace nnfuse {
namespace operator_sweep_test {

using onnx::AttributeProto;

// The element type for a formal parameter: float where allowed, else the first plain tensor type.
std::optional<int> elem_type_for(const onnx::OpSchema::FormalParameter& p) {
  static const std::vector<std::pair<std::string, int>> kTypes = {
      {"tensor(float)", onnx::TensorProto::FLOAT},  {"tensor(int64)", onnx::TensorProto::INT64},
      {"tensor(int32)", onnx::TensorProto::INT32},  {"tensor(bool)", onnx::TensorProto::BOOL},
      {"tensor(uint8)", onnx::TensorProto::UINT8},  {"tensor(int8)", onnx::TensorProto::INT8},
      {"tensor(double)", onnx::TensorProto::DOUBLE}};
  for (const auto& [name, type] : kTypes) {
    for (const std::string* t : p.GetTypes()) {
      if (*t == name) return type;
    }
  }
  return std::nullopt;
}

// A default for an attribute the schema requires; false where the sweep cannot make one.
bool fill_required(AttributeProto* a, AttributeProto::AttributeType type) {
  a->set_type(type);
  switch (type) {
    case AttributeProto::INT:
      a->set_i(1);
      return true;
    case AttributeProto::INTS:
      a->add_ints(1);
      return true;
    case AttributeProto::FLOAT:
      a->set_f(1.0f);
      return true;
    case AttributeProto::FLOATS:
      a->add_floats(1.0f);
      return true;
    case AttributeProto::STRING:
      a->set_s(std::string("x"));
      return true;
    case AttributeProto::STRINGS:
      a->add_strings(std::string("x"));
      return true;
    case AttributeProto::TENSOR:
      a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      a->mutable_t()->add_float_data(1.0f);
      return true;
    default:
      return false;  // graphs, sparse tensors, type protos
  }
}

struct Variant {
  std::string what;
  int rank = 3;      // of input 0 (and the others unless other_rank says); -1 no shape, -2 no type
  std::string attr;  // the attribute set out of range, or "" for the required ones only
  AttributeProto value;
  bool all_inputs = false;  // the optional inputs too (outputs are always all there)
  int other_rank = -2;      // of the inputs after the first (-1 no shape), -2 for the same
};

std::vector<Variant> variants_of(const onnx::OpSchema& s) {
  bool has_optional = false;
  for (const auto& p : s.inputs()) has_optional |= p.GetOption() == onnx::OpSchema::Optional;
  std::vector<Variant> v;
  for (bool all : {false, true}) {
    if (all && !has_optional) break;
    const std::string with = all ? ", optional inputs" : "";
    for (int rank : {-2, -1, 0, 1, 3}) {
      const std::string what = rank == -2 ? "no type" : "rank " + std::to_string(rank);
      v.push_back({what + with, rank, "", {}, all});
    }
    // Input 0 of another rank than the rest (a 3-d image with a 4-d conv weight), or the rest
    // of no shape (MaxUnpool's indices).
    if (s.inputs().size() > 1) {
      for (auto [first, rest] :
           {std::pair{3, 4}, std::pair{4, 3}, std::pair{1, 4}, std::pair{4, 1}, std::pair{3, -1}}) {
        Variant x{"ranks " + std::to_string(first) + "," +
                      (rest < 0 ? std::string("no shape") : std::to_string(rest)) + with,
                  first,
                  "",
                  {},
                  all};
        x.other_rank = rest;
        v.push_back(x);
      }
    }
    for (const auto& [name, attr] : s.attributes()) {
      if (attr.type == AttributeProto::INT) {
        for (int64_t value : {int64_t{-35}, int64_t{35}}) {
          Variant x{name + "=" + std::to_string(value) + with, 3, name, {}, all};
          x.value.set_type(AttributeProto::INT);
          x.value.set_i(value);
          v.push_back(x);
        }
      } else if (attr.type == AttributeProto::STRING) {
        Variant x{name + "=bogus" + with, 3, name, {}, all};
        x.value.set_type(AttributeProto::STRING);
        x.value.set_s(std::string("bogus"));
        v.push_back(x);
      } else if (attr.type == AttributeProto::FLOAT) {
        for (float value : {std::numeric_limits<float>::quiet_NaN(), -1e30f}) {
          Variant x{name + "=" + std::to_string(value) + with, 3, name, {}, all};
          x.value.set_type(AttributeProto::FLOAT);
          x.value.set_f(value);
          v.push_back(x);
        }
      } else if (attr.type == AttributeProto::INTS) {
        for (const std::vector<int64_t>& values :
             {std::vector<int64_t>{-35}, std::vector<int64_t>{35}, std::vector<int64_t>{0},
              std::vector<int64_t>(7, 0)}) {
          Variant x{
              name + "=[" + std::to_string(values[0]) + (values.size() > 1 ? ",...]" : "]") + with,
              3,
              name,
              {},
              all};
          x.value.set_type(AttributeProto::INTS);
          for (int64_t value : values) x.value.add_ints(value);
          v.push_back(x);
        }
      }
    }
  }
  return v;
}

// The one-node model, or nothing where the schema needs what the sweep cannot make.
std::optional<onnx::ModelProto> model_of(const onnx::OpSchema& s, const Variant& var) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain(std::string());
  opset->set_version(s.since_version());
  auto* g = m.mutable_graph();
  g->set_name(std::string("sweep"));
  auto* n = g->add_node();
  n->set_op_type(s.Name());
  n->set_name(std::string("node"));
  int index = 0;
  for (const auto& p : s.inputs()) {
    if (p.GetOption() == onnx::OpSchema::Optional && !var.all_inputs) break;
    const auto type = elem_type_for(p);
    if (!type) return std::nullopt;
    const int count = p.GetOption() == onnx::OpSchema::Variadic ? 2 : 1;
    for (int k = 0; k < count; ++k) {
      const std::string name = "in" + std::to_string(index++);
      n->add_input(name);
      auto* in = g->add_input();
      in->set_name(name);
      if (var.rank == -2) continue;
      auto* tt = in->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(*type);
      const int rank = index == 1 || var.other_rank == -2 ? var.rank : var.other_rank;
      if (rank >= 0) {
        auto* shape = tt->mutable_shape();
        for (int d = 0; d < rank; ++d) shape->add_dim()->set_dim_value(2 + d);
      }
    }
  }
  index = 0;
  for (const auto& p : s.outputs()) {
    const auto type = elem_type_for(p);
    if (!type) return std::nullopt;
    const std::string name = "out" + std::to_string(index++);
    n->add_output(name);
    auto* out = g->add_output();
    out->set_name(name);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(*type);
  }
  if (n->output_size() == 0) return std::nullopt;
  for (const auto& [name, attr] : s.attributes()) {
    if (name == var.attr) {
      *n->add_attribute() = var.value;
      n->mutable_attribute(n->attribute_size() - 1)->set_name(name);
    } else if (attr.required) {
      auto* a = n->add_attribute();
      a->set_name(name);
      if (!fill_required(a, attr.type)) return std::nullopt;
    }
  }
  return m;
}

TEST(OperatorSweep, EveryOperatorWithBadRanksAndAttributesCompilesOrIsRefused) {
  // No generated kernels are built: a region that would need one takes its fallback.
  const char* old_cxx = std::getenv("NNFUSE_CXX");
  const std::string saved = old_cxx ? old_cxx : "";
  setenv("NNFUSE_CXX", "/nonexistent/nnfuse-sweep-no-compiler", 1);
  setenv("NNFUSE_PROGRESS", "0", 1);
  const bool verbose = std::getenv("NNFUSE_SWEEP_VERBOSE") != nullptr;
  const char* only = std::getenv("NNFUSE_SWEEP_ONLY");
  // NNFUSE_SWEEP_FORK: each model in a child process, so one crash does not hide the next.
  const bool fork_each = std::getenv("NNFUSE_SWEEP_FORK") != nullptr;
  // NNFUSE_SWEEP_RUN (with NNFUSE_SWEEP_FORK): each model that compiles also runs, fused and
  // unfused, on generated inputs (Model::verify), 20 s at most.
  const bool run_each = fork_each && std::getenv("NNFUSE_SWEEP_RUN") != nullptr;
  int models = 0, compiled = 0, refused = 0;
  for (const onnx::OpSchema& s : onnx::OpSchemaRegistry::get_all_schemas_with_history()) {
    if (!s.domain().empty() || s.since_version() > 17 || s.deprecated()) continue;
    for (const Variant& var : variants_of(s)) {
      const auto m = model_of(s, var);
      if (!m) continue;
      const std::string label = s.Name() + "-" + std::to_string(s.since_version()) + " " + var.what;
      if (only && label.find(only) == std::string::npos) continue;
      if (verbose) std::fprintf(stderr, "sweep: %s\n", label.c_str());
      ++models;
      if (fork_each) {  // exploration: each model in a child, every crash listed
        std::fflush(nullptr);
        const pid_t pid = fork();
        if (pid == 0) {
          if (run_each) alarm(20);
          try {
            CompileResult r = compile_model_bytes(m->SerializeAsString(), label, "");
            ExecutionPlan plan(*r.graph, PlanOptions{});
            if (run_each) {
              const VerifyResult v = compile_bytes(m->SerializeAsString()).verify();
              if (!v.pass) {
                std::fprintf(stderr, "sweep: %s: fused and unfused differ\n", label.c_str());
                _exit(4);
              }
            }
          } catch (const Error& e) {
            if (verbose) std::fprintf(stderr, "sweep: %s: %s\n", label.c_str(), e.what());
            _exit(3);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "sweep: %s: %s\n", label.c_str(), e.what());
            _exit(5);
          }
          _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
          ++compiled;
        } else if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
          ++refused;
        } else {
          ADD_FAILURE() << label << ": "
                        << (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                : "exit " + std::to_string(WEXITSTATUS(status)));
        }
        continue;
      }
      try {
        CompileResult r = compile_model_bytes(m->SerializeAsString(), label, "");
        PlanOptions po;
        po.threads = 1;
        po.warn_fallbacks = false;
        ExecutionPlan plan(*r.graph, po);
        ++compiled;
      } catch (const Error&) {
        ++refused;
      } catch (const std::exception& e) {
        ADD_FAILURE() << label << ": not an nnfuse::Error: " << e.what();
      }
    }
  }
  if (old_cxx) {
    setenv("NNFUSE_CXX", saved.c_str(), 1);
  } else {
    unsetenv("NNFUSE_CXX");
  }
  // The sweep must have reached the operators, and most of the sane variants compile.
  EXPECT_GT(models, 1000);
  EXPECT_GT(compiled, models / 5) << compiled << " of " << models;
  std::printf("sweep: %d models, %d compiled, %d refused\n", models, compiled, refused);
}

}  // namespace operator_sweep_test
}  // namespace nnfuse
