// How a fused node's provenance travels in an ONNX file: its doc string reads
// "nnfuse: fused by PASS from a,b,c" (the pass and the original node names), written by the
// exporter and read back by the importer, so dumps of a reloaded model stay explainable.
#pragma once

#include <string>
#include <vector>

namespace nnfuse {

std::string provenance_doc(const std::string& pass, const std::vector<std::string>& from);
// False when `doc` is not a provenance doc string.
bool parse_provenance_doc(const std::string& doc, std::string* pass,
                          std::vector<std::string>* from);

}  // namespace nnfuse
