#include "onnx/provenance.h"

namespace nnfuse {

namespace {

constexpr char kPrefix[] = "nnfuse: fused by ";
constexpr char kFrom[] = " from ";

}  // namespace

std::string provenance_doc(const std::string& pass, const std::vector<std::string>& from) {
  std::string names;
  for (const std::string& f : from) names += (names.empty() ? "" : ",") + f;
  return std::string(kPrefix) + pass + kFrom + names;
}

bool parse_provenance_doc(const std::string& doc, std::string* pass,
                          std::vector<std::string>* from) {
  const std::string prefix = kPrefix;
  if (doc.rfind(prefix, 0) != 0) return false;
  const std::string rest = doc.substr(prefix.size());
  const size_t sep = rest.find(kFrom);
  if (sep == std::string::npos) return false;
  *pass = rest.substr(0, sep);
  from->clear();
  const std::string names = rest.substr(sep + std::string(kFrom).size());
  for (size_t start = 0; start <= names.size() && !names.empty();) {
    size_t end = names.find(',', start);
    if (end == std::string::npos) end = names.size();
    from->push_back(names.substr(start, end - start));
    start = end + 1;
  }
  return true;
}

}  // namespace nnfuse
