# NVTX ranges, included by lib/profile/CMakeLists.txt.
# NVTX3 is header-only: take it from the CUDA toolkit, else from a pip-installed `nvidia-nvtx`
# wheel; without either the ranges compile to nothing (nvtx_range.cpp).
execute_process(COMMAND python3 -c "import nvidia.nvtx, os; print(os.path.join(list(nvidia.nvtx.__path__)[0], 'include'))"
                OUTPUT_VARIABLE _mlaplan_pip_nvtx OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
find_path(MLAPLAN_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include ${_mlaplan_pip_nvtx})
if(MLAPLAN_NVTX_INCLUDE_DIR)
  set(MLAPLAN_HAVE_NVTX ON)
else()
  set(MLAPLAN_HAVE_NVTX OFF)
  message(STATUS "mlaplan: NVTX3 headers not found; NVTX ranges compiled out")
endif()
set(MLAPLAN_HAVE_NVTX ${MLAPLAN_HAVE_NVTX} CACHE INTERNAL "NVTX3 headers found (the NVTX tests need them)")

if(MLAPLAN_HAVE_NVTX)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/nvtx_range.cpp PROPERTIES COMPILE_DEFINITIONS MLAPLAN_HAVE_NVTX=1)
  # SYSTEM: NVTX's own headers are not held to our warning flags.
  target_include_directories(mlaplan_profile SYSTEM PRIVATE ${MLAPLAN_NVTX_INCLUDE_DIR})
  target_link_libraries(mlaplan_profile PRIVATE ${CMAKE_DL_LIBS})  # NVTX dlopens the tool named by NVTX_INJECTION64_PATH
endif()
