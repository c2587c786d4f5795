# The plan explorer: engines' chunking policies, model and workload presets, batch formation and
# sweeps. Included by lib/CMakeLists.txt. CPU-only; `sweep --backend gpu` plans `max` through the
# GPU planner of lib/cuda.
target_include_directories(mlaplan PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/include>)
target_sources(mlaplan PRIVATE
  # models
  ${CMAKE_CURRENT_LIST_DIR}/model.cpp
  ${CMAKE_CURRENT_LIST_DIR}/model_config.cpp
  # workloads
  ${CMAKE_CURRENT_LIST_DIR}/lengths_csv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/quantile_distribution.cpp
  ${CMAKE_CURRENT_LIST_DIR}/workload.cpp
  # policies, batches, sweeps
  ${CMAKE_CURRENT_LIST_DIR}/batch_formation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/policy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/policy_check.cpp
  ${CMAKE_CURRENT_LIST_DIR}/policy_plan.cpp
  ${CMAKE_CURRENT_LIST_DIR}/policy_report.cpp
  ${CMAKE_CURRENT_LIST_DIR}/recommend.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sweep.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sweep_format.cpp
)
