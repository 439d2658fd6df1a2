// The CPU code paths that decide a step's bits, pinned so that a run trained on one x86-64 CPU
// replays bit for bit on another, Intel or AMD. Left alone, the BLAS (MKL inside libtorch) and
// ATen's vectorised kernels pick their kernels by micro-architecture and vendor: an AVX-512 Xeon
// and an EPYC sum in other orders.
//
// The pin is an environment the libraries read when they initialise (WIT_CPU_NUMERICS):
//   portable (default)            MKL_CBWR=COMPATIBLE,STRICT: MKL's conditional numerical
//                                 reproducibility, the one branch it honours on every vendor's
//                                 CPU (its AVX2 branch falls back to its own dispatch on AMD),
//                                 the same bits whatever the thread count
//   avx2                          MKL_CBWR=AVX2,STRICT: faster, but the same bits on Intel CPUs
//                                 only; for runs recorded with it
//   both also set                 MKL_ENABLE_INSTRUCTIONS=AVX2, ATEN_CPU_CAPABILITY=avx2 (ATen's
//                                 kernels compiled for AVX2), ONEDNN_MAX_CPU_ISA=AVX2,
//                                 OPENBLAS_CORETYPE=Haswell (a libtorch built on OpenBLAS)
// pin_cpu_numerics() runs first in main(): where the environment differs it sets it and
// re-executes the process (same pid, so mpirun and Slurm see nothing), so the libraries load
// with it. WIT_CPU_NUMERICS=native leaves the machine's own paths (faster, but such a run replays
// exactly only on the same CPU model); a CPU without AVX2 and FMA runs native.
//
// What took effect, not what was asked for, is recorded in each session's facts
// (cpu_numerics_facts, read back from MKL and ATen), and compared by wit verify and --resume.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace wit {

// The pin runs get by default, and the earlier one (MKL's AVX2 branch: Intel CPUs only).
constexpr const char* kPinnedCpuNumerics = "portable";
constexpr const char* kAvx2CpuNumerics = "avx2";

// Sets the pinned environment (unless WIT_CPU_NUMERICS=native or the CPU lacks AVX2/FMA) and,
// where it differed, re-executes /proc/self/exe with the same argv. Call before anything else.
// A WIT_CPU_NUMERICS other than portable, avx2 or native exits with a message.
void pin_cpu_numerics(char** argv);

// Whether this CPU runs the pinned level (AVX2 and FMA).
bool cpu_runs_pinned_level();

// The CPU numerics in effect in this process: {"numerics": "portable" or "avx2" when every path
// of that pin took effect, else "native", "cpu": model, "cpu_vendor", "cpu_isa": the widest vector ISA, "aten":
// ATen's capability, "blas": MKL's version, "mkl_cbwr": MKL's branch and flags}.
nlohmann::json cpu_numerics_facts();

// The part of CPU facts that decides the bits: for a pinned run the level and the effective
// library settings; for a native one also the CPU model and ISA. `libtorch` is the version.
nlohmann::json cpu_numerics_key(const nlohmann::json& facts, const std::string& libtorch);

// "Intel Xeon ... (AVX-512), native numerics (ATen AVX512, MKL branch 0x1), libtorch 2.11.0".
std::string describe_cpu_numerics(const nlohmann::json& key);

}  // namespace wit
