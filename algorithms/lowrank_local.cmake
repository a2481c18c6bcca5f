# lowrank_local algorithms: PowerSGD, LAG, local / post-local SGD.
target_sources(cedar_algorithms PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/powersgd.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/lag.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/local_sgd.cpp)
