// The compiler of wit's CUDA kernels, from nvcc's own macros.
namespace wit::model::kernel {

#define WIT_KERNEL_TEXT2(x) #x
#define WIT_KERNEL_TEXT(x) WIT_KERNEL_TEXT2(x)
const char* compiler_version() {
  return "nvcc " WIT_KERNEL_TEXT(__CUDACC_VER_MAJOR__) "." WIT_KERNEL_TEXT(
      __CUDACC_VER_MINOR__) "." WIT_KERNEL_TEXT(__CUDACC_VER_BUILD__);
}

}  // namespace wit::model::kernel
