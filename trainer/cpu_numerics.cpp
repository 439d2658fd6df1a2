#include "trainer/cpu_numerics.h"

#include <ATen/Version.h>
#include <cpuid.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace wit {

namespace {

struct Pin {
  const char* name;
  const char* value;
};
// The portable pin: MKL's COMPATIBLE branch, the one MKL honours on every x86-64 CPU (its other
// branches fall back to its own dispatch on AMD CPUs, which give other bits).
const std::vector<Pin> kPortablePins = {
    {"MKL_CBWR", "COMPATIBLE,STRICT"},
    {"MKL_ENABLE_INSTRUCTIONS", "AVX2"},
    {"ATEN_CPU_CAPABILITY", "avx2"},
    {"ONEDNN_MAX_CPU_ISA", "AVX2"},
    {"OPENBLAS_CORETYPE", "Haswell"},
};
// The earlier pin, MKL's AVX2 branch: the same bits on Intel CPUs only; kept so that runs
// recorded with it can still be verified and resumed there.
const std::vector<Pin> kAvx2Pins = {
    {"MKL_CBWR", "AVX2,STRICT"},
    // Without it, MKL_ENABLE_INSTRUCTIONS=AVX512 in the environment changes MKL's bits although
    // its CNR branch still reads AVX2 (seen with MKL 2024.2 on an AVX-512 Xeon).
    {"MKL_ENABLE_INSTRUCTIONS", "AVX2"},
    {"ATEN_CPU_CAPABILITY", "avx2"},
    {"ONEDNN_MAX_CPU_ISA", "AVX2"},
    {"OPENBLAS_CORETYPE", "Haswell"},
};
// MKL's CNR constants: its COMPATIBLE and AVX2 branches, and the strict flag.
constexpr int kMklCbwrCompatible = 3;
constexpr int kMklCbwrAvx2 = 10;
constexpr int kMklCbwrStrict = 0x10000;
// Set by the re-executed process, so a pin that does not hold cannot loop.
constexpr const char* kReexecMarker = "WIT_CPU_NUMERICS_REEXEC";

// Whether a numerics name is one of the pins (the same bits across CPU models), not "native" or
// anything a log might hold instead.
bool is_pin(const std::string& numerics) {
  return numerics == kPinnedCpuNumerics || numerics == kAvx2CpuNumerics;
}

std::string numerics_mode() {
  const char* m = std::getenv("WIT_CPU_NUMERICS");
  return m && *m ? m : kPinnedCpuNumerics;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "unknown CPU";
}

std::string cpu_vendor() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return "unknown";
  char v[13] = {};
  std::memcpy(v, &b, 4);
  std::memcpy(v + 4, &d, 4);
  std::memcpy(v + 8, &c, 4);
  return v;
}

std::string widest_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
  if (__builtin_cpu_supports("avx")) return "avx";
  return "sse";
}

// MKL's effective CNR setting (read back from the MKL inside libtorch), or -1 without MKL.
int mkl_cbwr() {
  using Get = int (*)(int);
  auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "mkl_serv_cbwr_get"));
  return get ? get(-1) : -1;  // MKL_CBWR_ALL: branch and flags
}

std::string mkl_version() {
  using Version = void (*)(char*, int);
  auto v = reinterpret_cast<Version>(dlsym(RTLD_DEFAULT, "MKL_Get_Version_String"));
  if (!v) return "none";
  char buf[256] = {};
  v(buf, sizeof buf);
  std::string s(buf);
  const size_t build = s.find("-Product Build");  // "... Version 2024.2-Product Build 2024..."
  return build == std::string::npos ? s : s.substr(0, build);
}

}  // namespace

bool cpu_runs_pinned_level() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

void pin_cpu_numerics(char** argv) {
  const std::string mode = numerics_mode();
  if (mode == "native") return;
  if (!is_pin(mode)) {
    std::fprintf(stderr,
                 "wit: WIT_CPU_NUMERICS=%s: expected portable (the default: the same bits on "
                 "every x86-64 CPU with AVX2, Intel or AMD), avx2 (MKL's AVX2 branch, for runs "
                 "recorded with it; Intel CPUs only) or native (this CPU's own kernels)\n",
                 mode.c_str());
    std::exit(2);
  }
  if (!cpu_runs_pinned_level()) return;  // recorded as native by the facts
  bool differs = false;
  for (const Pin& p : mode == kAvx2CpuNumerics ? kAvx2Pins : kPortablePins) {
    const char* now = std::getenv(p.name);
    if (now && std::strcmp(now, p.value) == 0) continue;
    if (now && *now && !std::getenv(kReexecMarker))
      std::fprintf(stderr, "wit: %s=%s replaced by %s (pinned CPU numerics; WIT_CPU_NUMERICS=native keeps it)\n",
                   p.name, now, p.value);
    setenv(p.name, p.value, 1);
    differs = true;
  }
  if (!differs || std::getenv(kReexecMarker)) return;
  setenv(kReexecMarker, "1", 1);
  execv("/proc/self/exe", argv);
  // exec failed: the environment is set in this process, which the libraries read lazily;
  // the session facts record what took effect.
  std::fprintf(stderr, "wit: re-executing with pinned CPU numerics failed (%s); continuing\n",
               std::strerror(errno));
}

nlohmann::json cpu_numerics_facts() {
  const std::string aten = at::get_cpu_capability();
  const char* onednn = std::getenv("ONEDNN_MAX_CPU_ISA");
  const char* mkl_isa = std::getenv("MKL_ENABLE_INSTRUCTIONS");
  const int cbwr = mkl_cbwr();
  // Pinned only when what the libraries run is a pin: MKL's strict COMPATIBLE (portable) or AVX2
  // branch with its ISA held to AVX2, or no MKL (then the mode asked for); ATen's AVX2 kernels;
  // oneDNN capped at AVX2.
  const bool mkl_isa_held = mkl_isa && std::string(mkl_isa) == "AVX2";
  std::string mkl_pin;
  if (cbwr == -1)
    mkl_pin = numerics_mode();
  else if (mkl_isa_held && cbwr == (kMklCbwrCompatible | kMklCbwrStrict))
    mkl_pin = kPinnedCpuNumerics;
  else if (mkl_isa_held && cbwr == (kMklCbwrAvx2 | kMklCbwrStrict))
    mkl_pin = kAvx2CpuNumerics;
  const bool rest_pinned = aten == "AVX2" && onednn && std::string(onednn) == "AVX2";
  const std::string numerics = rest_pinned && is_pin(mkl_pin) ? mkl_pin : "native";
  return {{"numerics", numerics},
          {"cpu", cpu_model_name()},
          {"cpu_vendor", cpu_vendor()},
          {"cpu_isa", widest_isa()},
          {"aten", aten},
          {"blas", mkl_version()},
          {"mkl_cbwr", cbwr == -1 ? std::string("none") : fmt::format("{:#x}", cbwr)}};
}

nlohmann::json cpu_numerics_key(const nlohmann::json& f, const std::string& libtorch) {
  nlohmann::json key = {{"libtorch", libtorch}};
  if (!f.is_object() || !f.contains("numerics")) {
    key["numerics"] = "unrecorded";
    return key;
  }
  // Unsigned facts: only a known pin earns the short key; anything else is keyed by its CPU too.
  const bool pinned = f["numerics"].is_string() && is_pin(f["numerics"].get<std::string>());
  const std::vector<const char*> keys =
      pinned ? std::vector<const char*>{"numerics", "aten", "mkl_cbwr"}
             : std::vector<const char*>{"numerics", "cpu", "cpu_isa", "aten", "mkl_cbwr"};
  for (const char* k : keys)
    if (f.contains(k)) key[k] = f[k];
  return key;
}

std::string describe_cpu_numerics(const nlohmann::json& key) {
  // Unsigned facts: printed as JSON values, whatever their types.
  auto v = [&](const char* k) {
    if (!key.contains(k)) return std::string("?");
    return key[k].is_string() ? key[k].get<std::string>() : key[k].dump();
  };
  if (is_pin(v("numerics")))
    return fmt::format("a CPU with numerics pinned to {} (ATen {}, MKL branch {}), libtorch {}",
                       v("numerics"), v("aten"), v("mkl_cbwr"), v("libtorch"));
  if (v("numerics") == "native")
    return fmt::format("{} ({}) with its native numerics (ATen {}, MKL branch {}), libtorch {}",
                       v("cpu"), v("cpu_isa"), v("aten"), v("mkl_cbwr"), v("libtorch"));
  return fmt::format("a CPU whose numerics the log does not record, libtorch {}", v("libtorch"));
}

}  // namespace wit
