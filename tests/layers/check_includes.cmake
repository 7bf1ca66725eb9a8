# tests/layers/check_includes.cmake: no file includes a header of a layer its own layer does not
# link. Run by CTest (test "layers.includes") as
#   cmake -DROOT=<source dir> "-DDEPENDS=core=;nn=core;..." [-DLEFT_OUT=distributed] -P check_includes.cmake
# DEPENDS gives, for each layer, every layer it links (directly or through another), as the
# top-level CMakeLists.txt declares them; so this checks the #include lines against the link graph.
# A file's layer is its folder: include/tapegrad/nn/transformer and src/nn/transformer are
# transformer, include/tapegrad/nn and src/nn are nn, and so on; the rest of src/ and
# include/tapegrad/ is core. include/tapegrad/tapegrad.hpp, which includes every layer, is left out.
# A layer the build leaves out (distributed, where MPI is missing) is absent from DEPENDS and named
# in LEFT_OUT: its own files are not read, and an include of its headers from any other layer is
# still a violation. Any other layer missing from DEPENDS stops the check.

cmake_minimum_required(VERSION 3.25)   # a script has no project(): set the policies

function(layer_of path out)
  string(REGEX REPLACE "^(include/tapegrad|src)/" "" rel "${path}")
  set(layer core)
  foreach(name nn optim io data distributed transformer)
    if(rel MATCHES "^${name}(/|\\.hpp$)")
      set(layer ${name})
    endif()
  endforeach()
  if(rel MATCHES "^nn/transformer/")
    set(layer transformer)
  endif()
  set(${out} ${layer} PARENT_SCOPE)
endfunction()

foreach(entry ${DEPENDS})
  string(REPLACE "=" ";" pair "${entry}")
  list(GET pair 0 layer)
  list(LENGTH pair n)
  set(below "")
  if(n GREATER 1)
    list(GET pair 1 below)
    string(REPLACE "," ";" below "${below}")
  endif()
  set(allowed_${layer} ${layer} ${below})
endforeach()

file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/include/tapegrad/*.hpp ${ROOT}/src/*.hpp
     ${ROOT}/src/*.cpp)
list(REMOVE_ITEM files include/tapegrad/tapegrad.hpp)
set(violations "")
set(checked 0)
set(left_out "")
foreach(file ${files})
  layer_of(${file} own)
  if(NOT DEFINED allowed_${own})
    if(NOT own IN_LIST LEFT_OUT)
      message(FATAL_ERROR "${file}: layer '${own}' is not declared in DEPENDS")
    endif()
    list(APPEND left_out ${file})  # a layer this build leaves out
    continue()
  endif()
  file(STRINGS ${ROOT}/${file} includes REGEX "^#include \"tapegrad/")
  foreach(line ${includes})
    math(EXPR checked "${checked} + 1")
    string(REGEX REPLACE "^#include \"(tapegrad/[^\"]+)\".*" "include/\\1" header "${line}")
    layer_of(${header} theirs)
    if(NOT theirs IN_LIST allowed_${own})
      list(APPEND violations "  ${file} (${own}) includes ${header} (${theirs}), which ${own} does not link")
    endif()
  endforeach()
endforeach()
list(LENGTH files n_files)
list(LENGTH left_out n_left_out)
math(EXPR n_files "${n_files} - ${n_left_out}")
if(violations)
  list(JOIN violations "\n" text)
  message(FATAL_ERROR "an include runs up or across the layers (docs/layers.md):\n${text}")
endif()
message(STATUS "layers: ${checked} includes in ${n_files} files, none runs up a layer")
if(left_out)
  message(STATUS "layers: ${n_left_out} files of ${LEFT_OUT}, which this build leaves out, were not read")
endif()
