# quantization algorithms: target_sources(cedar_algorithms PRIVATE ...)
target_sources(cedar_algorithms PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/bit_packing.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/qsgd.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/terngrad.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/signsgd.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/ef_signsgd.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/fp16.cpp)
