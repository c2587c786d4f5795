# Pictures (lib/render): the sweep chart, plan pictures measured and drawn, and the pixel tests that
# rasterise them with rsvg-convert and headless Chromium (skipped when those are missing, unless
# MLAPLAN_REQUIRE_TOOLS is set). Included by tests/CMakeLists.txt.
find_package(PNG REQUIRED)
add_executable(mlaplan_render_tests
  sweep_svg_test.cpp
  plan_svg_test.cpp
  render_pixels_test.cpp
)
target_link_libraries(mlaplan_render_tests PRIVATE mlaplan mlaplan_fmt nlohmann_json::nlohmann_json PNG::PNG GTest::gtest GTest::gtest_main)
target_compile_definitions(mlaplan_render_tests PRIVATE MLAPLAN_EXE="$<TARGET_FILE:mlaplan_cli>" MLAPLAN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(mlaplan_render_tests mlaplan_cli)
gtest_discover_tests(mlaplan_render_tests DISCOVERY_TIMEOUT 60)
