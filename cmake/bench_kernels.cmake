# voxrt_kernel (src/bench/kernels; docs/cuda.md, "Running one kernel"): one CUDA kernel on random
# data, checked against the same operation on the CPU and timed. Its plain C++ (the arguments, the
# random data, the CPU reference, the report) is a library of its own, built in every build so that
# the CPU build's tests check it; the driver (CUDA builds) links it with the kernels alone
# (voxrt_cuda_kernels) and cuBLAS, not the engine.
file(GLOB VOXRT_KERNEL_REFERENCE_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/bench/kernels/*.cpp)
add_library(voxrt_kernel_reference STATIC ${VOXRT_KERNEL_REFERENCE_SOURCES})
target_include_directories(voxrt_kernel_reference PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
# voxrt_quant: fp8 e4m3 on the host (quant/fp8_e4m3.h), the one definition the fp8 caches' codes follow too.
target_link_libraries(voxrt_kernel_reference PUBLIC nlohmann_json::nlohmann_json Threads::Threads PRIVATE voxrt_quant)
target_compile_options(voxrt_kernel_reference PRIVATE -Wall -Wextra)

if(VOXRT_CUDA)
  file(GLOB VOXRT_KERNEL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/bench/kernels/cuda/*.cpp)
  add_executable(voxrt_kernel ${VOXRT_KERNEL_SOURCES})
  target_link_libraries(voxrt_kernel PRIVATE voxrt_kernel_reference voxrt_cuda_kernels CUDA::cublas CUDA::cublasLt)
  target_compile_options(voxrt_kernel PRIVATE -Wall -Wextra)
  if(VOXRT_TESTS)
    # Every kernel once on a small shape (odd sizes, split keys, fp8 and paged caches, grouped
    # rows), against the CPU; without a CUDA device the driver says "skipped: no CUDA device" and
    # exits 77, which CTest reports as skipped.
    set(VOXRT_KERNEL_CASES
      "gemv_mma|gemv --kernel mma --rows 300 --cols 520 --batch 3"
      "gemv_mma_gated_bf16_x|gemv --kernel mma --rows 136 --cols 1024 --batch 32 --gated --input bf16"
      "gemv_simt|gemv --kernel simt --rows 257 --cols 264 --batch 8"
      "gemm_wgmma|gemm --kernel wgmma --m 70 --n 260 --k 1000"
      "gemm_mma_gated|gemm --kernel mma --m 130 --n 200 --k 512 --gated"
      "gemm_cublas_gated_odd_k|gemm --kernel cublas --m 5 --n 96 --k 100 --gated"
      "attention_mma_bf16|attention --kernel mma --rows 3 --keys 700 --heads 8 --kv-heads 2 --head-dim 64"
      "attention_mma_fp8_frames_paged|attention --kernel mma --rows 8 --keys 1000 --heads 8 --kv-heads 8 --head-dim 128 --cache fp8 --layout frames --page-len 48"
      "attention_simt_fp32|attention --kernel simt --rows 4 --keys 300 --heads 4 --kv-heads 1 --head-dim 32 --cache fp32")
    foreach(c ${VOXRT_KERNEL_CASES})
      string(REPLACE "|" ";" parts "${c}")
      list(GET parts 0 name)
      list(GET parts 1 line)
      separate_arguments(args UNIX_COMMAND "${line} --repeat 3 --warmup 1")
      add_test(NAME CudaKernelDriver.${name} COMMAND voxrt_kernel ${args})
      set_tests_properties(CudaKernelDriver.${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
    endforeach()
  endif()
endif()
