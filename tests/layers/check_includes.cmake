# tests/layers/check_includes.cmake: no file includes a header of a layer its own layer does not
# link, and inside the core layer no file includes a header of a floor above its own. Run by CTest
# (test "layers.includes") as
#   cmake -DROOT=<source dir> "-DDEPENDS=core=;nn=core;..." [-DLEFT_OUT=distributed] -P check_includes.cmake
# DEPENDS gives, for each layer, every layer it links (directly or through another), as the
# top-level CMakeLists.txt declares them; so this checks the #include lines against the link graph.
# A file's layer is its folder: src/<layer>/ and include/tapegrad/<layer>/, and the umbrella header
# include/tapegrad/<layer>.hpp. The core layer is four folders, its floors, bottom up:
#   core (0) <- autograd (1) <- ops (2) <- kernels (3)
# and a file may include only its own floor and those below. src/kernels/optim/ holds the
# optimizers' fast kernels, built into the optim layer: it is optim. Both kinds of include are read:
# "tapegrad/..." (a public header) and "../core/x.hpp" (a private one, relative to the file).
# include/tapegrad/tapegrad.hpp, which includes every layer, is left out; core.hpp, the core
# layer's umbrella, includes every floor and is not a floor.
# A layer the build leaves out (distributed, where MPI is missing) is absent from DEPENDS and named
# in LEFT_OUT: its own files are not read, and an include of its headers from any other layer is
# still a violation. Any other layer missing from DEPENDS stops the check.

cmake_minimum_required(VERSION 3.25)   # a script has no project(): set the policies

set(floors core autograd ops kernels)

# layer_of(path layer floor): path relative to ROOT; floor is the core floor's index, or -1.
function(layer_of path out_layer out_floor)
  set(floor -1)
  if(path STREQUAL "include/tapegrad/core.hpp")
    set(layer core)
  elseif(path MATCHES "^src/kernels/optim/")
    set(layer optim)
  elseif(path MATCHES "^(include/tapegrad|src)/([a-z_]+)(/|\\.hpp$)")
    set(layer ${CMAKE_MATCH_2})
    list(FIND floors ${layer} floor)
    if(floor GREATER -1)
      set(layer core)
    endif()
  else()
    set(layer "?")
  endif()
  set(${out_layer} ${layer} PARENT_SCOPE)
  set(${out_floor} ${floor} PARENT_SCOPE)
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
  layer_of(${file} own own_floor)
  if(own STREQUAL "?")
    list(APPEND violations "  ${file} is in no layer's folder (src/<layer>/, include/tapegrad/<layer>/)")
    continue()
  endif()
  if(NOT DEFINED allowed_${own})
    if(NOT own IN_LIST LEFT_OUT)
      message(FATAL_ERROR "${file}: layer '${own}' is not declared in DEPENDS")
    endif()
    list(APPEND left_out ${file})  # a layer this build leaves out
    continue()
  endif()
  get_filename_component(dir ${file} DIRECTORY)
  file(STRINGS ${ROOT}/${file} includes REGEX "^#include \"")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" name "${line}")
    if(name MATCHES "^tapegrad/")
      set(header include/${name})
    else()   # a private header, relative to the file
      get_filename_component(header ${ROOT}/${dir}/${name} ABSOLUTE)
      file(RELATIVE_PATH header ${ROOT} ${header})
      if(NOT header MATCHES "^(src|include)/")
        continue()   # not the library's (none today)
      endif()
    endif()
    math(EXPR checked "${checked} + 1")
    layer_of(${header} theirs their_floor)
    if(NOT theirs IN_LIST allowed_${own})
      list(APPEND violations "  ${file} (${own}) includes ${header} (${theirs}), which ${own} does not link")
    elseif(own_floor GREATER -1 AND their_floor GREATER own_floor)
      list(GET floors ${own_floor} own_name)
      list(GET floors ${their_floor} their_name)
      list(APPEND violations "  ${file} (core floor ${own_name}) includes ${header} (floor ${their_name}, above it)")
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
message(STATUS "layers: ${checked} includes in ${n_files} files, none runs up a layer or a core floor")
if(left_out)
  message(STATUS "layers: ${n_left_out} files of ${LEFT_OUT}, which this build leaves out, were not read")
endif()
