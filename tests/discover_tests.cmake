# tests/discover_tests.cmake: tells CTest about every doctest case of one test program, run after
# each build of the program (CMakeLists.txt, tapegrad_discover_tests).
#
# doctest's own discovery names a test by its case alone, so `ctest -R relu_squared` misses the
# case "every kernel set gives the same bits" of the suite ops.relu_squared. Here the program
# lists its cases ONCE, with their suites (--list-test-cases --reporters=xml), and each becomes
# the CTest test "<prefix><suite>: <case>" (a case outside any suite: "<prefix><case>"), which
# runs that one case and only it (the filters are exact where wildcards could select more, case
# sensitive, and a case outside any suite excludes the suites), labelled with the program's layer.
# A run that selects no case fails rather than passing on nothing.
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
# A filter that selects no case would run nothing and pass: doctest's "test cases: 0 |" fails it.
bracket(no_case_ran "test cases: +0 [|]")
# doctest's XML writes a case as <TestCase name="..." testsuite="..." filename=... /> (no testsuite
# outside a suite), with '"', '&' and '<' escaped inside the values but '>' left as it is: read up
# to the closing quotes. A ';' (in "&lt;", or in a name) would split CMake's list of matches, and a
# '[' or ']' would keep it from splitting: they are set aside first, and each case gets them back.
string(REPLACE ";" "<semicolon>" listing "${listing}")
string(REPLACE "[" "<lsqb>" listing "${listing}")
string(REPLACE "]" "<rsqb>" listing "${listing}")
string(REGEX MATCHALL "<TestCase name=\"[^\"]*\"( testsuite=\"[^\"]*\")?" cases "${listing}")
set(names "")   # every case as <suite>\n<name>, to find filters that select more than one
set(keys "")
foreach(case ${cases})
  string(REGEX MATCH "<TestCase name=\"([^\"]*)\"" _ "${case}")
  set(raw_name "${CMAKE_MATCH_1}")
  set(raw_suite "")
  if(case MATCHES " testsuite=\"([^\"]*)\"")
    set(raw_suite "${CMAKE_MATCH_1}")
  endif()
  list(APPEND keys "${raw_suite}\n${raw_name}")
endforeach()

# A filter is a doctest wildcard ('*' any run of characters, '?' one): the case's name selects
# only itself unless it holds one of them and so matches another name of its suite.
function(wildcard_regex out pattern)
  string(REGEX REPLACE "([][^$.|+(){}\\])" "\\\\\\1" pattern "${pattern}")
  string(REPLACE "*" ".*" pattern "${pattern}")
  string(REPLACE "?" "." pattern "${pattern}")
  set(${out} "^${pattern}$" PARENT_SCOPE)
endfunction()

# A case's suite and name from its key "<suite>\n<name>", the characters set aside given back.
function(suite_and_name key suite_out name_out)
  string(REPLACE "<semicolon>" ";" key "${key}")
  string(REPLACE "<lsqb>" "[" key "${key}")
  string(REPLACE "<rsqb>" "]" key "${key}")
  string(FIND "${key}" "\n" at)
  string(SUBSTRING "${key}" 0 ${at} suite)
  math(EXPR after "${at} + 1")
  string(SUBSTRING "${key}" ${after} -1 name)
  xml_text(suite "${suite}")
  xml_text(name "${name}")
  set(${suite_out} "${suite}" PARENT_SCOPE)
  set(${name_out} "${name}" PARENT_SCOPE)
endfunction()

foreach(key ${keys})
  suite_and_name("${key}" suite name)
  if(name MATCHES ";" OR suite MATCHES ";")  # CTest would read it as two names
    message(FATAL_ERROR "${PROGRAM}: the test case \"${name}\" of suite \"${suite}\" has a ';' in "
                        "its name, which CTest cannot register: write it without one")
  endif()
  if(name MATCHES "\\\\x" OR suite MATCHES "\\\\x")  # a control character, escaped by the XML writer
    message(FATAL_ERROR "${PROGRAM}: the test case \"${name}\" of suite \"${suite}\" has a control "
                        "character or an invalid UTF-8 byte in its name: write it without one")
  endif()
  if(name MATCHES "[*?]")
    wildcard_regex(pattern "${name}")
    set(matched 0)
    foreach(other ${keys})
      suite_and_name("${other}" other_suite other_name)
      if(other_suite STREQUAL suite AND other_name MATCHES "${pattern}")
        math(EXPR matched "${matched} + 1")
      endif()
    endforeach()
    if(matched GREATER 1)
      message(FATAL_ERROR "${PROGRAM}: the test case \"${name}\" of suite \"${suite}\", as a doctest "
                          "filter ('*' and '?' are wildcards), also selects another case of its suite: "
                          "rename one of them")
    endif()
  endif()
  doctest_filter(case_filter "${name}")
  if(suite STREQUAL "")  # and not the cases of the same name in a suite
    set(test "${PREFIX}${name}")
    bracket(suite_args "--test-suite-exclude=?*")
  else()
    set(test "${PREFIX}${suite}: ${name}")
    doctest_filter(suite_filter "${suite}")
    bracket(suite_args "--test-suite=${suite_filter}")
  endif()
  bracket(test_q "${test}")
  bracket(case_q "--test-case=${case_filter}")
  string(APPEND script "add_test(${test_q} ${program_q} ${case_q} ${suite_args} --case-sensitive=true"
                       "${run_args_text})\n"
                       "set_tests_properties(${test_q} PROPERTIES LABELS ${LABEL}${properties_text}"
                       " FAIL_REGULAR_EXPRESSION ${no_case_ran})\n")
endforeach()
file(WRITE "${OUTPUT}" "${script}")
