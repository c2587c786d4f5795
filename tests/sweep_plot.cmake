# The sweep plot script on a saved `mlaplan sweep --format json`. Included by tests/CMakeLists.txt.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  # plot_sweep.py exits 77 without matplotlib: reported as skipped, not failed.
  add_test(NAME PlotSweep.DrawsThePng
           COMMAND ${CMAKE_COMMAND} -E env ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/sweep_plot_check.py
                   ${PROJECT_SOURCE_DIR}/scripts/plot_sweep.py ${CMAKE_CURRENT_SOURCE_DIR}/data/sweep_sample.json
                   ${CMAKE_CURRENT_BINARY_DIR}/sweep_sample.png)
  set_tests_properties(PlotSweep.DrawsThePng PROPERTIES SKIP_RETURN_CODE 77)
endif()
