cmake_minimum_required(VERSION 3.25)  # policies of a script run with -P
# Turns docs/cli/<name>.md into man pages (cco.1, cco-<name>.1): the same text `cco <name>
# --help` prints, set as preformatted roff, so the three cannot drift. Run with -DOUT_DIR=...
# -DDOCS=a.md|b.md -DVERSION=x.y.z.
string(REPLACE "|" ";" DOCS "${DOCS}")
file(MAKE_DIRECTORY ${OUT_DIR})
foreach(doc ${DOCS})
  get_filename_component(name ${doc} NAME_WE)
  if(name STREQUAL "cco")
    set(page "cco")
  else()
    set(page "cco-${name}")
  endif()
  string(TOUPPER "${page}" title)
  file(STRINGS ${doc} lines)
  list(GET lines 0 first)
  # "cco bench - what it does" -> the NAME line "cco-bench \- what it does"
  string(REGEX REPLACE "^[^-]* - " "" what "${first}")
  set(roff ".TH ${title} 1 \"\" \"ccoverlap ${VERSION}\" \"ccoverlap\"\n.SH NAME\n${page} \\- ${what}\n.SH DESCRIPTION\n.nf\n")
  file(READ ${doc} text)
  string(REPLACE "\\" "\\e" text "${text}")
  # A line starting with . or ' would be a roff request: escape it.
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  string(APPEND roff "${text}.fi\n")
  file(WRITE ${OUT_DIR}/${page}.1.tmp "${roff}")
  file(COPY_FILE ${OUT_DIR}/${page}.1.tmp ${OUT_DIR}/${page}.1 ONLY_IF_DIFFERENT)
  file(REMOVE ${OUT_DIR}/${page}.1.tmp)
endforeach()
