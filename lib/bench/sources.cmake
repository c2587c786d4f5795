# mlaplan bench: the CPU side everywhere, the GPU measurements only with CUDA.
# Included by lib/CMakeLists.txt.
target_include_directories(mlaplan PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/include>)
target_sources(mlaplan PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/bench_format.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_runner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cpu_measurements.cpp
  ${CMAKE_CURRENT_LIST_DIR}/measurement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sample_stats.cpp
  ${CMAKE_CURRENT_LIST_DIR}/size_list.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload.cpp
)
if(MLAPLAN_HAVE_CUDA)
  target_sources(mlaplan PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_measurements.cu ${CMAKE_CURRENT_LIST_DIR}/sm_clock.cu)
else()
  target_sources(mlaplan PRIVATE ${CMAKE_CURRENT_LIST_DIR}/gpu_measurements_unavailable.cpp)
endif()
