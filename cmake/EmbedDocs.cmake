# Turns docs/cli/<name>.md into a header of string constants, so `cco <cmd> --help` prints the
# same text as the docs (nvbench's way: they cannot drift), up to a "Details: ..." line where the
# page has one. Run with -DOUT=... -DDOCS=a.md;b.md
string(REPLACE "|" ";" DOCS "${DOCS}")
file(WRITE ${OUT}.tmp "// Generated from docs/cli/*.md by cmake/EmbedDocs.cmake. Do not edit.\n#pragma once\n\nnamespace cco::cli::help {\n")
foreach(doc ${DOCS})
  get_filename_component(name ${doc} NAME_WE)
  file(READ ${doc} text)
  # --help is the page up to its "Details: ..." line (one screen); the man page and the docs file
  # hold the whole page.
  string(FIND "${text}" "\nDetails: " cut)
  if(cut GREATER -1)
    math(EXPR from "${cut} + 1")
    string(SUBSTRING "${text}" ${from} -1 tail)
    string(FIND "${tail}" "\n" eol)
    math(EXPR len "${from} + ${eol} + 1")
    string(SUBSTRING "${text}" 0 ${len} text)
  endif()
  file(APPEND ${OUT}.tmp "inline constexpr const char* ${name} = R\"CCODOC(${text})CCODOC\";\n")
endforeach()
file(APPEND ${OUT}.tmp "}  // namespace cco::cli::help\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
