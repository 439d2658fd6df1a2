// The GPU numerics settings (see gpu_determinism.h).
#include "trainer/dist/gpu_determinism.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace wit::dist {

std::vector<std::pair<std::string, std::string>> apply_gpu_determinism() {
  std::vector<std::pair<std::string, std::string>> settings = {
      {"CUBLAS_WORKSPACE_CONFIG", ":4096:8"},
      {"NCCL_ALGO", "Ring"},
      {"NCCL_PROTO", "Simple"},
      {"NCCL_NVLS_ENABLE", "0"},
      {"NCCL_COLLNET_ENABLE", "0"},
  };
  for (const auto& [name, value] : settings)
    if (setenv(name.c_str(), value.c_str(), /*overwrite=*/1) != 0)
      fail("cannot set {}={}: {}", name, value, std::strerror(errno));
  return settings;
}

}  // namespace wit::dist
