#!/usr/bin/env bash
# What tracing costs, from one run: every case (a row) is measured under every
# configuration (a column) -- nothing attached, the floor (empty programs on
# loopwatch's tracepoints, CPU sampling and uprobes) and loopwatch itself --
# in interleaved rounds (none, floor, loopwatch, none, ...), and the table
# shows per-cell medians and their ratios, so slow drift on a busy machine
# lands on all columns alike.
#
# Rows: syscalls on loop and other threads; context switches (thread round
# trips) of a loop thread idling in its wait call, of one blocking inside an
# iteration, and of threads that are no loop; CPU work inside a busy period
# (what sampling with stack capture costs); calls of a probed function, and
# json.dumps in Debian's python3 (what a uprobe pair costs per call); the
# blocking round trip and the busy loop again with a Python loop thread, whose
# every captured stack also walks CPython's frame chain: the rows' lw-floor
# difference is that walk, derived below the table. Then the V8 walk, A/B on one
# node process with the walk switched on and off (nodewalk.py).
#
# After the table, the cost of the home/nested decision per wait call, from
# the kernel's own per-program counters (bpf_stats, on while a descriptor of
# ours holds it): the wait-call programs' run time per run, for loops whose
# handlers make nested waits, under loopwatch and under loopwatch
# --no-nested-waits (every wait ends an iteration, no decision). Wall-clock
# rows on a shared host move by more than these tens of ns; the counters do not.
#
# A round during which anyone else had tracing BPF programs loaded (another
# loopwatch, a test run) is discarded and run again: their programs run on
# our syscalls too, so no column of that round measured what it says.
#
# Usage: run.sh --loopwatch PATH --bin DIR [--rounds N] [--iters N] [--cpu N]
#   --bin     where `make -C tools/bench build` put floor and syscost
#   --rounds  clean rounds wanted (default 7, env BENCH_ROUNDS)
#   --iters   syscalls per measurement of the syscall rows (default 1000000,
#             env BENCH_ITERS); the other rows have fixed counts (*_CALLS)
#   --cpu     CPU the workloads are pinned to (default: the last one)
#   --stats-rounds  rounds of the bpf_stats section (default 5, env
#             BENCH_STATS_ROUNDS; 0 leaves it out)
#
# Adding a row: write case__NAME (gets the column's name, prints ns per call,
# runs pinned), add NAME to CASES, its label to CASE_LABEL and what it
# measures to CASE_DOC. Adding a column: config__start_NAME and
# config__stop_NAME (tracer__start/tracer__stop for a background tracer) and
# NAME in CONFIGS; the ratio columns compare floor to none and loopwatch to
# none and floor.
set -euo pipefail

LOOPWATCH=
BIN=
ROUNDS=${BENCH_ROUNDS:-7}
ITERS=${BENCH_ITERS:-1000000}
STATS_ROUNDS=${BENCH_STATS_ROUNDS:-5}
NCPU=$(nproc)
CPU=$((NCPU - 1))
# retries of discarded rounds stop here, so a busy machine still ends the run
BUDGET_S=90
# a tracer that is never stopped (driver killed) still goes away on its own
TRACER_MAX_S=300
# perf's cpu-clock rate, loopwatch's and the floor's alike: a steady rate the busy
# rows can count per sample (the default tick's is costed by contended.py)
SAMPLE_HZ=997

while [ $# -gt 0 ]; do
	case "$1" in
	--loopwatch) LOOPWATCH=$2; shift 2 ;;
	--bin) BIN=$2; shift 2 ;;
	--rounds) ROUNDS=$2; shift 2 ;;
	--iters) ITERS=$2; shift 2 ;;
	--cpu) CPU=$2; shift 2 ;;
	--stats-rounds) STATS_ROUNDS=$2; shift 2 ;;
	*) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

die() {
	echo "run.sh: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (CAP_BPF and CAP_PERFMON to attach tracepoints)"
[ -x "$LOOPWATCH" ] || die "no loopwatch binary at '$LOOPWATCH' (use make bench)"
if [ ! -x "$BIN/floor" ] || [ ! -x "$BIN/syscost" ]; then
	die "no floor/syscost in '$BIN'"
fi
command -v taskset >/dev/null || die "taskset (util-linux) is needed to pin the workloads"
command -v bpftool >/dev/null || die "bpftool is needed to see other tracers"

# ---- cases: rows of the table ------------------------------------------------

HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=/usr/bin/python3
# Per measurement, for rows slower than a syscall: each takes ~0.3-0.5 s.
PINGPONG_CALLS=40000
BUSY_CALLS=200000
PROBE_CALLS=20000
PY_CALLS=20000
PY_PINGPONG_CALLS=20000
PY_BUSY_CALLS=100000
# Python frames under the blocking read: pyloop.py's own 5, and the walk's
# bound (LW_PY_MAX_DEPTH), 59 calls deeper
PY_FRAMES=5
PY_FRAMES_DEEP=64

CASES=(getppid epoll0 loop_getppid pingpong loop_pingpong loop_pingpong_block loop_busy
	probe probe_sstep py_json py_block py_block_deep py_busy)
declare -A CASE_LABEL=(
	[getppid]="getppid, non-loop thread"
	[epoll0]="epoll_wait(0), loop thread"
	[loop_getppid]="getppid, loop thread"
	[pingpong]="round trip, non-loop threads"
	[loop_pingpong]="round trip, loop idle in epoll_wait"
	[loop_pingpong_block]="round trip, loop blocks in read()"
	[loop_busy]="1 us CPU work + irqs, loop busy"
	[probe]="probed call, push entry"
	[probe_sstep]="probed call, single-stepped entry"
	[py_json]="python3 json.dumps, loop thread"
	[py_block]="round trip, python3 blocks, $PY_FRAMES frames"
	[py_block_deep]="round trip, python3 blocks, $PY_FRAMES_DEEP frames"
	[py_busy]="1 us python3 work + irqs, loop busy"
)
declare -A CASE_DOC=(
	[getppid]="a syscall no program watches, on a thread that never waits"
	[epoll0]="one loop iteration: the wait-call tracepoints' programs, entry and exit"
	[loop_getppid]="a syscall no program watches, on a loop thread"
	[pingpong]="two SCHED_BATCH threads on one CPU trading an eventfd, so neither
		preempts the other: 2 sched_switch + 2 sched_wakeup per round trip, neither
		thread a loop (what loopwatch's scheduler programs cost everybody else)"
	[loop_pingpong]="the same, one thread a loop that sleeps in epoll_wait for the
		answer: every round trip one iteration, switched out and in while idle"
	[loop_pingpong_block]="the same, the loop thread sleeps in a blocking read()
		inside its iteration: every round trip a blocked syscall timed from the
		scheduler, with its stack and fd path captured"
	[loop_busy]="ns that 1000 ns of CPU work takes counting interrupts, in 5 ms busy
		periods of a loop thread (under the stall threshold, so every 997 Hz
		cpu-clock sample takes loopwatch's stack capture; floor: the same samples,
		empty program). Timed unit by unit: the excess over the median unit, 0.5 to
		100 us, is interrupt time; longer gaps (the host taking the vCPU) are left
		out"
	[probe]="a ~300 ns function called in a loop; floor: empty uprobe+uretprobe on
		it; loopwatch: --probe syscost:bench_probe_target. It starts with a push,
		which the kernel emulates"
	[probe_sstep]="the same function entered by a mov, which the kernel must
		single-step out of line: a second trap per hit"
	[py_json]="Debian /usr/bin/python3 json.dumps of a 5-key dict, after one
		select(); floor: empty uprobe pair on _json's encoder_call; loopwatch:
		its built-in json.dumps probe (attached once it sees the loop)"
	[py_block]="the C round trip that blocks in read(), with a Debian /usr/bin/python3
		loop thread (pyloop.py block): it reads a child process's answer with a
		blocking os.read() of an eventfd between two epoll waits, $PY_FRAMES Python
		frames deep, so each capture also walks the frame chain. Under loopwatch
		the timing starts once the process is in its py_procs map"
	[py_block_deep]="the same, $((PY_FRAMES_DEEP - PY_FRAMES)) Python calls deeper:
		$PY_FRAMES_DEEP frames, as many as the walk reads"
	[py_busy]="the C busy row's measure, with pure-Python work units of ~2 us
		(pyloop.py busy): every cpu-clock sample also walks the frame chain, 6
		frames deep"
)

# workloads run on their own CPU so the tracer's userspace never preempts them
pinned() {
	taskset -c "$CPU" "$@"
}

case__getppid() {
	pinned "$BIN/syscost" getppid "$ITERS"
}

case__epoll0() {
	pinned "$BIN/syscost" epoll0 "$ITERS"
}

case__loop_getppid() {
	pinned "$BIN/syscost" loop-getppid "$ITERS"
}

case__pingpong() {
	pinned "$BIN/syscost" pingpong "$PINGPONG_CALLS"
}

case__loop_pingpong() {
	pinned "$BIN/syscost" loop-pingpong "$PINGPONG_CALLS"
}

case__loop_pingpong_block() {
	pinned "$BIN/syscost" loop-pingpong-block "$PINGPONG_CALLS"
}

case__loop_busy() {
	pinned "$BIN/syscost" loop-busy "$BUSY_CALLS"
}

case__probe() {
	pinned "$BIN/syscost" probe "$PROBE_CALLS"
}

case__probe_sstep() {
	pinned "$BIN/syscost" probe-sstep "$PROBE_CALLS"
}

# loopwatch probes the process only seconds after it became a loop: wait for that
case__py_json() {
	local wait=--wait-probe

	[ "$1" != none ] || wait=
	pinned "$PYTHON" "$HERE/pyjson.py" "$PY_CALLS" $wait
}

# a CPython loop thread: under loopwatch, timed once its frames are walked
py_loop() {
	local config=$1 wait=--wait-walk

	shift
	[ "$config" = loopwatch ] || wait=
	pinned "$PYTHON" "$HERE/pyloop.py" "$@" $wait
}

case__py_block() {
	py_loop "$1" block "$PY_PINGPONG_CALLS"
}

case__py_block_deep() {
	py_loop "$1" block "$PY_PINGPONG_CALLS" --depth $((PY_FRAMES_DEEP - PY_FRAMES))
}

case__py_busy() {
	py_loop "$1" busy "$PY_BUSY_CALLS"
}

# The functions both tracers probe: syscost's by symbol, Debian python3's
# stripped _json where loopwatch finds encoder_call (its --list-probes says).
PROBE_SPECS=("$BIN/syscost:bench_probe_target" "$BIN/syscost:bench_probe_target_sstep")
LOOPWATCH_PROBES=(--probe "$BIN/syscost:bench_probe_target=bench"
	--probe "$BIN/syscost:bench_probe_target_sstep=bench-sstep")

py_json__locate() {
	local so off

	[ -x "$PYTHON" ] || return 1
	so=$("$PYTHON" -c 'import _json; print(_json.__file__)' 2>/dev/null) || return 1
	# "  json.dumps  cpython  /usr/lib/python3.11/lib-dynload/_json...so+0x4c40 (how found)"
	off=$("$LOOPWATCH" --list-probes 2>/dev/null | awk -v so="$so" '
		$1 == "json.dumps" && index($3, so "+0x") == 1 {
			sub(/.*\+/, "", $3); print $3; exit
		}')
	[ -n "$off" ] || return 1
	echo "$so:$off"
}

cases__drop() {
	local c kept=()

	for c in "${CASES[@]}"; do
		[[ " $* " == *" $c "* ]] || kept+=("$c")
	done
	CASES=("${kept[@]}")
}

if py_json_spec=$(py_json__locate); then
	PROBE_SPECS+=("$py_json_spec")
else
	echo "run.sh: no json.dumps probe for $PYTHON here: its row is left out" >&2
	cases__drop py_json
fi
if [ ! -x "$PYTHON" ]; then
	echo "run.sh: no $PYTHON here: the python3 loop rows are left out" >&2
	cases__drop py_block py_block_deep py_busy
fi

# ---- other tracers -----------------------------------------------------------

OWN_IDS=$BIN/own.ids

# ids of the tracing programs loaded right now, one a line, sorted
prog__ids() {
	local types='tracepoint|raw_tracepoint|tracing|kprobe|perf_event'

	bpftool prog show 2>/dev/null |
		awk -F: -v re="^ ($types) " '$2 ~ re { print $1 }' | sort
}

foreign__present() {
	prog__ids | comm -23 - "$OWN_IDS" | grep -q .
}

# give someone else's short test run a moment to end before a round starts
foreign__settle() {
	local i

	for ((i = 0; i < 30; i++)); do
		foreign__present || return 0
		sleep 0.1
	done
	return 1
}

# ---- configurations: columns of the table ------------------------------------

CONFIGS=(none floor loopwatch)
TRACER_PID=
TRACER_ERR=$BIN/tracer.err

# keep the tracer's userspace off the measured CPU when there is another one
tracer__cpu() {
	if [ "$NCPU" -gt 1 ] && [ "$CPU" != 0 ]; then
		echo 0
	else
		echo $((NCPU - 1))
	fi
}

# The programs the tracer holds open, by their fds: another tracer started
# meanwhile (someone's test run) is not counted as ours.
tracer__own_ids() {
	awk '$1 == "prog_id:" { print $2 }' /proc/"$TRACER_PID"/fdinfo/* 2>/dev/null | sort -u
}

# start a tracer in the background and wait until it says it is attached
tracer__start() {
	local i

	: >"$TRACER_ERR"
	taskset -c "$(tracer__cpu)" "$@" >/dev/null 2>"$TRACER_ERR" &
	TRACER_PID=$!
	for ((i = 0; i < 200; i++)); do
		if grep -qE '^[a-z]+: tracing ' "$TRACER_ERR"; then
			tracer__own_ids >"$OWN_IDS"
			return 0
		fi
		if ! kill -0 "$TRACER_PID" 2>/dev/null; then
			TRACER_PID=
			die "$1 exited before attaching: $(cat "$TRACER_ERR")"
		fi
		sleep 0.05
	done
	die "$1 did not attach within 10 s: $(cat "$TRACER_ERR")"
}

# Detached once the tracer has exited; its programs are freed up to a few
# seconds later (loopwatch leaves the detaching to a child that outlives it),
# and until then they would look like someone else's.
tracer__stop() {
	local pid=$TRACER_PID i

	[ -n "$pid" ] || return 0
	TRACER_PID=
	# a tracer that died mid-measurement leaves a column that measured nothing
	kill -TERM "$pid" 2>/dev/null || die "tracer exited early: $(cat "$TRACER_ERR")"
	wait "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		prog__ids | comm -12 - "$OWN_IDS" | grep -q . || break
		sleep 0.05
	done
	: >"$OWN_IDS"
}
trap tracer__stop EXIT

config__start_none() {
	:
}

config__stop_none() {
	:
}

config__start_floor() {
	local spec args=()

	for spec in "${PROBE_SPECS[@]}"; do
		args+=(-u "$spec")
	done
	tracer__start "$BIN/floor" -d "$TRACER_MAX_S" -F "$SAMPLE_HZ" "${args[@]}"
}

config__stop_floor() {
	tracer__stop
}

# as deployed (built-in probes: the python row needs them) plus syscost's functions
config__start_loopwatch() {
	tracer__start "$LOOPWATCH" --json -d "$TRACER_MAX_S" --sample-hz "$SAMPLE_HZ" \
		"${LOOPWATCH_PROBES[@]}"
}

config__stop_loopwatch() {
	tracer__stop
}

# ---- measurement -------------------------------------------------------------

SAMPLES=$BIN/samples.tsv
printf 'round\tclean\tconfig\tcase\tns_per_call\n' >"$SAMPLES"
: >"$OWN_IDS"
start_s=$SECONDS
clean_rounds=0
round=0
while [ "$clean_rounds" -lt "$ROUNDS" ]; do
	if [ "$round" -ge "$ROUNDS" ] && [ $((SECONDS - start_s)) -ge "$BUDGET_S" ]; then
		echo "run.sh: out of time after $round rounds" >&2
		break
	fi
	round=$((round + 1))
	clean=1
	foreign__settle || clean=0
	printf 'round %d (%d/%d clean):' "$round" "$clean_rounds" "$ROUNDS" >&2
	for config in "${CONFIGS[@]}"; do
		printf ' %s' "$config" >&2
		"config__start_$config"
		if foreign__present; then clean=0; fi
		for c in "${CASES[@]}"; do
			ns=$("case__$c" "$config") || die "case $c failed under $config"
			printf '%d\t%d\t%s\t%s\t%s\n' "$round" "$clean" "$config" "$c" "$ns" \
				>>"$SAMPLES"
		done
		if foreign__present; then clean=0; fi
		"config__stop_$config"
	done
	if [ "$clean" = 1 ]; then
		clean_rounds=$((clean_rounds + 1))
		echo >&2
	else
		# a round turns dirty late: mark all its samples, not just the last ones
		awk -F'\t' -v OFS='\t' -v r="$round" '$1 == r { $2 = 0 } 1' "$SAMPLES" \
			>"$SAMPLES.tmp" && mv "$SAMPLES.tmp" "$SAMPLES"
		echo " (discarded: someone else's tracing BPF programs were loaded)" >&2
	fi
done

# ---- the home/nested decision, from the kernel's counters --------------------

# syscost workloads, each run under both tracers: "label|program:role ...", the
# wait-call programs each call runs and what the wait is
STATS_ITERS=200000
STATS_CASES=(epoll0 ppoll0 nested-poll0 nested-epoll0 client-poll0)
declare -A STATS_CASE=(
	[epoll0]="epoll loop: home epoll_wait(0)|wait_enter:home wait_exit:home"
	[ppoll0]="ppoll loop: home ppoll(2 fds, 0)|wait_enter:home wait_exit:home"
	[nested-poll0]="epoll loop, handler polls a pipe|wait_enter:home+nested
		wait_exit:home+nested"
	[nested-epoll0]="epoll loop, handler epoll_waits|wait_enter:home+nested
		wait_exit:home+nested"
	[client-poll0]="no loop: poll(one socket, 0)|wait_enter:call-style wait_exit:call-style"
)
STATS=$BIN/progstats.tsv
printf 'round\tconfig\tcase\tprog\truns\tns\n' >"$STATS"

# per program name: runs and run time, of our own programs, now
stats__snapshot() {
	"$PYTHON" "$HERE/progstats.py" "$OWN_IDS"
}

# one case under the running tracer: the counters' difference, as rows of $STATS
stats__case() {
	local round=$1 config=$2 c=$3 before=$BIN/stats.before

	stats__snapshot >"$before"
	pinned "$BIN/syscost" "$c" "$STATS_ITERS" >/dev/null || die "case $c failed"
	stats__snapshot | awk -v r="$round" -v cfg="$config" -v c="$c" -v OFS='\t' '
		NR == FNR { runs[$1] = $2; ns[$1] = $3; next }
		$2 > runs[$1] { print r, cfg, c, $1, $2 - runs[$1], $3 - ns[$1] }' "$before" - \
		>>"$STATS"
}

# Run time is counted while someone holds a BPF_ENABLE_STATS descriptor: a
# holder of ours, for the section, so kernel.bpf_stats_enabled (which other
# people may rely on) is never written.
STATS_HOLDER=
stats__restore() {
	[ -z "$STATS_HOLDER" ] || kill "$STATS_HOLDER" 2>/dev/null || true
	STATS_HOLDER=
}

if [ "$STATS_ROUNDS" -gt 0 ]; then
	trap 'tracer__stop; stats__restore' EXIT
	# held until we kill it, or until this script is gone (it then belongs to init)
	"$PYTHON" -c 'import os, sys, time; sys.path.insert(0, sys.argv[1]); import bpfstats
bpfstats.enable(); print("on", flush=True)
while os.getppid() == int(sys.argv[2]): time.sleep(0.5)' "$HERE" $$ > "$BIN/stats.holder" &
	STATS_HOLDER=$!
	until grep -q on "$BIN/stats.holder" 2>/dev/null; do
		kill -0 "$STATS_HOLDER" 2>/dev/null || die "cannot switch bpf_stats on"
		sleep 0.05
	done
	for ((r = 1; r <= STATS_ROUNDS; r++)); do
		printf 'bpf_stats round %d/%d:' "$r" "$STATS_ROUNDS" >&2
		for config in loopwatch flat; do
			printf ' %s' "$config" >&2
			flags=()
			[ "$config" = flat ] && flags=(--no-nested-waits)
			tracer__start "$LOOPWATCH" --json -d "$TRACER_MAX_S" --sample-hz "$SAMPLE_HZ" \
				"${flags[@]}"
			for c in "${STATS_CASES[@]}"; do
				stats__case "$r" "$config" "$c"
			done
			tracer__stop
		done
		echo >&2
	done
	stats__restore
fi

# ---- report ------------------------------------------------------------------

# with no clean round at all, report what there is rather than nothing
use_clean=1
[ "$clean_rounds" -gt 0 ] || use_clean=0

# the samples of one cell (config, case), ascending
cell__samples() {
	awk -F'\t' -v cfg="$1" -v c="$2" -v only_clean="$use_clean" \
		'NR > 1 && $3 == cfg && $4 == c && ($2 == 1 || !only_clean) { print $5 }' \
		"$SAMPLES" | sort -g
}

cell__median() {
	cell__samples "$1" "$2" | awk '{ v[NR] = $1 } END {
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# min..max of one cell: how far a single round strays
cell__range() {
	cell__samples "$1" "$2" |
		awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f..%.0f", lo, hi }'
}

table__row() {
	printf '%-38s | %9s | %9s | %9s | %10s | %9s | %9s | %9s\n' "$@"
}

# what loopwatch adds over the floor in one row, in ns
cell__added() {
	awk -v a="$(cell__median loopwatch "$1")" -v b="$(cell__median floor "$1")" \
		'BEGIN { print a - b }'
}

has_case() {
	[[ " ${CASES[*]} " == *" $1 "* ]]
}

# The Python walk is what a python3 row adds over its C twin: the same
# captures of the same kernel objects, plus python__capture(). Per frame from
# the two depths; a cpu-clock sample runs the same walk, and its work rows
# can check it only coarsely: 1 ns more per 1000 ns of work is 1e6/SAMPLE_HZ
# ns more per sample.
py_walk__report() {
	local busy_py=0 busy_c=0 busy=0

	has_case py_block && has_case loop_pingpong_block || return 0
	if has_case py_busy && has_case loop_busy; then
		busy=1
		busy_py=$(cell__added py_busy)
		busy_c=$(cell__added loop_busy)
	fi
	echo
	echo "Python frame walk per captured stack (lw-floor of a python3 row minus its C row's):"
	awk -v c="$(cell__added loop_pingpong_block)" -v p="$(cell__added py_block)" \
		-v pd="$(cell__added py_block_deep)" -v f="$PY_FRAMES" -v fd="$PY_FRAMES_DEEP" \
		-v busy="$busy" -v bp="$busy_py" -v bc="$busy_c" -v hz="$SAMPLE_HZ" 'BEGIN {
		per = (pd - p) / (fd - f)
		fixed = p - c - f * per
		printf "  blocking read, %2d frames    %+6.0f ns\n", f, p - c
		printf "  blocking read, %2d frames    %+6.0f ns\n", fd, pd - c
		printf "  so a stack                 %+6.0f ns, plus %+.0f ns a frame\n", fixed, per
		if (!busy)
			exit
		printf "  cpu-clock sample, 6 frames  %+6.0f ns by that;", fixed + 6 * per
		printf " the busy rows say %+.0f ns\n", (bp - bc) * 1e6 / hz
		printf "    (%+.1f ns per 1000 ns of work, where 1 ns is %.0f ns a sample:", \
			bp - bc, 1e6 / hz
		print " see their spread)"
	}'
}

ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'
}

echo
printf '%d clean rounds (%d discarded), CPU %s, took %d s\n' \
	"$clean_rounds" $((round - clean_rounds)) "$CPU" $((SECONDS - start_s))
printf 'ns per call, round trip or work unit, as the row says (medians over rounds);\n'
printf 'per measurement: %d syscalls, %d round trips, %d work units, %d probed calls,' \
	"$ITERS" "$PINGPONG_CALLS" "$BUSY_CALLS" "$PROBE_CALLS"
printf ' %d json.dumps,\n%d python3 round trips, %d python3 work units\n\n' "$PY_CALLS" \
	"$PY_PINGPONG_CALLS" "$PY_BUSY_CALLS"
table__row workload "none" "floor" "loopwatch" "floor/none" "lw/none" "lw/floor" \
	"lw-floor"
table__row | tr ' ' '-' | sed 's/|/+/g'
for c in "${CASES[@]}"; do
	none=$(cell__median none "$c")
	floor=$(cell__median floor "$c")
	lw=$(cell__median loopwatch "$c")
	table__row "${CASE_LABEL[$c]}" "$(printf %.1f "$none")" "$(printf %.1f "$floor")" \
		"$(printf %.1f "$lw")" "$(ratio "$floor" "$none")" "$(ratio "$lw" "$none")" \
		"$(ratio "$lw" "$floor")" \
		"$(awk -v a="$lw" -v b="$floor" 'BEGIN { printf "%+.1f", a - b }')"
done

py_walk__report

# The V8 walk: A/B on one node process, the walk switched on and off (nodewalk.py)
if [ -x /usr/bin/node ]; then
	echo
	"$HERE/nodewalk.py" --loopwatch "$LOOPWATCH" --node /usr/bin/node ||
		echo "run.sh: the V8 walk could not be measured" >&2
fi

echo
echo "rows:"
for c in "${CASES[@]}"; do
	printf '  %s: %s\n' "${CASE_LABEL[$c]}" "$(tr -s ' \t\n' ' ' <<<"${CASE_DOC[$c]}")" |
		fold -s -w 96 | sed -e 's/ *$//' -e '2,$s/^/      /'
done

echo
echo "spread (min..max over the rounds used):"
for c in "${CASES[@]}"; do
	printf '  %-38s' "${CASE_LABEL[$c]}"
	for config in "${CONFIGS[@]}"; do
		printf '  %s %s' "$config" "$(cell__range "$config" "$c")"
	done
	echo
done
echo "samples: $SAMPLES"
if [ "$use_clean" = 0 ]; then
	echo "warning: someone else's tracing BPF programs were loaded in every round:" \
		"these numbers include their cost"
elif [ "$clean_rounds" -lt "$ROUNDS" ]; then
	echo "warning: only $clean_rounds of $ROUNDS clean rounds fit in the time budget:" \
		"medians of few rounds"
fi

# The decision's cost: ns per run of each wait-call program, median over the
# rounds, with the decision (loopwatch) and without (--no-nested-waits). The
# runs beyond what the case makes are other processes' wait calls on the same
# programs, said as a share.
stats__report() {
	local c p prog role expected

	[ "$STATS_ROUNDS" -gt 0 ] || return 0
	echo
	echo "The home/nested decision per wait call (bpf_stats: run_time_ns / run_cnt of the"
	echo "wait-call programs, one for every entry and one for every exit, median of" \
		"$STATS_ROUNDS rounds of $STATS_ITERS calls; flat: --no-nested-waits):"
	printf '%-34s | %-16s | %-12s | %8s | %8s | %8s | %7s\n' case program "wait is" \
		"lw ns" "flat ns" "decision" foreign
	printf '%-34s-+-%-16s-+-%-12s-+-%8s-+-%8s-+-%8s-+-%7s\n' | tr ' ' '-'
	for c in "${STATS_CASES[@]}"; do
		for p in ${STATS_CASE[$c]#*|}; do
			prog=${p%%:*}
			role=${p#*:}
			# syscost warms up with a tenth more calls than it times
			expected=$((STATS_ITERS * 11 / 10))
			[ "$role" = home+nested ] && expected=$((2 * expected))
			awk -F'\t' -v c="$c" -v p="$prog" -v role="$role" -v label="${STATS_CASE[$c]%%|*}" \
				-v want="$expected" '
				function median(a, n,   i, j, t) {
					for (i = 2; i <= n; i++)
						for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
							t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
						}
					return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
				}
				NR > 1 && $3 == c && $4 == p {
					if ($2 == "loopwatch")
						lw[++nl] = $6 / $5
					else
						fa[++nf] = $6 / $5
					foreign[++nfo] = $5 > want ? ($5 - want) / $5 : 0
				}
				END {
					if (!nl || !nf) { printf "%-34s | %-16s | missing\n", label, p; exit }
					a = median(lw, nl); b = median(fa, nf)
					printf "%-34s | %-16s | %-12s | %8.1f | %8.1f | %+8.1f | %6.1f%%\n",
						label, p, role, a, b, a - b, 100 * median(foreign, nfo)
				}' "$STATS"
		done
	done
	echo "samples: $STATS"
}

stats__report
