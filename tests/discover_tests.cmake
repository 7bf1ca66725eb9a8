# tests/discover_tests.cmake: tells CTest about every doctest case of one test program, run after
# each build of the program (CMakeLists.txt, tapegrad_discover_tests).
#
# doctest's own discovery names a test by its case alone, so `ctest -R relu_squared` misses the
# case "every kernel set gives the same bits" of the suite ops.relu_squared. Here the program
# lists its cases ONCE, with their suites (--list-test-cases --reporters=xml), and each becomes
# the CTest test "<prefix><suite>: <case>" (a case outside any suite: "<prefix><case>"), which
# runs that one case, labelled with the program's layer.
#
# Variables (-D): PROGRAM (the executable), LABEL, PREFIX, LIST_ARGS (a filter for the listing, as
# --test-suite=ops.*), RUN_ARGS (extra arguments to each run), PROPERTIES (more test properties),
# OUTPUT (the CTest file to write). List values arrive with '|' between their elements.

string(REPLACE "|" ";" LIST_ARGS "${LIST_ARGS}")
string(REPLACE "|" ";" RUN_ARGS "${RUN_ARGS}")
string(REPLACE "|" ";" PROPERTIES "${PROPERTIES}")

# Run right after its link, the program can be "busy" (ETXTBSY): a job that make started in
# parallel while the linker had the file open for writing inherits that open file, and keeps it
# until it exits (a compile of another test file: up to a minute or two). Try again, for up to two
# minutes.
foreach(attempt RANGE 240)
  execute_process(COMMAND "${PROGRAM}" --list-test-cases --reporters=xml ${LIST_ARGS}
                  OUTPUT_VARIABLE listing RESULT_VARIABLE result)
  if(NOT result MATCHES "busy")
    break()
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 0.5)
endforeach()
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} could not list its test cases (exit ${result}):\n${listing}")
endif()

# One CMake argument, quoted as a bracket argument so that no character of a case name is read as
# CMake syntax.
function(bracket out value)
  set(${out} "[==[${value}]==]" PARENT_SCOPE)
endfunction()
# doctest's filters split on ',' and take '\' as an escape: a name is given with both escaped.
function(doctest_filter out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "," "\\," value "${value}")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()
function(xml_text out value)  # the five entities doctest's XML writer uses, &amp; last
  string(REPLACE "&quot;" "\"" value "${value}")
  string(REPLACE "&apos;" "'" value "${value}")
  string(REPLACE "&lt;" "<" value "${value}")
  string(REPLACE "&gt;" ">" value "${value}")
  string(REPLACE "&amp;" "&" value "${value}")
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

set(script "")
set(properties_text "")
foreach(p ${PROPERTIES})
  bracket(q "${p}")
  string(APPEND properties_text " ${q}")
endforeach()
set(run_args_text "")
foreach(a ${RUN_ARGS})
  bracket(q "${a}")
  string(APPEND run_args_text " ${q}")
endforeach()
bracket(program_q "${PROGRAM}")
# doctest's XML writes a case as <TestCase name="..." testsuite="..." filename=... /> (no testsuite
# outside a suite), with '"',
# '&' and '<' escaped inside the values but '>' left as it is: read up to the closing quotes. A ';'
# (in "&lt;", or in a name) would split CMake's list of matches: it is set aside first.
string(REPLACE ";" "<semicolon>" listing "${listing}")
string(REGEX MATCHALL "<TestCase name=\"[^\"]*\"( testsuite=\"[^\"]*\")?" cases "${listing}")
foreach(case ${cases})
  string(REPLACE "<semicolon>" ";" case "${case}")
  string(REGEX MATCH "<TestCase name=\"([^\"]*)\"" _ "${case}")
  xml_text(name "${CMAKE_MATCH_1}")
  set(suite "")
  if(case MATCHES " testsuite=\"([^\"]*)\"")
    xml_text(suite "${CMAKE_MATCH_1}")
  endif()
  if(name MATCHES ";")  # CTest would read it as two names
    message(FATAL_ERROR "${PROGRAM}: the test case \"${name}\" of suite \"${suite}\" has a ';' in "
                        "its name, which CTest cannot register: write it without one")
  endif()
  doctest_filter(case_filter "${name}")
  if(suite STREQUAL "")
    set(test "${PREFIX}${name}")
    set(suite_args "")
  else()
    set(test "${PREFIX}${suite}: ${name}")
    doctest_filter(suite_filter "${suite}")
    bracket(suite_args "--test-suite=${suite_filter}")
  endif()
  bracket(test_q "${test}")
  bracket(case_q "--test-case=${case_filter}")
  string(APPEND script "add_test(${test_q} ${program_q} ${case_q} ${suite_args}${run_args_text})\n"
                       "set_tests_properties(${test_q} PROPERTIES LABELS ${LABEL}${properties_text})\n")
endforeach()
file(WRITE "${OUTPUT}" "${script}")
