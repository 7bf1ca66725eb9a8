# tests/core/check_bf16_warning.cmake: cmake -DTOOL=<profile_step> -P this file
#
# bf16 on a CPU without AVX512-BF16 or AMX, as oneDNN's ONEDNN_MAX_CPU_ISA=AVX512_CORE makes any
# CPU look to oneDNN: a --bf16 run still runs, and says once that its products are emulated.
# Without the cap, on a CPU that has the instructions, it says nothing.
function(run_tool err)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 ${ARGN}
                          ${TOOL} --bf16 --steps 1 --warmup 1
                  OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "profile_step --bf16 exited with ${rc}: ${stderr}")
  endif()
  if(NOT stdout MATCHES "linear \\[bf16\\]")
    message(FATAL_ERROR "profile_step --bf16 ran no bf16 product:\n${stdout}")
  endif()
  set(${err} "${stderr}" PARENT_SCOPE)
endfunction()

run_tool(err ONEDNN_MAX_CPU_ISA=AVX512_CORE)
string(REGEX MATCHALL "bf16 matrix products are emulated" found "${err}")
list(LENGTH found n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one warning that the bf16 products are emulated, got ${n}:\n${err}")
endif()
message("warned once: ${err}")
