// Compiles a model with nnfuse, prints what fused, runs it on generated inputs with one thread
// and with eight threads at once, and checks that every run gives the same outputs.
//   compile_and_run MODEL.onnx [fused.onnx]
#include <nnfuse/nnfuse.h>

#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL.onnx [FUSED.onnx]\n";
    return 2;
  }
  try {
    const nnfuse::Model model = nnfuse::compile(argv[1]);
    std::cout << "compiled " << argv[1] << ": " << model.num_imported_nodes() << " nodes -> "
              << model.num_nodes() << "\n";
    if (argc > 2) model.save(argv[2]);

    // Inputs: float32 tensors of the declared shape (dims known only at run time set to 1).
    std::map<std::string, nnfuse::Tensor> inputs;
    for (const nnfuse::TensorInfo& in : model.inputs()) {
      std::vector<int64_t> dims = in.shape;
      for (int64_t& d : dims) d = d < 0 ? 1 : d;
      nnfuse::Tensor t(in.dtype, dims);
      if (in.dtype == nnfuse::DType::kFloat32) {
        float* p = t.data<float>();
        for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i % 17) / 8.0f - 1.0f;
      }
      inputs[in.name] = t;
    }

    const nnfuse::Session session(model, {.threads = 2});
    const auto want = session.run(inputs);
    for (const auto& [name, t] : want) {
      std::cout << "output " << name << ": " << nnfuse::dtype_name(t.dtype())
                << nnfuse::dims_str(t.shape()) << "\n";
    }
    int mismatches = 0;
    std::vector<std::thread> threads;
    std::mutex mu;
    for (int k = 0; k < 8; ++k) {
      threads.emplace_back([&] {
        const auto got = session.run(inputs);
        for (const auto& [name, t] : want) {
          const nnfuse::Tensor& g = got.at(name);
          if (g.nbytes() != t.nbytes() || std::memcmp(g.raw(), t.raw(), t.nbytes()) != 0) {
            std::lock_guard<std::mutex> lock(mu);
            ++mismatches;
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    std::cout << "8 concurrent runs: " << (mismatches ? "MISMATCH" : "identical to one run")
              << "\n";
    const std::string report = model.report_json();
    std::cout << "fusion report: " << report.size() << " bytes of JSON\n";
    return mismatches ? 1 : 0;
  } catch (const nnfuse::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
