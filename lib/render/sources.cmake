# Pictures and reports: SVG pictures of plans and sweeps, and self-contained HTML pages holding
# them. Included by lib/CMakeLists.txt. Measuring (plan_picture) is kept apart from drawing.
target_include_directories(mlaplan PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_LIST_DIR}/include>)
target_sources(mlaplan PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/svg_writer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plan_picture.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plan_svg.cpp
  ${CMAKE_CURRENT_LIST_DIR}/html_page.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plan_html.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sweep_svg.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sweep_html.cpp
)
