#include "onnx/importer.h"
