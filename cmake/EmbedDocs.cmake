# Turns docs/cli/<name>.md into a header of string constants, so `cco <cmd> --help` prints the
# same text as the docs (nvbench's way: they cannot drift). Run with -DOUT=... -DDOCS=a.md;b.md
string(REPLACE "|" ";" DOCS "${DOCS}")
file(WRITE ${OUT}.tmp "// Generated from docs/cli/*.md by cmake/EmbedDocs.cmake. Do not edit.\n#pragma once\n\nnamespace cco::cli::help {\n")
foreach(doc ${DOCS})
  get_filename_component(name ${doc} NAME_WE)
  file(READ ${doc} text)
  file(APPEND ${OUT}.tmp "inline constexpr const char* ${name} = R\"CCODOC(${text})CCODOC\";\n")
endforeach()
file(APPEND ${OUT}.tmp "}  // namespace cco::cli::help\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
