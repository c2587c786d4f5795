# GPU planner sources, included by lib/CMakeLists.txt when CUDA is enabled (CPU-only builds compile
# gpu_planner_unavailable.cpp instead).
target_sources(mlaplan PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/cuda/device_plan.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/cuda/fast_kernel.cu
  ${CMAKE_CURRENT_SOURCE_DIR}/cuda/gpu_planner.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/cuda/seed_kernel.cu
)
# The static runtime, so the binary runs where no CUDA runtime is installed; PUBLIC because the
# app and tests link this static library and need its runtime calls resolved.
target_link_libraries(mlaplan PUBLIC CUDA::cudart_static)
target_compile_options(mlaplan PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-warn-spills --expt-relaxed-constexpr>)
