# Sparsification algorithms: DGC, top-k and random-k with error feedback, and their shared
# (index, value) encoding and exchange.
target_sources(cedar_algorithms PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/sparse_exchange.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/dgc.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/topk.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/randomk.cpp)
