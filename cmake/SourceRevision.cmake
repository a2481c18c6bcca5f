# The source revision compiled into Cedar (runner/source_revision.h), taken by every build rather
# than at configure time, so that a binary rebuilt after a commit or an edit names the code it was
# built from.
set(CEDAR_SOURCE_REVISION_STEP ${CMAKE_CURRENT_LIST_DIR}/source_revision_step.cmake)

# cedar_source_revision_library(<target> <checkout>): a static library of one generated file that
# defines runner/source_revision.h's constants for the git checkout <checkout>. A custom target
# that is always out of date runs cmake/source_revision_step.cmake before the file compiles; the
# step rewrites the file only when the revision or the uncommitted changes differ, so a no-op
# build recompiles nothing and a new revision recompiles this one file.
function(cedar_source_revision_library target checkout)
  set(generated ${CMAKE_CURRENT_BINARY_DIR}/generated/${target}.cpp)
  add_custom_target(${target}_step
    COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${checkout} -DOUTPUT=${generated}
      -DBINARY_DIR=${CMAKE_BINARY_DIR} -P ${CEDAR_SOURCE_REVISION_STEP}
    BYPRODUCTS ${generated}
    COMMENT "Source revision of ${checkout}"
    VERBATIM)
  add_library(${target} STATIC ${generated})
  set_source_files_properties(${generated} PROPERTIES GENERATED ON)
  add_dependencies(${target} ${target}_step)
endfunction()
