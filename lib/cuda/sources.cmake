# GPU planner sources, included by lib/CMakeLists.txt when CUDA is enabled.
# (Until the GPU planner lands, a CUDA build answers GPU requests like a CPU-only build.)
target_sources(mlaplan PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/gpu_planner_unavailable.cpp)
