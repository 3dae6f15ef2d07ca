# The libraries loopwatch's userspace links with: one list for the binary, the
# tests and fuzzers (Makefile) and the benchmarks that link its objects
# (tools/bench/Makefile).
LOOPWATCH_LDLIBS := -lbpf -ldw -lelf -lz -llzma -lncursesw -liberty
