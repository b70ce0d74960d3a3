// What one direct launch of our multi-tensor update kernel runs (update_launch.h): the kernel,
// its shared attributes, and per weight its arrays, size and float32 rates. Its own header so
// that a thread's gathered updates (update_batch.h) can live in its ThreadState.
#pragma once
#include <mxnet/c_api.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace minpy {

struct DirectUpdate {
  std::string kernel;                                     // _minpy_multi_*_update
  std::vector<std::pair<const char*, std::string>> attrs;  // shared: rescale_grad, momentum, ...
  int stride = 0;                                         // arrays per weight
  std::vector<NDArrayHandle> arrays;                      // per weight: weight, gradient, states
  std::vector<int64_t> sizes;                             // elements per weight
  bool mp = false;                                        // float16 weights and gradients, float32 states
  std::vector<float> lrs, wds;                            // per weight, as MXNet parses them
  int dev_id = 0;                                         // the CPU context
};

}  // namespace minpy
