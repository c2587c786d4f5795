add_executable(mlaplan_render_tests sweep_svg_test.cpp)
target_link_libraries(mlaplan_render_tests PRIVATE mlaplan fmt::fmt-header-only nlohmann_json::nlohmann_json GTest::gtest GTest::gtest_main)
gtest_discover_tests(mlaplan_render_tests DISCOVERY_TIMEOUT 60)
