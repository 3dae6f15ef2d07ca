# loopwatch: `make` builds build/loopwatch, `make run` starts the system-wide
# monitor, `make test` runs every test (as root, with real BPF), `make bench`
# measures what tracing costs.
OUT := build
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

CFLAGS ?= -O2 -g
# SAN: sanitizer flags for userspace (make check-sanitize sets them)
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -I$(OUT) -Ibpf -Iuserspace $(SAN)
# BPF_DEFS: -D flags for the BPF objects (make bench's timing-only build sets one)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(OUT) -Ibpf -Wall -Werror $(BPF_DEFS)
include tools/libs.mk
LDLIBS := $(LOOPWATCH_LDLIBS)

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
BPF_HDRS := $(wildcard bpf/*.h bpf/runtimes/*.h bpf/runtimes/*/*.h)
# userspace/<folder>/<file>.c: one folder per stage of the pipeline (userspace/README.md);
# userspace/runtimes/<runtime>/: one folder per runtime (userspace/runtimes/README.md)
USER_SRCS := $(filter-out userspace/main.c,$(wildcard userspace/*.c userspace/*/*.c \
	userspace/runtimes/*/*.c))
USER_OBJS := $(patsubst userspace/%.c,$(OUT)/obj/%.o,$(USER_SRCS))
USER_HDRS := $(wildcard userspace/*.h userspace/*/*.h userspace/runtimes/*/*.h)
UNIT_TESTS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(wildcard tests/unit/*.c))
FUZZERS := $(patsubst tests/fuzz/%.c,$(OUT)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
WORKLOADS := $(patsubst tests/workloads/%.c,$(OUT)/workloads/%,$(wildcard tests/workloads/*.c)) \
	$(OUT)/workloads/chainwork_split $(OUT)/workloads/chainwork_minidebug

.PHONY: all run test bench clean deps test-deps check-sanitize sanitize-build test-kernels docs \
	workloads bench-kernels

all: $(OUT)/loopwatch

$(OUT)/.deps: tools/deps.sh
	@mkdir -p $(OUT)
	tools/deps.sh build
	@touch $@

$(OUT)/.test-deps: tools/deps.sh
	@mkdir -p $(OUT)
	OUT=$(OUT) tools/deps.sh test
	@touch $@

$(OUT)/.bench-deps: tools/deps.sh
	@mkdir -p $(OUT)
	tools/deps.sh bench
	@touch $@

deps: $(OUT)/.deps
test-deps: $(OUT)/.test-deps

# generated from the running kernel's BTF: CO-RE relocates against it at load
$(OUT)/vmlinux.h: | $(OUT)/.deps
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) $(OUT)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/loopwatch.bpf.o: $(BPF_OBJS)
	$(BPFTOOL) gen object $@ $^

$(OUT)/loopwatch.skel.h: $(OUT)/loopwatch.bpf.o
	$(BPFTOOL) gen skeleton $< name loopwatch_bpf > $@.tmp && mv $@.tmp $@

# syscall names, as designated initializers, from the installed kernel headers
$(OUT)/syscall_names.h: | $(OUT)/.deps
	echo '#include <asm/unistd_64.h>' | $(CC) -E -dM - | \
		awk '/^#define __NR_[a-z0-9_]+ [0-9]+$$/ { sub("__NR_", "", $$2); \
			printf "[%s] = \"%s\",\n", $$3, $$2 }' | sort -t[ -k2 -n > $@.tmp
	mv $@.tmp $@

$(OUT)/obj/%.o: userspace/%.c $(USER_HDRS) $(BPF_HDRS) $(OUT)/loopwatch.skel.h $(OUT)/syscall_names.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/loopwatch: $(OUT)/obj/main.o $(USER_OBJS)
	$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

$(OUT)/tests/%: tests/unit/%.c tests/unit/*.h $(USER_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests/unit $< $(USER_OBJS) $(LDLIBS) -ldl -o $@

# fuzz targets of the parsers of traced processes' data, with a small mutation driver
$(OUT)/fuzz/%: tests/fuzz/%.c tests/fuzz/driver.c $(USER_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< tests/fuzz/driver.c $(USER_OBJS) $(LDLIBS) -o $@

# the JSON libraries the probe tests trace (test packages)
$(OUT)/workloads/json_c: LDLIBS_WORKLOAD := -ljson-c
$(OUT)/workloads/json_jansson: LDLIBS_WORKLOAD := -ljansson
$(OUT)/workloads/json_cjson: LDLIBS_WORKLOAD := -lcjson

# the unwinding tests: the same chain of calls without and with frame pointers
$(OUT)/workloads/chainwork: CFLAGS_WORKLOAD := -O2 -fomit-frame-pointer
$(OUT)/workloads/chainwork_fp: CFLAGS_WORKLOAD := -O2 -fno-omit-frame-pointer
$(OUT)/workloads/jitwork: CFLAGS_WORKLOAD := -O2 -fomit-frame-pointer
$(OUT)/workloads/chainwork_fp: tests/workloads/chainwork.c
CFLAGS_WORKLOAD ?= -O1 -fno-omit-frame-pointer -fno-inline

# chainwork as a stripped distribution binary may be: its CFI only in .debug_frame, that and
# its symbols in a separate, compressed debug file found through .gnu_debuglink
$(OUT)/workloads/chainwork_split: tests/workloads/chainwork.c tests/workloads/*.h | $(OUT)/.test-deps
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -g -O2 -fomit-frame-pointer -fno-asynchronous-unwind-tables -Wall -Wextra \
		-Werror -Itests/workloads $< -o $@.full -lpthread
	objcopy --only-keep-debug --compress-debug-sections=zlib $@.full $@.debug
	objcopy --strip-all --add-gnu-debuglink=$@.debug $@.full $@
	rm -f $@.full

# chainwork as Fedora ships binaries: stripped, its chain static (not in .dynsym, which
# -rdynamic fills with the rest), their symbols only in .gnu_debugdata (MiniDebugInfo: an
# xz'd ELF of the function symbols .dynsym lacks, made the way find-debuginfo makes it);
# the section's bytes kept beside it, fuzz_minidebug's seed
$(OUT)/workloads/chainwork_minidebug: tests/workloads/chainwork.c tests/workloads/*.h | \
		$(OUT)/.test-deps
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -g -O2 -fomit-frame-pointer -rdynamic \
		-DCHAIN='static __attribute__((noipa))' -Wall -Wextra -Werror -Itests/workloads $< \
		-o $@.full -lpthread
	nm -D --defined-only --format=posix $@.full | awk '{ print $$1 }' | sort > $@.dynsyms
	nm --defined-only --format=posix $@.full | awk '$$2 ~ /^[Tt]$$/ { print $$1 }' | \
		sort > $@.funcsyms
	comm -13 $@.dynsyms $@.funcsyms > $@.keep
	objcopy --only-keep-debug $@.full $@.mini
	objcopy -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols=$@.keep $@.mini $@.mini.elf
	xz -f $@.mini.elf
	strip --strip-all -R .comment -o $@ $@.full
	objcopy --add-section .gnu_debugdata=$@.mini.elf.xz $@
	mv $@.mini.elf.xz $@.gnu_debugdata
	rm -f $@.full $@.dynsyms $@.funcsyms $@.keep $@.mini

# a shared object of every catalog function's name (the probe-storm test maps copies)
$(OUT)/workloads/catalog_so: tests/workloads/catalog_so.c | $(OUT)/.test-deps
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O1 -shared -fPIC -Wall -Wextra -Werror -Wno-missing-prototypes $< -o $@

$(OUT)/workloads/%: tests/workloads/%.c tests/workloads/*.h | $(OUT)/.test-deps
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -g $(CFLAGS_WORKLOAD) -Wall -Wextra -Werror \
		-Itests/workloads $< -o $@ -lpthread $(LDLIBS_WORKLOAD)

run: $(OUT)/loopwatch
	$(OUT)/loopwatch

# the C workloads of the tests, some of which docs/ runs: $(OUT)/workloads/*
workloads: $(WORKLOADS)

# LOAD=N: N CPU hogs run beside the tests (a loaded host, as CI machines are)
LOAD ?= 0
# the cost guard (tests/e2e/test_cost.py) runs the bench's floor and workloads
test: $(OUT)/loopwatch $(UNIT_TESTS) $(WORKLOADS) $(FUZZERS) $(OUT)/.test-deps
	$(MAKE) -C tools/bench OUT=$(abspath $(OUT)) build
	python3 tests/run.py --build $(OUT) --load $(LOAD)

# ASan + UBSan (gcc's libasan/libubsan): loopwatch, the unit tests and the fuzz
# targets in $(OUT)-san; the unit tests, each fuzz target for FUZZ_SECONDS and a short
# end-to-end subset (hostile input, stalls, Python frames) run against them. ~3 min.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SECONDS ?= 20
# test_hostile: every hostile case (the storms' timing is asserted in the optimized build
# alone: under ASan, reading 180 MB of perf maps or sorting a 1M-symbol table holds
# /healthz past 2 s)
SAN_HOSTILE := test_hostile.test_a_ test_hostile.test_alert test_hostile.test_costly \
	test_hostile.test_decompression test_hostile.test_escape test_hostile.test_exec \
	test_hostile.test_fifos test_hostile.test_file_outputs test_hostile.test_one_thread \
	test_hostile.test_prom_file test_hostile.test_squatters test_hostile.test_uprobe \
	test_hostile.test_unmapping test_hostile.test_an_eh_frame \
	test_hostile.test_many_large_perf_maps test_hostile.test_many_large_symbol
# unit.test_prom is left out: its bounds (16k series expired within 1 s) are for an
# optimized build, and it takes 100 s under ASan
SAN_E2E := unit.test_advice unit.test_arrival unit.test_attribution unit.test_cfi \
	unit.test_demangle unit.test_elfsym unit.test_fleet unit.test_hist unit.test_minidebug \
	unit.test_model unit.test_otlpenc unit.test_perfmap unit.test_procstat unit.test_python \
	unit.test_runtimes unit.test_symbolize unit.test_text \
	$(SAN_HOSTILE) test_loop.test_percentiles test_loop.test_dropped \
	test_stalls.test_no_stall test_python.test_asyncio test_probes.test_pyenv_311
sanitize-build: $(OUT)/loopwatch $(UNIT_TESTS) $(WORKLOADS) $(FUZZERS)

# every fuzz target (fuzz.: tests/run.py knows their seeds), FUZZ_SECONDS each
check-sanitize: $(OUT)/.test-deps
	$(MAKE) OUT=$(OUT)-san SAN="$(SAN_FLAGS)" sanitize-build
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 FUZZ_SECONDS=$(FUZZ_SECONDS) \
		python3 tests/run.py --build $(OUT)-san fuzz. $(SAN_E2E)

# the man page's OPTIONS and docs/flags.md from loopwatch's own table of flags
docs: $(OUT)/loopwatch
	tools/docs.py $(OUT)/loopwatch

# Debian's kernels (bookworm 6.1, trixie 6.12, forky 7.x) booted with virtme-ng under TCG
# over a forky root cached in $(OUT)/kernels, the core end-to-end cases run in each, a
# table printed (tests/kernels/run.sh). Needs root and debootstrap; ~10 min, not in CI.
test-kernels: $(OUT)/loopwatch $(WORKLOADS) $(OUT)/kernels/storage_limit
	OUT=$(abspath $(OUT)) tests/kernels/run.sh

# What the wait hooks cost in the same VM (tests/kernels/bench.py): an unrelated
# process's getppid and a loop's iteration with nothing, empty programs, the syscall
# tracepoint hooks and the fentry hooks, as ratios (TCG's times do not transfer).
# KERNELS=forky by default; ~8 min a kernel.
bench-kernels: $(OUT)/loopwatch $(WORKLOADS) $(OUT)/kernels/storage_limit
	$(MAKE) -C tools/bench build OUT=$(abspath $(OUT))
	OUT=$(abspath $(OUT)) KERNELS="$${KERNELS:-forky}" KERNEL_CASES=bench tests/kernels/run.sh

$(OUT)/kernels/storage_limit: tests/kernels/storage_limit.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror $< -o $@ -lbpf

# and loopwatch again with its timing core alone, which the contended section sets beside it
bench: $(OUT)/loopwatch $(OUT)/workloads/chainwork $(OUT)/.bench-deps
	$(MAKE) OUT=$(OUT)/bench/timing BPF_DEFS=-DLW_TIMING_ONLY=1 $(OUT)/bench/timing/loopwatch
	$(MAKE) -C tools/bench OUT=$(abspath $(OUT))

# --one-file-system: never through a mount test-kernels left in its root
clean:
	rm -rf --one-file-system $(OUT)

# The binary, the systemd unit pointing at it, the Prometheus rules and the man
# page. PREFIX=/usr for a distribution layout; DESTDIR stages a package.
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
UNITDIR ?= $(PREFIX)/lib/systemd/system
MANDIR ?= $(PREFIX)/share/man
RULESDIR ?= $(PREFIX)/share/loopwatch/prometheus

.PHONY: install
install: $(OUT)/loopwatch
	install -D -m 0755 $(OUT)/loopwatch $(DESTDIR)$(SBINDIR)/loopwatch
	sed 's|/usr/local/sbin/loopwatch|$(SBINDIR)/loopwatch|' tools/systemd/loopwatch.service \
		> $(OUT)/loopwatch.service
	install -D -m 0644 $(OUT)/loopwatch.service $(DESTDIR)$(UNITDIR)/loopwatch.service
	install -D -m 0644 tools/prometheus/loopwatch.rules.yml $(DESTDIR)$(RULESDIR)/loopwatch.rules.yml
	install -D -m 0644 tools/prometheus/loopwatch.rules.test.yml \
		$(DESTDIR)$(RULESDIR)/loopwatch.rules.test.yml
	install -D -m 0644 tools/loopwatch.8 $(DESTDIR)$(MANDIR)/man8/loopwatch.8

# A native Debian package of this tree for this machine: $(OUT)/loopwatch_VERSION_ARCH.deb
# (tools/deb/build.sh: built afresh with Debian's hardening flags in $(OUT)/deb)
.PHONY: deb
deb:
	OUT=$(abspath $(OUT)) tools/deb/build.sh
